// DiLoCo, Streaming DiLoCo, SPARTA-DiLoCo, local SGD and lo-fi re-implemented here in plain
// LibTorch from their papers' pseudo-code and run beside the engine at real settings; and the
// bytes of steps in which a node issues several ops, in memory and in the binary's HDF5 file.
//
// Tolerance: kTolerance (1e-5) on parameters of magnitude ~0.05. The engine sums the
// pseudo-gradients in ring order where the references sum in node order, and LibTorch's SGD
// fuses multiply-adds that the outer step under test rounds twice, so the two sides differ by
// float32 rounding carried through AdamW (measured at most 2e-7, with the host set up as the
// engine sets it: one intra-op thread). Every slip these tests guard against moves parameters
// by a fraction of what an inner step moves them (AdamW: ~lr = 1e-3), 100 times the tolerance.
// The fp4 case is held to 1e-7: rounding to e2m1 is a step function, so there the settings
// make every outer operation exact (two nodes; lr, momentum and alpha powers of two), and any
// difference would be a different rounding decision, not noise (measured: none).
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

constexpr int64_t kD = kMlpParameters;
constexpr double kTolerance = 1e-5;

// No optimizer key: the replicas train with the real default, AdamW (lr 1e-3, weight decay 0.01).
Scenario scenario(int nodes, int steps, const std::string& algorithm, const std::string& extra = "") {
  return parse_scenario(R"(
name: reference_outer
seed: 11
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: mlp, batch_size: 16, steps: )" +
                            std::to_string(steps) + R"(, eval_every: 1000, eval_samples: 200}
compute: {model: fixed, step_time: 10ms}
algorithm: )" + algorithm + "\n" +
                            extra,
                        "reference_outer");
}

// Ring all-reduce (Patarasuk and Yuan): n elements in p chunks, chunk c = [c n / p, (c+1) n / p);
// 2(p-1) steps (reduce-scatter, then all-gather), in step k rank r sends chunk (r - k) mod p
// to r + 1, each message rounded up to whole bytes (an fp4 element is half a byte).
uint64_t ring_all_reduce_bytes(int64_t n, double element_bytes, int p, int rank) {
  uint64_t total = 0;
  for (int k = 0; k < 2 * (p - 1); ++k) {
    const int64_t c = ((rank - k) % p + p) % p;
    const int64_t count = (c + 1) * n / p - c * n / p;
    total += static_cast<uint64_t>(std::ceil(static_cast<double>(count) * element_bytes));
  }
  return total;
}

// e2m1 as training/algorithms/common.h defines the fp4 wire format: magnitudes
// {0, 0.5, 1, 1.5, 2, 3, 4, 6} times one per-tensor scale max|x| / 6, each element to the
// nearest magnitude (a tie to the smaller one), sign kept.
torch::Tensor e2m1(const torch::Tensor& x) {
  const double max = x.abs().max().item<double>();
  if (max == 0) return torch::zeros_like(x);
  const double scale = max / 6.0;
  const auto m = x.abs() / scale;  // in [0, 6]
  auto nearest = torch::zeros_like(m);
  auto distance = m.clone();  // to magnitude 0
  for (double g : {0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0}) {
    const auto d = (m - g).abs();
    const auto closer = d < distance;
    nearest = torch::where(closer, torch::full_like(m, g), nearest);
    distance = torch::where(closer, d, distance);
  }
  return nearest * scale * x.sign();
}

// What a receiver decodes of a pseudo-gradient sent in `dtype`.
torch::Tensor on_wire(const torch::Tensor& x, const std::string& dtype) {
  if (dtype == "fp32") return x;
  if (dtype == "bf16") return x.to(torch::kBFloat16).to(torch::kFloat32);  // round to nearest even
  if (dtype == "fp4") return e2m1(x);
  throw std::invalid_argument(dtype);
}

// The outer optimizer of DiLoCo: PyTorch's SGD(lr, momentum, nesterov=True), here LibTorch's
// own torch::optim::SGD, stepping global parameters whose gradient is the mean pseudo-gradient.
class OuterSgd {
 public:
  OuterSgd(const torch::Tensor& start, double lr, double momentum)
      : theta_(start.detach().clone().requires_grad_(true)),
        sgd_(std::vector<torch::Tensor>{theta_},
             torch::optim::SGDOptions(lr).momentum(momentum).nesterov(momentum > 0)) {}
  void step(const torch::Tensor& mean_pseudo_gradient) {
    theta_.mutable_grad() = mean_pseudo_gradient.clone();
    sgd_.step();
  }
  torch::Tensor theta() const { return theta_.detach(); }

