// Sparse averaging: seeded index choice, one op per exchange, average applied in place.
#include "training/algorithms/sparse_exchange.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <torch/torch.h>

#include "training/algorithms/common.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {
const std::string kTag = "sparse";
const std::string kMaskTag = "sparse_mask";
}  // namespace

torch::Tensor metropolis_mix(const std::vector<std::vector<int>>& neighbours, int node, const CommOp& op) {
  auto weight = [&](size_t j) {
    const int peer = op.peers[j];
    return 1.0 / (1.0 + static_cast<double>(std::max(neighbours[node].size(), neighbours[peer].size())));
  };
  double own = 1.0;
  auto mixed = torch::zeros_like(op.buffer);
  if (op.received_mask.empty()) {
    for (size_t j = 0; j < op.received.size(); ++j) {
      mixed.add_(op.received[j], weight(j));
      own -= weight(j);
    }
    return mixed.add_(op.buffer, own);
  }
  // Some elements were lost: each element mixes the values that arrived, with their weights
  // (own included) renormalised to sum to one.
  auto total = torch::zeros_like(op.buffer);
  for (size_t j = 0; j < op.received.size(); ++j) {
    const auto arrived = op.received_mask[j].to(op.buffer.scalar_type());
    mixed.add_(op.received[j] * arrived, weight(j));
    total.add_(arrived, weight(j));
    own -= weight(j);
  }
  mixed.add_(op.buffer, own);
  return mixed.div_(total.add_(own));
}

torch::Tensor masked_mean(const CommOp& op) {
  auto sum = op.buffer.clone();
  if (op.received_mask.empty()) {
    for (const auto& r : op.received) sum.add_(r);
    return sum.div_(1.0 + static_cast<double>(op.received.size()));
  }
  auto count = torch::ones_like(op.buffer);
  for (size_t j = 0; j < op.received.size(); ++j) {
    const auto arrived = op.received_mask[j].to(op.buffer.scalar_type());
    sum.add_(op.received[j] * arrived);
    count.add_(arrived);
  }
  return sum.div_(count);
}

SparseExchange::SparseExchange(int nodes, uint64_t seed, std::vector<std::vector<int>> neighbours,
                               std::vector<int64_t> tensor_sizes, const SparseExchangeOptions& options)
    : nodes_(nodes),
      seed_(seed),
      neighbours_(std::move(neighbours)),
      tensor_sizes_(std::move(tensor_sizes)),
      options_(options) {
  if (!(options.p > 0 && options.p <= 1)) throw std::invalid_argument("p must be in (0, 1]");
  if (options.interval < 1) throw std::invalid_argument("interval must be >= 1");
  if (options.delay < 0) throw std::invalid_argument("delay must be >= 0");
  d_ = std::accumulate(tensor_sizes_.begin(), tensor_sizes_.end(), int64_t{0});
  // shuffled_sequential's permutation is drawn when first needed (indices): a projection,
  // which only counts, never holds d of them.
}

int64_t SparseExchange::k() const {
  return std::clamp<int64_t>(std::llround(options_.p * static_cast<double>(d_)), 1, d_);
}

int64_t SparseExchange::index_count(int step) const {
  const int64_t round = step / options_.interval;
  switch (options_.selection) {
    case SpartaSelection::Random:
    case SpartaSelection::ShuffledSequential:
    case SpartaSelection::Windows:
      return k();
    case SpartaSelection::Layerwise: {
      const int64_t size = tensor_sizes_[round % static_cast<int64_t>(tensor_sizes_.size())];
      return std::clamp<int64_t>(std::llround(options_.p * static_cast<double>(size)), 1, size);
    }
    case SpartaSelection::Partitioned: {
      // Part r of a permutation of 0..size-1 (its values v with v mod P = r) has this many.
      int64_t count = 0;
      for (int64_t size : tensor_sizes_) {
        const int64_t parts =
            std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(std::ceil(1.0 / options_.p)), size));
        count += (size - 1 - round % parts) / parts + 1;
      }
      return count;
    }
    case SpartaSelection::Bernoulli: {
      // Every node asks for the round's count: drawn once (d draws; a 7B model's take seconds).
      auto [it, fresh] = bernoulli_counts_.try_emplace(round, 0);
      if (fresh)
        it->second =
            bernoulli_count(d_, options_.p, stream_seed(seed_, "sparta_bernoulli", static_cast<uint64_t>(round)));
      return it->second;
    }
  }
  throw std::invalid_argument("unknown sparta selection");
}

