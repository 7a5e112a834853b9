// Evaluation when the replicas are spread over processes (docs/scale-out.md): each process
// takes a range of every replica's columns, so the equality checks, the average and the
// agreement's Gram matrix come from per-process parts; rank 0 gathers the parts and the
// replicas' own evaluations, never a whole replica. Every part is computed as the one-process
// evaluation computes it, so the row is the same bit for bit.
#include "sim/core/evaluation/evaluation.h"

#include <cmath>

#include <torch/torch.h>

#include "sim/dist/process_group.h"
#include "training/metrics.h"
#include "training/replica.h"

namespace testbed {
namespace {

// The tags of one evaluation's messages: each phase takes a fresh range of sequence numbers.
class EvalTags {
 public:
  explicit EvalTags(uint64_t& next) : next_(next) {}
  uint64_t phase(uint64_t size) {
    const uint64_t first = next_;
    next_ += size;
    return first;
  }

 private:
  uint64_t& next_;
};

}  // namespace

EvalRow Evaluator::evaluate_spread(int steps_done, const std::vector<torch::Tensor>& snapshots, ProcessGroup& group,
                                   const ReplicaPlacement& placement, uint64_t& tags) {
  torch::NoGradGuard no_grad;
  torch::Device device(scenario_.device);
  const int n = static_cast<int>(snapshots.size());
  const int world = group.world(), me = group.rank();
  const int64_t d = count_parameters(*model_);
  EvalTags tag(tags);
  const std::string what = "evaluation after step " + std::to_string(steps_done);
  auto receive = [&](torch::Tensor t, int peer, uint64_t sequence) {
    group.receive(t, peer, wire_tag(TagKind::Eval, sequence), what);
    return t;
  };
  auto send = [&](const torch::Tensor& t, int peer, uint64_t sequence) {
    group.send(t, peer, wire_tag(TagKind::Eval, sequence));
  };
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const auto dtype = torch::TensorOptions().dtype(model_->parameters().front().scalar_type());

  // Columns by whole agreement blocks, so that each process's part of the Gram pass is the
  // one-process pass's blocks (the equality checks and the average, element by element, would
  // take any split).
  const int64_t block = agreement_block_columns(n);
  auto columns_of = [&](int p, int64_t length) {
    const int64_t blocks = (length + block - 1) / block;
    const int64_t first = blocks * p / world, last = blocks * (p + 1) / world;
    return std::pair{std::min(length, first * block), std::min(length, last * block)};
  };
  // This process's columns of every replica's `vectors` (its own replicas'; `length` each).
  auto exchange_columns = [&](const std::vector<torch::Tensor>& vectors, int64_t length) {
    const auto [lo, hi] = columns_of(me, length);
    std::vector<torch::Tensor> columns(n);
    const uint64_t seq = tag.phase(static_cast<uint64_t>(n) * world);
    for (int i = 0; i < n; ++i) {
      if (!placement.local(i)) continue;
      for (int p = 0; p < world; ++p) {
        if (p == me) continue;
        const auto [begin, end] = columns_of(p, length);
        send(vectors[i].narrow(0, begin, end - begin).contiguous(), p, seq + static_cast<uint64_t>(i) * world + p);
      }
      columns[i] = vectors[i].narrow(0, lo, hi - lo);
    }
    for (int i = 0; i < n; ++i) {
      if (placement.local(i)) continue;
      columns[i] =
          receive(torch::empty({hi - lo}, dtype), placement.owner(i), seq + static_cast<uint64_t>(i) * world + me);
    }
    return columns;
  };
  const std::vector<torch::Tensor> columns = exchange_columns(snapshots, d);
  // What the agreement compares: the same columns, or (adapters) the trainable ranges' own.
  std::vector<torch::Tensor> trainable(n);
  for (int i = 0; i < n; ++i)
    if (placement.local(i)) trainable[i] = trainable_part(snapshots[i]);
  const int64_t dt = count_parameters(*model_, true);
  const std::vector<torch::Tensor> agreed = dt == d ? columns : exchange_columns(trainable, dt);

  // Each replica's mean, from its own process.
  std::vector<double> means(n);
  {
    const uint64_t seq = tag.phase(static_cast<uint64_t>(n));
    for (int i = 0; i < n; ++i) {
      if (!placement.local(i)) continue;
      means[i] = replica_mean(trainable[i]);
      for (int p = 0; p < world; ++p)
        if (p != me) send(torch::tensor({means[i]}, f64), p, seq + i);
    }
    for (int i = 0; i < n; ++i)
      if (!placement.local(i)) means[i] = receive(torch::empty({1}, f64), placement.owner(i), seq + i).item<double>();
  }
  // The Gram pass, process after process over their columns, as one process goes over all.
  AgreementSums sums;
  {
    const uint64_t seq = tag.phase(2 * static_cast<uint64_t>(world));
    if (me == 0) {
      sums = start_agreement(n);
    } else {
      sums.gram = receive(torch::empty({n, n}, f64), me - 1, seq + 2 * me);
      sums.squared_distance = receive(torch::empty({n}, f64), me - 1, seq + 2 * me + 1);
    }
    add_agreement_columns(sums, agreed, torch::tensor(means, f64).reshape({n, 1}),
                          std::min(block, std::max<int64_t>(dt, 1)));
    const int next = (me + 1) % world;
    send(sums.gram, next, seq + 2 * next);
    send(sums.squared_distance, next, seq + 2 * next + 1);
    if (me == 0) {
      sums.gram = receive(torch::empty({n, n}, f64), world - 1, seq);
      sums.squared_distance = receive(torch::empty({n}, f64), world - 1, seq + 1);
    }
  }
  // Which replica equals its predecessor: equal in every process's columns.
  std::vector<bool> same_as_previous(n, false);
  bool all_same = true;
  {
    auto equal = torch::zeros({n}, torch::kUInt8);
    for (int i = 1; i < n; ++i) equal[i] = static_cast<uint8_t>(torch::equal(columns[i], columns[i - 1]));
    const uint64_t seq = tag.phase(static_cast<uint64_t>(world) * world);
    for (int p = 0; p < world; ++p)
      if (p != me) send(equal, p, seq + static_cast<uint64_t>(me) * world + p);
    for (int p = 0; p < world; ++p) {
      if (p == me) continue;
      equal.logical_and_(receive(torch::empty({n}, torch::kUInt8), p, seq + static_cast<uint64_t>(p) * world + me));
    }
    for (int i = 1; i < n; ++i) {
      same_as_previous[i] = equal[i].item<uint8_t>() != 0;
      all_same = all_same && same_as_previous[i];
    }
  }
  EvalRow row;
  row.step = steps_done;
  // The replicas' own evaluations, each in its process, gathered to rank 0.
  if (!all_same) {
    auto results = torch::full({n, 2}, std::nan(""), f64);
    for (int i = 0; i < n; ++i) {
      if (!placement.local(i) || same_as_previous[i]) continue;
      load_flat_parameters(*model_, snapshots[i]);
      auto result = evaluate(*model_, data_.task, eval_inputs_, eval_targets_, device);
      results[i][0] = result.loss;
      results[i][1] = result.accuracy;
    }
    const uint64_t seq = tag.phase(static_cast<uint64_t>(world));
    if (me != 0) {
      send(results, 0, seq + me);
    } else {
      for (int p = 1; p < world; ++p) {
        auto theirs = receive(torch::empty({n, 2}, f64), p, seq + p);
        for (int i = 0; i < n; ++i)
          if (placement.owner(i) == p) results[i] = theirs[i];
      }
      for (int i = 0; i < n; ++i) {
        if (same_as_previous[i]) {
          row.replica_loss.push_back(row.replica_loss.back());
          row.replica_accuracy.push_back(row.replica_accuracy.back());
        } else {
          row.replica_loss.push_back(results[i][0].item<double>());
          row.replica_accuracy.push_back(results[i][1].item<double>());
        }
      }
    }
  }
  // The average, column range by column range, gathered to rank 0.
  torch::Tensor average;
  if (!all_same) {
    auto sum = columns[0].to(torch::kFloat64);
    for (int i = 1; i < n; ++i) sum.add_(columns[i]);
    auto part = sum.div_(static_cast<double>(n)).to(columns[0].scalar_type());
    const uint64_t seq = tag.phase(static_cast<uint64_t>(world));
    if (me != 0) {
      send(part, 0, seq + me);
    } else {
      std::vector<torch::Tensor> parts{part};
      for (int p = 1; p < world; ++p) {
        const auto [begin, end] = columns_of(p, d);
        parts.push_back(receive(torch::empty({end - begin}, dtype), p, seq + p));
      }
      average = torch::cat(parts);
    }
  } else if (me == 0) {
    average = snapshots[0];
  }
  if (me != 0) return row;  // rank 0 writes the row

  evaluate_average(row, steps_done, average, all_same, static_cast<size_t>(n));
  record_agreement(row, finish_agreement(sums, scenario_.workload.correlation_pairs, pairs_seed(steps_done)));
  return row;
}

}  // namespace testbed