 private:
  torch::Tensor theta_;
  torch::optim::SGD sgd_;
};

class ReferenceOuter : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const Scenario s = scenario(2, 1, "{name: ddp}");
    // The engine's host set-up (one intra-op thread, as `threads: 1` says) before any
    // reference trains: a different thread count sums the matrix products in another order.
    configure_host(s);
    data_ = new Dataset(load_dataset(s));
  }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;

  using Replicas = std::vector<std::unique_ptr<Replica>>;
  static EngineRun run(const Scenario& s) { return run_engine(s, *data_); }

  // Replicas built as the engine builds them (same initialisation, shards, batches, optimizer).
  static Replicas replicas(const Scenario& s) {
    Replicas out;
    auto samplers = make_samplers(s, *data_);
    for (int n = 0; n < s.nodes; ++n)
      out.push_back(
          std::make_unique<Replica>(make_model(s, n), optimizer_config(s), samplers[n], torch::kCPU, data_->task));
    return out;
  }
  static void local_step(Replica& r) {
    r.forward_backward(r.next_batch(*data_, 16));
    r.optimizer_step();
  }
  static std::vector<torch::Tensor> parameters(const Replicas& rs) {
    std::vector<torch::Tensor> out;
    for (const auto& r : rs) out.push_back(r->parameters().clone());
    return out;
  }
  static double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }
  // Every node's parameters against the reference's; returns the largest difference.
  static double expect_matches(const EngineRun& r, const std::vector<torch::Tensor>& want, double tolerance) {
    double worst = 0;
    for (size_t n = 0; n < want.size(); ++n) {
      const double diff = max_diff(r.parameters.at(n), want[n]);
      EXPECT_LE(diff, tolerance) << "node " << n;
      worst = std::max(worst, diff);
    }
    return worst;
  }
  // summary.total_bytes is both the sum of /comm/bytes over steps and nodes and the sum of
  // the bytes of every message the network delivered.
  static void expect_totals_agree(const EngineRun& r) {
    uint64_t rows = 0, messages = 0;
    for (const auto& row : r.record.train_rows)
      for (uint64_t b : row.bytes) rows += b;
    for (const auto& m : r.record.messages) messages += m.bytes;
    EXPECT_GT(rows, 0u);
    EXPECT_EQ(r.summary.total_bytes, rows);
    EXPECT_EQ(r.summary.total_bytes, messages);
  }

  // DiLoCo, arXiv 2311.08105 Algorithm 1: each outer step t every replica starts from
  // theta^(t-1) (line 3), takes H inner steps (lines 4-8; its AdamW state carries over),
  // delta_i = theta^(t-1) - theta_i^(t) (line 9), Delta = (1/k) sum_i delta_i (line 11,
  // each delta_i as its receivers decode it), theta^(t) = OuterOpt(theta^(t-1), Delta) (line 12).
  static std::vector<torch::Tensor> diloco(const Scenario& s, int H, int rounds, double lr, double momentum,
                                           const std::string& dtype) {
    auto reps = replicas(s);
    OuterSgd outer(reps[0]->parameters(), lr, momentum);
    for (int t = 1; t <= rounds; ++t) {
      for (auto& r : reps)
        for (int h = 0; h < H; ++h) local_step(*r);
      torch::NoGradGuard no_grad;
      auto delta = torch::zeros_like(outer.theta());
      for (auto& r : reps) delta += on_wire(outer.theta() - r->parameters(), dtype);
      outer.step(delta / static_cast<double>(s.nodes));
      for (auto& r : reps) r->parameters().copy_(outer.theta());
    }
    return parameters(reps);
  }

  struct Streaming {
    int H = 100, fragments = 4, tau = 1;
    double alpha = 0.5, lr = 0.7, momentum = 0.9;
    std::string dtype = "fp4";
    int steps = 0;
  };
  // Streaming DiLoCo, arXiv 2501.18512 Algorithm 2, with the testbed's choices where the paper
  // leaves one: fragment p is the contiguous range [p d / P, (p+1) d / P) of the flat
  // parameters with its own global copy and outer optimizer; its outer gradient is sent after
  // steps t (counted from 1) with (t + p H / P) mod H == 0, i.e. the paper's time offset
  // t_p = -p H / P; after tau more inner steps the mean outer gradient arrives, the outer
  // optimizer steps theta_p, and each replica mixes theta_m,p <- alpha theta_m,p +
  // (1 - alpha) theta_p (tau > 0; theta_m,p <- theta_p when tau = 0). What is still in flight
  // when training ends arrives after the last step.
  static std::vector<torch::Tensor> streaming(const Scenario& s, const Streaming& c) {
    auto reps = replicas(s);
    const int64_t d = reps[0]->parameters().numel();
    const int P = c.fragments;
    std::vector<int64_t> begin(P + 1);
    std::vector<std::unique_ptr<OuterSgd>> outer;
    for (int p = 0; p <= P; ++p) begin[p] = p * d / P;
    for (int p = 0; p < P; ++p)
      outer.push_back(
          std::make_unique<OuterSgd>(reps[0]->parameters().slice(0, begin[p], begin[p + 1]), c.lr, c.momentum));
    struct InFlight {
      int fragment, arrives_after;
      torch::Tensor mean;
    };
    std::vector<InFlight> in_flight;
    for (int step = 0; step < c.steps; ++step) {
      const int t = step + 1;
      for (auto& r : reps) local_step(*r);
      torch::NoGradGuard no_grad;
      for (int p = 0; p < P; ++p) {
        if ((t + p * c.H / P) % c.H != 0) continue;
        auto sum = torch::zeros_like(outer[p]->theta());
        for (auto& r : reps)
          sum += on_wire(outer[p]->theta() - r->parameters().slice(0, begin[p], begin[p + 1]), c.dtype);
        in_flight.push_back({p, std::min(step + c.tau, c.steps - 1), sum / static_cast<double>(s.nodes)});
      }
      for (const auto& f : in_flight) {
        if (f.arrives_after != step) continue;
        outer[f.fragment]->step(f.mean);
        const auto theta = outer[f.fragment]->theta();
        for (auto& r : reps) {
          auto local = r->parameters().slice(0, begin[f.fragment], begin[f.fragment + 1]);
          local.copy_(c.tau > 0 ? c.alpha * local + (1 - c.alpha) * theta : theta);
        }
      }
      std::erase_if(in_flight, [step](const InFlight& f) { return f.arrives_after == step; });
    }
    return parameters(reps);
  }
};
Dataset* ReferenceOuter::data_ = nullptr;