// at::rand's CPU kernel draws element after element from the generator, so chunks drawn in turn
// are the one draw of d (tested against it): O(chunk) memory, as a 7B model's d = 6.7e9 needs.
torch::Tensor bernoulli_indices(int64_t d, double p, uint64_t seed, int64_t chunk) {
  auto generator = at::detail::createCPUGenerator(seed);
  std::vector<torch::Tensor> parts;
  for (int64_t begin = 0; begin < d; begin += chunk) {
    const int64_t n = std::min(chunk, d - begin);
    parts.push_back(at::rand({n}, generator).lt(p).nonzero().view(-1) + begin);
  }
  return parts.empty() ? torch::zeros({0}, torch::kInt64) : torch::cat(parts);
}

int64_t bernoulli_count(int64_t d, double p, uint64_t seed, int64_t chunk) {
  auto generator = at::detail::createCPUGenerator(seed);
  int64_t count = 0;
  for (int64_t begin = 0; begin < d; begin += chunk)
    count += at::rand({std::min(chunk, d - begin)}, generator).lt(p).sum().item<int64_t>();
  return count;
}

torch::Tensor SparseExchange::indices(int step) const {
  const int64_t round = step / options_.interval;
  const int64_t k = this->k();
  const SpartaSelection sel = options_.selection;
  if (sel == SpartaSelection::Random)
    return seeded_indices(d_, k, stream_seed(seed_, "sparta", static_cast<uint64_t>(round)));
  if (sel == SpartaSelection::Bernoulli) {
    // Each element with probability p: a count that varies by round, fixed by the seed alone.
    return bernoulli_indices(d_, options_.p, stream_seed(seed_, "sparta_bernoulli", static_cast<uint64_t>(round)));
  }
  if (sel == SpartaSelection::Partitioned) {
    // Per tensor: P = ceil(1/p) parts (at most its size) of a seeded permutation (element j in
    // part perm[j] mod P), one part a round; a new permutation each cycle of P rounds.
    std::vector<int64_t> out;
    int64_t begin = 0;
    for (size_t t = 0; t < tensor_sizes_.size(); ++t) {
      const int64_t size = tensor_sizes_[t];
      const int64_t parts =
          std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(std::ceil(1.0 / options_.p)), size));
      const auto perm = seeded_permutation(
          size, stream_seed(stream_seed(seed_, "sparta_partition", t), "cycle", static_cast<uint64_t>(round / parts)));
      for (int64_t j = 0; j < size; ++j)
        if (perm[j] % parts == round % parts) out.push_back(begin + j);
      begin += size;
    }
    return torch::tensor(out, torch::kInt64);
  }
  if (sel == SpartaSelection::ShuffledSequential || sel == SpartaSelection::Windows) {
    // Consecutive windows of k, wrapping: of a fixed shuffle, or of the parameters in order.
    std::vector<int64_t> out(static_cast<size_t>(k));
    const int64_t start = (round * k) % d_;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t at = (start + i) % d_;
      if (sel == SpartaSelection::ShuffledSequential && order_.empty())
        order_ = seeded_permutation(d_, stream_seed(seed_, "sparta_order"));
      out[i] = sel == SpartaSelection::Windows ? at : order_[at];
    }
    std::sort(out.begin(), out.end());
    return torch::tensor(out, torch::kInt64);
  }
  if (sel == SpartaSelection::Layerwise) {
    // One parameter tensor per round, in turn; a fraction p of it.
    const int t = static_cast<int>(round % static_cast<int64_t>(tensor_sizes_.size()));
    const int64_t begin = std::accumulate(tensor_sizes_.begin(), tensor_sizes_.begin() + t, int64_t{0});
    const int64_t size = tensor_sizes_[t];
    const int64_t kt = std::clamp<int64_t>(std::llround(options_.p * static_cast<double>(size)), 1, size);
    return seeded_indices(size, kt, stream_seed(seed_, "sparta", static_cast<uint64_t>(round))) + begin;
  }
  throw std::invalid_argument("unknown sparta selection");
}