// diloco at its defaults (outer lr 0.7, Nesterov momentum 0.9, fp32) with AdamW inside:
// three outer rounds of H = 4, three nodes. Caught, each tried once: heavy-ball momentum
// instead of Nesterov, the Nesterov step without its momentum term, the mean without its
// 1/k, the global copy re-taken every step, the default lr and momentum swapped.
TEST_F(ReferenceOuter, DilocoAtItsDefaultsFollowsAlgorithm1) {
  const int nodes = 3, H = 4, rounds = 3;
  const Scenario s = scenario(nodes, H * rounds, "{name: diloco, H: 4}");
  const auto want = diloco(s, H, rounds, 0.7, 0.9, "fp32");
  const EngineRun r = run(s);
  std::printf("diloco defaults: max |engine - reference| %.3g\n", expect_matches(r, want, kTolerance));
  // The check can tell: plain averaging (lr 1, no momentum) lands far from the reference.
  EXPECT_GT(max_diff(want[0], diloco(s, H, rounds, 1.0, 0.0, "fp32")[0]), 100 * kTolerance);
}

// A non-default outer optimizer, and pseudo-gradients rounded to bf16 before they are summed
// (Algorithm 1 line 11 over what the receivers decode). Four nodes, three rounds of H = 3.
// Caught: the bf16 rounding skipped, besides the outer-step slips above.
TEST_F(ReferenceOuter, DilocoWithBf16PseudoGradientsFollowsAlgorithm1) {
  const int nodes = 4, H = 3, rounds = 3;
  const Scenario s =
      scenario(nodes, H * rounds, "{name: diloco, H: 3, outer_lr: 0.4, outer_momentum: 0.5, outer_dtype: bf16}");
  const auto want = diloco(s, H, rounds, 0.4, 0.5, "bf16");
  const EngineRun r = run(s);
  std::printf("diloco bf16: max |engine - reference| %.3g\n", expect_matches(r, want, kTolerance));
  EXPECT_GT(max_diff(want[0], diloco(s, H, rounds, 0.4, 0.5, "fp32")[0]), 10 * kTolerance);  // rounding shows
  // bf16 is two bytes an element on the wire.
  for (int n = 0; n < nodes; ++n)
    EXPECT_EQ(r.record.train_rows[H - 1].bytes[n], ring_all_reduce_bytes(kD, 2, nodes, n));
}

// Streaming DiLoCo with its defaults' shape: four fragments, staggered over H = 4 (one
// fragment every step), tau = 1, alpha = 0.5, fp4 outer gradients; 13 steps, so the last
// step's fragment is still in flight when training ends. Two nodes and powers of two for
// lr, momentum and alpha keep every outer operation exact, so the fp4 rounding decisions
// are the same on both sides (see the tolerance note at the top). Caught: the fp4 rounding
// skipped, fragment ranges of d / P each (the remainder never synced), the outer-step slips.
TEST_F(ReferenceOuter, StreamingDilocoFollowsAlgorithm2WithFp4AndOverlap) {
  Streaming c;
  c.H = 4, c.fragments = 4, c.tau = 1, c.alpha = 0.5, c.lr = 0.5, c.momentum = 0.5, c.dtype = "fp4", c.steps = 13;
  const Scenario s = scenario(2, c.steps,
                              "{name: streaming_diloco, H: 4, fragments: 4, tau: 1, alpha: 0.5, outer_lr: 0.5, "
                              "outer_momentum: 0.5, outer_dtype: fp4}");
  const auto want = streaming(s, c);
  const EngineRun r = run(s);
  std::printf("streaming fp4: max |engine - reference| %.3g\n", expect_matches(r, want, 1e-7));
  // The fp4 rounding is in there: without it the reference lands elsewhere.
  Streaming exact = c;
  exact.dtype = "fp32";
  EXPECT_GT(max_diff(want[0], streaming(s, exact)[0]), 10 * kTolerance);
  // Fragment p's |range| / 2 elements at half a byte each, once per step, round up per message.
  for (int step = 0; step < c.steps; ++step) {
    for (int n = 0; n < 2; ++n) {
      uint64_t expected = 0;
      for (int p = 0; p < c.fragments; ++p)
        if ((step + 1 + p * c.H / c.fragments) % c.H == 0)
          expected += ring_all_reduce_bytes((p + 1) * kD / 4 - p * kD / 4, 0.5, 2, n);
      EXPECT_EQ(r.record.train_rows[step].bytes[n], expected) << "step " << step;
    }
  }
}

// More fragments than H: five fragments over H = 2 have offsets 0, 0, 0, 1, 1, so a node
// sends three outer gradients after odd-numbered steps and two after even ones. Defaults
// for the outer optimizer, alpha 0.3 (not symmetric, so which side it weighs shows), fp32.
// Caught: alpha and 1 - alpha swapped, offsets f (H / P) instead of f H / P.
TEST_F(ReferenceOuter, StreamingDilocoWithMoreFragmentsThanHFollowsAlgorithm2) {
  Streaming c;
  c.H = 2, c.fragments = 5, c.tau = 1, c.alpha = 0.3, c.dtype = "fp32", c.steps = 7;
  const int nodes = 3;
  const Scenario s =
      scenario(nodes, c.steps, "{name: streaming_diloco, H: 2, fragments: 5, tau: 1, alpha: 0.3, outer_dtype: fp32}");
  const auto want = streaming(s, c);
  const EngineRun r = run(s);
  std::printf("streaming P > H: max |engine - reference| %.3g\n", expect_matches(r, want, kTolerance));
  Streaming swapped = c;
  swapped.alpha = 0.7;
  EXPECT_GT(max_diff(want[0], streaming(s, swapped)[0]), 10 * kTolerance);
}