void SparseExchange::issue(int node, int step, Replica& replica, std::vector<CommOp>& comm) {
  if ((step + 1) % options_.interval != 0) return;
  if (broadcasts_mask()) {
    // Node 0 draws the indices; the others learn them from its mask, one byte an element.
    auto mask = torch::zeros({d_});
    if (node == 0) mask.index_fill_(0, indices(step), 1.0);
    comm.push_back(mask_op(mask));
    return;
  }
  const auto index = indices(step);
  if (index.numel() == 0) return;  // a Bernoulli draw of nothing: no exchange this round
  push_values(node, step, replica.parameters().index_select(0, index), comm);
}

void SparseExchange::issue_after_mask(int node, Replica& replica, std::vector<CommOp>& comm) {
  auto it = mask_.find(node);
  if (it == mask_.end()) return;
  const auto index = std::move(it->second);
  mask_.erase(it);
  if (index.numel() == 0) return;  // node 0 drew nothing: no exchange this round
  exchanged_[node] = index;
  push_values(node, -1, replica.parameters().index_select(0, index), comm);
}

void SparseExchange::project(int step, std::vector<CommOp>& comm) const {
  if ((step + 1) % options_.interval != 0) return;
  if (broadcasts_mask()) return comm.push_back(mask_op(shape_only(d_)));
  const int64_t count = index_count(step);
  if (count > 0) comm.push_back(values_op(shape_only(count)));
}

void SparseExchange::project_after_mask(int step, std::vector<CommOp>& comm) const {
  if (!broadcasts_mask() || (step + 1) % options_.interval != 0) return;
  const int64_t count = index_count(step);  // node 0's draw, which its mask carried
  if (count > 0) comm.push_back(values_op(shape_only(count)));
}

CommOp SparseExchange::mask_op(torch::Tensor mask) const {
  auto op = make_op(CommKind::Broadcast, kMaskTag, std::move(mask));
  op.bytes_per_element = 1;
  return op;
}

CommOp SparseExchange::values_op(torch::Tensor values) const {
  const CommKind kind =
      options_.exchange == SparseExchangeWith::AllReduce ? CommKind::AllReduce : CommKind::NeighbourExchange;
  return make_op(kind, kTag, std::move(values), options_.delay);
}

void SparseExchange::push_values(int node, int step, torch::Tensor values, std::vector<CommOp>& comm) {
  if (options_.delay > 0) sent_[{node, step}] = values.clone();
  comm.push_back(values_op(values));
}

void SparseExchange::save(int node, AlgorithmState& state) const {
  for (const auto& [key, values] : sent_) {
    if (key.first == node) state.tensors["sparse/sent/" + std::to_string(key.second)] = values;
  }
}

void SparseExchange::load(int node, const AlgorithmState& state) {
  std::erase_if(sent_, [node](const auto& entry) { return entry.first.first == node; });
  const std::string prefix = "sparse/sent/";
  for (const auto& [name, values] : state.tensors) {
    if (name.rfind(prefix, 0) == 0) sent_[{node, std::stoi(name.substr(prefix.size()))}] = values.clone();
  }
}

bool SparseExchange::owns(const CommOp& op) { return op.tag == kTag || op.tag == kMaskTag; }

void SparseExchange::apply(int node, int issued_step, Replica& replica, CommOp& op) {
  torch::NoGradGuard no_grad;
  if (op.tag == kMaskTag) {
    mask_[node] = op.buffer.nonzero().view(-1);  // node 0's, as it arrived
    return;
  }
  torch::Tensor index;
  if (broadcasts_mask()) {
    index = std::move(exchanged_.at(node));
    exchanged_.erase(node);
  } else {
    index = indices(issued_step);
  }
  torch::Tensor average;
  if (op.kind == CommKind::AllReduce) {
    average = op.buffer.div_(nodes_);
  } else if (options_.exchange == SparseExchangeWith::Ring) {
    average = masked_mean(op);
  } else {  // SparseExchangeWith::Gossip
    average = metropolis_mix(neighbours_, node, op);
  }
  auto& params = replica.parameters();
  if (options_.delay == 0) {
    params.index_copy_(0, index, average);
  } else {
    // Local steps taken meanwhile stay: move by how far the average is from what was sent.
    auto key = std::make_pair(node, issued_step);
    params.index_add_(0, index, average - sent_.at(key));
    sent_.erase(key);
  }
}

}  // namespace testbed