// The bytes of a step with several ops: each fragment due is one ring all-reduce of its
// range, and the step's bytes are their sum. fp4, three nodes, five fragments over H = 2.
// Caught: a step's bytes set by each op instead of summed, wrong offsets or ranges.
TEST_F(ReferenceOuter, StreamingDilocoBytesAreTheSumOfTheStepsFragments) {
  const int nodes = 3, H = 2, P = 5, steps = 6;
  const EngineRun r = run(scenario(nodes, steps, "{name: streaming_diloco, H: 2, fragments: 5, tau: 1}"));
  ASSERT_EQ(r.record.train_rows.size(), static_cast<size_t>(steps));
  for (int step = 0; step < steps; ++step) {
    int ops = 0;
    for (int n = 0; n < nodes; ++n) {
      uint64_t expected = 0;
      ops = 0;
      for (int p = 0; p < P; ++p) {
        if ((step + 1 + p * H / P) % H != 0) continue;
        expected += ring_all_reduce_bytes((p + 1) * kD / P - p * kD / P, 0.5, nodes, n);
        ++ops;
      }
      EXPECT_EQ(r.record.train_rows[step].bytes[n], expected) << "step " << step << " node " << n;
    }
    EXPECT_EQ(ops, step % 2 == 0 ? 2 : 3);
  }
  expect_totals_agree(r);
}

// sparta_diloco: SPARTA's sparse averaging after every step plus DiLoCo's outer step
// (Algorithm 1) every H. Selection `windows`: in step s the k = round(p d) elements
// s k .. s k + k - 1 (mod d) are replaced by their mean over the nodes. Both exchanges leave
// right after the inner step, so the pseudo-gradient is of the parameters before this step's
// sparse average; the outer step's result then replaces every parameter. Caught: windows
// one step ahead, the outer op issued (so applied) before the sparse one, bytes per step
// instead of per op, the total counted from rank 0's bytes.
TEST_F(ReferenceOuter, SpartaDilocoIsSparseAveragingPlusTheOuterStep) {
  const int nodes = 3, H = 3, steps = 9;
  const double p = 0.3;  // windows of 70544 elements: the fourth wraps around d
  const Scenario s = scenario(nodes, steps, "{name: sparta_diloco, H: 3, p: 0.3, selection: windows}");
  const int64_t k = std::llround(p * kD);
  auto reps = replicas(s);
  OuterSgd outer(reps[0]->parameters(), 0.7, 0.9);
  for (int step = 0; step < steps; ++step) {
    for (auto& rep : reps) local_step(*rep);
    torch::NoGradGuard no_grad;
    std::vector<int64_t> window(k);
    for (int64_t i = 0; i < k; ++i) window[i] = (step * k + i) % kD;
    const auto index = torch::tensor(window, torch::kInt64);
    auto mean = torch::zeros({k});
    for (auto& rep : reps) mean += rep->parameters().index_select(0, index);
    mean /= static_cast<double>(nodes);
    const bool outer_step = (step + 1) % H == 0;
    if (outer_step) {
      auto delta = torch::zeros_like(outer.theta());
      for (auto& rep : reps) delta += outer.theta() - rep->parameters();
      outer.step(delta / static_cast<double>(nodes));
    }
    for (auto& rep : reps) {
      rep->parameters().index_put_({index}, mean);
      if (outer_step) rep->parameters().copy_(outer.theta());
    }
  }
  const auto want = parameters(reps);
  const EngineRun r = run(s);
  std::printf("sparta_diloco: max |engine - reference| %.3g\n", expect_matches(r, want, kTolerance));
  // Between outer steps the sparse averages are all that ties the replicas.
  Scenario eight = scenario(nodes, 8, "{name: sparta_diloco, H: 3, p: 0.3, selection: windows}");
  const EngineRun mid = run(eight);
  EXPECT_GT(max_diff(mid.parameters[0], mid.parameters[1]), 100 * kTolerance);

  // Bytes: the sparse all-reduce of k floats every step, plus the outer all-reduce of d
  // floats every H steps, both in one step.
  for (int step = 0; step < steps; ++step) {
    for (int n = 0; n < nodes; ++n) {
      uint64_t expected = ring_all_reduce_bytes(k, 4, nodes, n);
      if ((step + 1) % H == 0) expected += ring_all_reduce_bytes(kD, 4, nodes, n);
      EXPECT_EQ(r.record.train_rows[step].bytes[n], expected) << "step " << step << " node " << n;
    }
  }
  expect_totals_agree(r);
}

// Local SGD with McMahan et al.'s weighting and C = 0.5: each round m = max(C K, 1) nodes
// take part and their new model is sum_{k in S_t} (n_k / n_S) w_k, n_S the round's samples.
// Unlike FedAvg (test_fedavg.cpp), a node left out keeps training on its own parameters
// (it does not restart from the global model when picked). Which nodes a round picks is an
// input here (the first m of the seeded permutation the scenario seed names); the rounds,
// counts and weights are worked out below. Label-skewed shards make the weights unequal.
// Caught: weights normalised over every node's shard, the round numbered from step / H.
TEST_F(ReferenceOuter, LocalSgdWeighsOnlyTheRoundsChosenNodesByShardSize) {
  const int nodes = 4, H = 3, steps = 12;
  const double fraction = 0.5;
  Scenario skewed = scenario(nodes, steps, "{name: local_sgd, H: 3, fraction: 0.5}");
  skewed.workload.partition.kind = PartitionKind::Dirichlet;
  skewed.workload.partition.alpha = 0.5;
  auto reps = replicas(skewed);
  std::vector<double> shard;
  for (const auto& sampler : make_samplers(skewed, *data_)) shard.push_back(static_cast<double>(sampler.shard_size()));
  ASSERT_EQ(std::set<double>(shard.begin(), shard.end()).size(), static_cast<size_t>(nodes)) << "shards must differ";

  const int m = std::max(1, static_cast<int>(std::lround(fraction * nodes)));
  ASSERT_EQ(m, 2);
  std::set<int> ever_left_out_then_chosen;
  std::vector<bool> left_out(nodes, false);
  std::vector<std::vector<int>> chosen_by_round;
  for (int step = 0; step < steps; ++step) {
    for (auto& rep : reps) local_step(*rep);
    if ((step + 1) % H != 0) continue;
    const int round = (step + 1) / H;
    auto order = seeded_permutation(nodes, stream_seed(skewed.seed, "fedavg_round", static_cast<uint64_t>(round)));
    std::vector<int> chosen(order.begin(), order.begin() + m);
    std::sort(chosen.begin(), chosen.end());
    chosen_by_round.push_back(chosen);
    double n_s = 0;
    for (int n : chosen) n_s += shard[n];
    torch::NoGradGuard no_grad;
    auto average = torch::zeros_like(reps[0]->parameters());
    for (int n : chosen) average += reps[n]->parameters() * (shard[n] / n_s);
    for (int n : chosen) reps[n]->parameters().copy_(average);
    for (int n = 0; n < nodes; ++n) {
      const bool in = std::find(chosen.begin(), chosen.end(), n) != chosen.end();
      if (in && left_out[n]) ever_left_out_then_chosen.insert(n);
      if (!in) left_out[n] = true;
    }
  }
  // The draw exercises the case: some node sat out a round and was picked later.
  EXPECT_FALSE(ever_left_out_then_chosen.empty());
  const auto want = parameters(reps);
  const EngineRun r = run(skewed);
  std::printf("local_sgd: shards %.0f %.0f %.0f %.0f, max |engine - reference| %.3g\n", shard[0], shard[1], shard[2],
              shard[3], expect_matches(r, want, kTolerance));
  // Bytes: a ring all-reduce of d floats among the round's two nodes, nothing for the rest.
  for (size_t round = 0; round < chosen_by_round.size(); ++round) {
    const auto& row = r.record.train_rows[(round + 1) * H - 1];
    const auto& chosen = chosen_by_round[round];
    for (int n = 0; n < nodes; ++n) {
      const auto it = std::find(chosen.begin(), chosen.end(), n);
      const uint64_t expected =
          it == chosen.end() ? 0 : ring_all_reduce_bytes(kD, 4, m, static_cast<int>(it - chosen.begin()));
      EXPECT_EQ(row.bytes[n], expected) << "round " << round + 1 << " node " << n;
    }
  }
}

// lo-fi (arXiv 2210.11948): independent fine-tuning, one average at the end. Beyond
// test_algorithms' three SGD nodes: AdamW, and five nodes, which divide neither d nor the
// ring chunks evenly. Caught: dividing by N - 1, the total counted from rank 0's bytes.
TEST_F(ReferenceOuter, LofiWithAdamWOnFiveNodesAveragesOnceAtTheEnd) {
  const int nodes = 5, steps = 3;
  const Scenario s = scenario(nodes, steps, "{name: lofi}");
  auto reps = replicas(s);
  for (int step = 0; step < steps; ++step)
    for (auto& rep : reps) local_step(*rep);
  auto sum = torch::zeros_like(reps[0]->parameters());
  {
    torch::NoGradGuard no_grad;  // only here: the engine's replicas need gradients
    for (auto& rep : reps) sum += rep->parameters();
  }
  const std::vector<torch::Tensor> want(nodes, sum / static_cast<double>(nodes));
  const EngineRun r = run(s);
  std::printf("lofi: max |engine - reference| %.3g\n", expect_matches(r, want, kTolerance));
  ASSERT_NE(kD % nodes, 0);
  for (int n = 0; n < nodes; ++n) {
    EXPECT_EQ(r.record.train_rows[0].bytes[n], 0u);
    EXPECT_EQ(r.record.train_rows[steps - 1].bytes[n], ring_all_reduce_bytes(kD, 4, nodes, n)) << n;
  }
  expect_totals_agree(r);
}

// Through the binary: the HDF5 file's /summary total_bytes, the sum of /comm/bytes and the
// sum of /comm/messages' bytes agree for a run whose steps carry several ops each, and
// /comm/bytes follows the per-op formula. Caught: bytes per step instead of per op.
TEST(ReferenceOuterBinary, Hdf5TotalsAgreeWithSeveralOpsPerStep) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("testbed_reference_outer_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int nodes = 3, H = 2, P = 5, steps = 4;
  std::ofstream(dir / "s.yaml") << R"(name: several_ops
seed: 3
nodes: 3
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
workload: {model: mlp, batch_size: 16, steps: 4, eval_every: 1000, eval_samples: 200}
compute: {model: fixed, step_time: 10ms}
algorithm: {name: streaming_diloco, H: 2, fragments: 5, tau: 1}
)";
  const std::string cmd = std::string(TESTBED_BINARY) + " run " + (dir / "s.yaml").string() + " -q -o " +
                          (dir / "r.h5").string() + " > " + (dir / "log").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  {
    H5::H5File file((dir / "r.h5").string(), H5F_ACC_RDONLY);
    uint64_t total = 0;
    file.openGroup("/summary").openAttribute("total_bytes").read(H5::PredType::NATIVE_UINT64, &total);

    H5::DataSet bytes = file.openDataSet("/comm/bytes");
    hsize_t dims[2] = {0, 0};
    ASSERT_EQ(bytes.getSpace().getSimpleExtentNdims(), 2);
    bytes.getSpace().getSimpleExtentDims(dims);
    ASSERT_EQ(dims[0], static_cast<hsize_t>(steps));
    ASSERT_EQ(dims[1], static_cast<hsize_t>(nodes));
    std::vector<uint64_t> per_step(dims[0] * dims[1]);
    bytes.read(per_step.data(), H5::PredType::NATIVE_UINT64);

    // Only the bytes member of each message row.
    H5::CompType bytes_only(sizeof(uint64_t));
    bytes_only.insertMember("bytes", 0, H5::PredType::NATIVE_UINT64);
    H5::DataSet messages = file.openDataSet("/comm/messages");
    std::vector<uint64_t> message_bytes(messages.getSpace().getSimpleExtentNpoints());
    messages.read(message_bytes.data(), bytes_only);

    // Each message's kind is its op's whole tag: the fragment's number survives the file
    // (the column once held 15 characters, so `pseudo_gradient/3` read `pseudo_gradient`).
    H5::CompType kind_only(size_t{32});
    kind_only.insertMember("kind", 0, H5::StrType(H5::PredType::C_S1, 32));
    std::vector<std::array<char, 32>> kinds(message_bytes.size());
    messages.read(kinds.data(), kind_only);
    std::set<std::string> tags;
    for (const auto& k : kinds) tags.insert(k.data());
    std::set<std::string> expected_tags;
    for (int p = 0; p < P; ++p) expected_tags.insert("pseudo_gradient/" + std::to_string(p));
    EXPECT_EQ(tags, expected_tags);

    EXPECT_GT(total, 0u);
    EXPECT_EQ(total, std::accumulate(per_step.begin(), per_step.end(), uint64_t{0}));
    EXPECT_EQ(total, std::accumulate(message_bytes.begin(), message_bytes.end(), uint64_t{0}));
    for (int step = 0; step < steps; ++step) {
      for (int n = 0; n < nodes; ++n) {
        uint64_t expected = 0;
        for (int p = 0; p < P; ++p)
          if ((step + 1 + p * H / P) % H == 0)
            expected += ring_all_reduce_bytes((p + 1) * kD / P - p * kD / P, 0.5, nodes, n);
        EXPECT_EQ(per_step[step * nodes + n], expected) << "step " << step << " node " << n;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace testbed
