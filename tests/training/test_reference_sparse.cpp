// SPARTA, gossip and DeMo re-implemented here in plain LibTorch from their papers' pseudo-code
// and run side by side with the engine, every node's parameters compared after several steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>

#include <torch/torch.h>
#include <boost/graph/adjacency_list.hpp>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"
#include "tests/support/reference_scenario.h"
#include "topologies/builders.h"
#include "topologies/routing.h"
#include "training/algorithms/common.h"
#include "training/algorithms/dct.h"
#include "training/algorithms/sparse_exchange.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {
namespace reference_sparse {  // its own names: reference_tests compiles as one unity file
namespace {

// The engine and the references agree to float rounding only: the engine's ring all-reduce
// sums float32 chunks in rotating order and the Metropolis mix adds neighbours in arrival
// order, the references in node order, so a sum differs by a few ulps (~3e-8 for values
// below 1; measured worst over every case here: 9e-8). The slips this must catch move some
// parameter by lr-sized steps or a share of the replicas' spread (>= 1e-4 in these runs;
// the exchanges themselves move parameters by >= 4e-3), so 1e-6 separates the two.
constexpr double kTolerance = 1e-6;

constexpr const char* kLink = "link: {bandwidth: 1Gbps, latency: 1ms}";
std::string topology_yaml(const std::string& kind) {
  // p: Erdos-Renyi's link probability; at seed 11 and 6 hosts it draws degrees 3 2 4 3 5 3
  // (checked in ReferenceTopologies).
  if (kind == "erdos_renyi") return "{kind: erdos_renyi, p: 0.5, " + std::string(kLink) + "}";
  return "{kind: " + kind + ", " + kLink + "}";
}

Scenario scenario(int nodes, int steps, const std::string& topology, const std::string& optimizer,
                  const std::string& algorithm) {
  return reference_scenario(11, nodes, steps, topology_yaml(topology), optimizer, algorithm);
}

constexpr const char* kAdamW = "{name: adamw}";  // the defaults: lr 1e-3, weight_decay 0.01
constexpr int64_t kD = 16 * 64 + 64 + 64 * 32 + 32 + 32 * 4 + 4;

// ---- Topology read off the graph -------------------------------------------------------

// Each host's neighbours from the Boost graph: hosts it is linked to, and the hosts across a
// switch it is linked to. A switch is no participant (it trains nothing), so two hosts that
// meet at one switch reach each other with no host in between: they are neighbours. One
// switch hop covers the star (its hub is the only switch); deeper fabrics are not used here.
std::vector<std::vector<int>> graph_neighbours(const Topology& t) {
  const auto& g = t.graph;
  const int hosts = t.num_hosts();
  std::vector<std::set<int>> found(hosts);
  for (int h = 0; h < hosts; ++h) {
    for (auto v : boost::make_iterator_range(boost::adjacent_vertices(h, g))) {
      if (g[v].kind == VertexKind::Host) {
        found[h].insert(static_cast<int>(v));
        continue;
      }
      for (auto w : boost::make_iterator_range(boost::adjacent_vertices(v, g)))
        if (g[w].kind == VertexKind::Host && static_cast<int>(w) != h) found[h].insert(static_cast<int>(w));
    }
  }
  std::vector<std::vector<int>> out;
  for (const auto& f : found) out.emplace_back(f.begin(), f.end());
  return out;
}

std::vector<std::vector<int>> neighbours_of(const Scenario& s) {
  return graph_neighbours(build_topology(topology_spec(s)));
}

// Metropolis-Hastings weights (Xiao & Boyd, "Fast linear iterations for distributed
// averaging", 2004; Boyd et al. 2006): w_ij = 1 / (1 + max(deg i, deg j)) for each link,
// w_ii = 1 - sum_j w_ij, 0 elsewhere.
std::vector<std::vector<double>> metropolis_weights(const std::vector<std::vector<int>>& nb) {
  const size_t n = nb.size();
  std::vector<std::vector<double>> w(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) {
    double others = 0;
    for (int j : nb[i]) {
      w[i][j] = 1.0 / (1.0 + static_cast<double>(std::max(nb[i].size(), nb[j].size())));
      others += w[i][j];
    }
    w[i][i] = 1.0 - others;
  }
  // Symmetric with unit row sums, hence doubly stochastic: the mix keeps the nodes' mean.
  for (size_t i = 0; i < n; ++i) {
    double row = 0;
    for (size_t j = 0; j < n; ++j) {
      EXPECT_DOUBLE_EQ(w[i][j], w[j][i]);
      EXPECT_GE(w[i][j], 0.0);
      row += w[i][j];
    }
    EXPECT_NEAR(row, 1.0, 1e-12);
  }
  return w;
}

// sum_j w[i][j] x_j, in node order.
torch::Tensor mix(const std::vector<std::vector<double>>& w, int i, const std::vector<torch::Tensor>& x) {
  auto out = torch::zeros_like(x[i]);
  for (size_t j = 0; j < x.size(); ++j)
    if (w[i][j] != 0) out += x[j] * w[i][j];
  return out;
}

// ---- The orthonormal DCT-II as an explicit matrix ---------------------------------------

// C[k][n] = s_k cos(pi (2n + 1) k / (2N)), s_0 = sqrt(1/N), s_k = sqrt(2/N): X = C x, and
// since C is orthogonal, x = C^T X. Float64.
torch::Tensor cosine_matrix(int64_t N) {
  auto c = torch::empty({N, N}, torch::kFloat64);
  auto a = c.accessor<double, 2>();
  for (int64_t k = 0; k < N; ++k)
    for (int64_t n = 0; n < N; ++n)
      a[k][n] = std::sqrt((k == 0 ? 1.0 : 2.0) / static_cast<double>(N)) *
                std::cos(M_PI * static_cast<double>((2 * n + 1) * k) / (2.0 * static_cast<double>(N)));
  return c;
}
// Row-wise transforms of [rows, N], computed in float64 and rounded to the input's dtype.
torch::Tensor dct_rows(const torch::Tensor& x, const torch::Tensor& c) {
  return x.to(torch::kFloat64).matmul(c.t()).to(x.scalar_type());
}
torch::Tensor idct_rows(const torch::Tensor& X, const torch::Tensor& c) {
  return X.to(torch::kFloat64).matmul(c).to(X.scalar_type());
}

// ---- Fixture --------------------------------------------------------------------------

class Reference : public ::testing::Test {
 protected:
  // The synthetic data depends on the seed and the task's sizes only, the same in every scenario here.
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(scenario(2, 1, "ring", kAdamW, "{name: ddp}"))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;

  // Replicas built as the engine builds them (same initialisation, shards and batches).
  static std::vector<std::unique_ptr<Replica>> replicas(const Scenario& s) { return make_replicas(s, *data_); }
  static void local_step(Replica& r, const Scenario& s) {
    r.forward_backward(r.next_batch(*data_, s.workload.batch_size));
    r.optimizer_step();
  }
  static std::vector<int64_t> tensor_sizes(const Scenario& s) {
    std::vector<int64_t> sizes;
    for (const auto& p : trainable_parameters(*make_model(s))) sizes.push_back(p.numel());
    return sizes;
  }
  // Largest difference over nodes between the engine's parameters and the reference's.
  static double worst(const EngineRun& run, const std::vector<std::unique_ptr<Replica>>& ref) {
    double out = 0;
    for (size_t n = 0; n < ref.size(); ++n)
      out = std::max(out, (run.parameters[n] - ref[n]->parameters()).abs().max().item<double>());
    return out;
  }
  static double spread(const std::vector<std::unique_ptr<Replica>>& ref) {
    double out = 0;
    for (size_t n = 1; n < ref.size(); ++n)
      out = std::max(out, (ref[n]->parameters() - ref[0]->parameters()).abs().max().item<double>());
    return out;
  }
};
Dataset* Reference::data_ = nullptr;

// ---- SPARTA -----------------------------------------------------------------------------

struct SpartaCase {
  std::string name;
  int nodes, steps;
  std::string topology, optimizer;
  std::string selection, exchange;
  double p;
  int interval, delay;
  std::string index_transport = "seeded";
};

// Test names show the case's name, not its bytes (which hold pointers and would change).
void PrintTo(const SpartaCase& c, std::ostream* os) { *os << c.name; }

std::string sparta_yaml(const SpartaCase& c) {
  std::ostringstream o;
  o << "{name: sparta, p: " << c.p << ", selection: " << c.selection << ", exchange: " << c.exchange
    << ", interval: " << c.interval << ", delay: " << c.delay << ", index_transport: " << c.index_transport << "}";
  return o.str();
}

// Which parameters round r averages, from the selection's definition. The seeded draws
// (seeded_indices, seeded_permutation under stream_seed) are inputs: every node derives the
// same draw from the scenario seed, named "sparta" for round r's subset and "sparta_order"
// for the one shuffle. The rest is worked out here: k = round(p d) (at least 1), windows of
// k wrapping past d, layerwise's tensor r mod T and its own count round(p size).
torch::Tensor reference_indices(const std::string& selection, int64_t round, double p, uint64_t seed,
                                const std::vector<int64_t>& sizes, const std::vector<int64_t>& order) {
  int64_t d = 0;
  for (int64_t s : sizes) d += s;
  const int64_t k = std::max<int64_t>(1, std::min<int64_t>(d, std::llround(p * static_cast<double>(d))));
  if (selection == "random") return seeded_indices(d, k, stream_seed(seed, "sparta", round));
  if (selection == "bernoulli") {  // EXO Gym's per-element mask, from a seeded uniform draw
    auto generator = at::detail::createCPUGenerator(stream_seed(seed, "sparta_bernoulli", round));
    return (at::rand({d}, generator) < p).nonzero().view(-1);
  }
  if (selection == "partitioned") {  // EXO Gym's: part round mod P of each tensor's cycle's partition
    std::vector<int64_t> chosen;
    int64_t first = 0;
    for (size_t t = 0; t < sizes.size(); ++t) {
      const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(std::ceil(1 / p)), sizes[t]));
      const auto perm = seeded_permutation(sizes[t], stream_seed(stream_seed(seed, "sparta_partition", t), "cycle",
                                                                 static_cast<uint64_t>(round / parts)));
      for (int64_t j = 0; j < sizes[t]; ++j)
        if (perm[j] % parts == round % parts) chosen.push_back(first + j);
      first += sizes[t];
    }
    return torch::tensor(chosen, torch::kInt64);
  }
  if (selection == "windows" || selection == "shuffled_sequential") {
    // Round r's window: positions r k, r k + 1, ..., r k + k - 1, each modulo d, of the
    // parameters in order (windows) or of one fixed shuffle (shuffled_sequential).
    std::vector<int64_t> chosen;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t position = (round * k + i) % d;
      chosen.push_back(selection == "windows" ? position : order.at(position));
    }
    std::sort(chosen.begin(), chosen.end());
    return torch::tensor(chosen, torch::kInt64);
  }
  // layerwise: tensor r mod T, whose elements start after the tensors before it.
  const size_t t = static_cast<size_t>(round) % sizes.size();
  int64_t first = 0;
  for (size_t u = 0; u < t; ++u) first += sizes[u];
  const int64_t kt = std::max<int64_t>(1, std::min<int64_t>(sizes[t], std::llround(p * static_cast<double>(sizes[t]))));
  return seeded_indices(sizes[t], kt, stream_seed(seed, "sparta", round)) + first;
}

class SpartaReference : public Reference, public ::testing::WithParamInterface<SpartaCase> {};

// SPARTA (Beton et al., "Improving the Efficiency of Distributed Training using Sparse
// Parameter Averaging", 2025): after the inner optimizer step, a subset I of p|theta|
// indices that all nodes draw alike is averaged, theta_i[I] <- mean_j theta_j[I]; here every
// `interval` steps (an exchange after step t when t + 1 is a multiple of it: round
// (t + 1) / interval - 1). The mean is over all nodes (allreduce), uniform over the node
// and its graph neighbours (ring), or Metropolis-Hastings weighted (gossip). Asynchronous
// SPARTA (the paper's delayed exchange), in the form sparse_exchange.h states: the values
// sent after step t come back `delay` steps later as theta_i[I] += average - sent, so the
// local progress made meanwhile is kept; with delay 0 that is the plain assignment. Ops
// land before step t + 1 + delay starts (the engine's schedule, algorithm.h; those due past
// the end land after the last step), in the order they were issued.
// SPARTA's Bernoulli mask drawn in chunks (bernoulli_indices, bernoulli_count: a 7B model's
// mask is never held whole) is the one draw rand(d) < p written above, at chunks that divide d,
// do not, and exceed it. Slips caught: the generator reseeded per chunk, a chunk's offset
// dropped, the last partial chunk skipped.
TEST(SpartaBernoulli, ChunkedDrawIsTheOneDraw) {
  const int64_t d = 10007;
  const double p = 0.05;
  auto generator = at::detail::createCPUGenerator(42);
  const auto one = (at::rand({d}, generator) < p).nonzero().view(-1);
  ASSERT_GT(one.numel(), 400);
  for (int64_t chunk : {int64_t{333}, int64_t{1000}, d, int64_t{1} << 22}) {
    EXPECT_TRUE(torch::equal(bernoulli_indices(d, p, 42, chunk), one)) << chunk;
    EXPECT_EQ(bernoulli_count(d, p, 42, chunk), one.numel()) << chunk;
  }
}

TEST_P(SpartaReference, MatchesTheEngineNodeByNode) {
  const SpartaCase& c = GetParam();
  const Scenario s = scenario(c.nodes, c.steps, c.topology, c.optimizer, sparta_yaml(c));
  const auto neighbours = neighbours_of(s);
  const auto weights = metropolis_weights(neighbours);
  const auto sizes = tensor_sizes(s);
  ASSERT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), kD);
  const auto order = seeded_permutation(kD, stream_seed(s.seed, "sparta_order"));

  auto ref = replicas(s);
  struct InFlight {
    int due;  // lands before this step starts
    torch::Tensor index;
    std::vector<torch::Tensor> sent;
  };
  std::vector<InFlight> flight;
  double moved = 0;  // the largest change an exchange made, to show it is far above tolerance
  std::set<int64_t> rounds_wrapped;
  for (int t = 0; t < c.steps; ++t) {
    for (auto& r : ref) local_step(*r, s);
    if ((t + 1) % c.interval == 0) {
      const int64_t round = (t + 1) / c.interval - 1;
      InFlight f;
      f.due = std::min(c.steps, t + 1 + c.delay);
      f.index = reference_indices(c.selection, round, c.p, s.seed, sizes, order);
      for (auto& r : ref) f.sent.push_back(r->parameters().index_select(0, f.index));
      const int64_t k = f.index.numel();
      if ((c.selection == "windows" || c.selection == "shuffled_sequential") && (round * k) % kD + k > kD)
        rounds_wrapped.insert(round);
      flight.push_back(std::move(f));
    }
    torch::NoGradGuard no_grad;
    for (auto it = flight.begin(); it != flight.end();) {
      if (it->due > t + 1) {
        ++it;
        continue;
      }
      const auto& sent = it->sent;
      std::vector<torch::Tensor> average(c.nodes);
      for (int i = 0; i < c.nodes; ++i) {
        if (c.exchange == "allreduce") {
          average[i] = torch::zeros_like(sent[i]);
          for (const auto& x : sent) average[i] += x;
          average[i] /= c.nodes;
        } else if (c.exchange == "ring") {
          average[i] = sent[i].clone();
          for (int j : neighbours[i]) average[i] += sent[j];
          average[i] /= static_cast<double>(1 + neighbours[i].size());
        } else {
          average[i] = mix(weights, i, sent);
        }
      }
      for (int i = 0; i < c.nodes; ++i) {
        ref[i]->parameters().index_add_(0, it->index, average[i] - sent[i]);
        moved = std::max(moved, (average[i] - sent[i]).abs().max().item<double>());
      }
      it = flight.erase(it);
    }
  }
  ASSERT_TRUE(flight.empty());

  const EngineRun run = run_engine(s, *data_);
  const double diff = worst(run, ref);
  std::printf("%s: engine vs reference %.3g, largest exchange move %.3g, replica spread %.3g\n", c.name.c_str(), diff,
              moved, spread(ref));
  EXPECT_LT(diff, kTolerance);
  EXPECT_GT(moved, 100 * kTolerance);  // the exchanges are visible at this tolerance
  if (c.selection == "windows" || c.selection == "shuffled_sequential") {
    EXPECT_FALSE(rounds_wrapped.empty()) << "no window wrapped past d: the wrap is untested";
  }
  if (c.index_transport == "broadcast") {
    // Each round, node 0's mask, a byte an element, straight to every other node (EXO Gym's
    // dist.broadcast from rank 0); a node's values leave only once its mask has arrived.
    const int rounds = c.steps / c.interval;
    std::vector<std::vector<double>> mask_arrived(c.nodes);
    std::vector<std::vector<double>> values_sent(c.nodes);
    for (const auto& m : run.record.messages) {
      if (m.kind == "sparse_mask") {
        EXPECT_EQ(m.src, 0);
        EXPECT_EQ(m.bytes, static_cast<uint64_t>(kD));
        mask_arrived[m.dst].push_back(m.t_recv);
      } else if (m.kind == "sparse") {
        values_sent[m.src].push_back(m.t_send);
      }
    }
    for (int i = 1; i < c.nodes; ++i) {
      ASSERT_EQ(mask_arrived[i].size(), static_cast<size_t>(rounds)) << "node " << i;
      std::sort(mask_arrived[i].begin(), mask_arrived[i].end());
      std::sort(values_sent[i].begin(), values_sent[i].end());
      ASSERT_FALSE(values_sent[i].empty());
      // Round j's values go between mask j's arrival and mask j + 1's, and each round sends some.
      EXPECT_GE(values_sent[i].front(), mask_arrived[i].front()) << "node " << i << " sent values before its mask";
      for (int j = 0; j < rounds; ++j) {
        const double next = j + 1 < rounds ? mask_arrived[i][j + 1] : 1e300;
        EXPECT_TRUE(std::any_of(values_sent[i].begin(), values_sent[i].end(),
                                [&](double t) { return t >= mask_arrived[i][j] && t < next; }))
            << "node " << i << " round " << j;
      }
    }
  }
}

// Every selection and exchange, interval > 1, delay 1 and 2, on a ring, a line, a star and
// an irregular random graph. p 0.3 makes the sequential windows wrap within a few rounds.
const std::vector<SpartaCase> kSpartaCases = {
    {"random_allreduce_adamw", 4, 6, "ring", kAdamW, "random", "allreduce", 0.005, 1, 0},
    {"random_allreduce_interval3_sgd_momentum", 3, 9, "ring", "{name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0}",
     "random", "allreduce", 0.05, 3, 0},
    {"shuffled_sequential_allreduce_interval2", 4, 10, "ring", kAdamW, "shuffled_sequential", "allreduce", 0.3, 2, 0},
    {"windows_ring_random_graph_interval3", 6, 12, "erdos_renyi", kAdamW, "windows", "ring", 0.3, 3, 0},
    {"layerwise_gossip_random_graph", 6, 8, "erdos_renyi", kAdamW, "layerwise", "gossip", 0.005, 1, 0},
    {"random_allreduce_delay1", 4, 6, "ring", kAdamW, "random", "allreduce", 0.05, 1, 1},
    {"random_gossip_line_delay2", 4, 7, "line", kAdamW, "random", "gossip", 0.3, 1, 2},
    {"windows_gossip_line_interval2_delay2", 4, 10, "line", kAdamW, "windows", "gossip", 0.3, 2, 2},
    {"shuffled_sequential_ring_star_interval2_delay1", 4, 10, "star", kAdamW, "shuffled_sequential", "ring", 0.3, 2, 1},
    {"layerwise_gossip_star_sgd", 5, 7, "star", "{name: sgd, lr: 0.05, weight_decay: 0}", "layerwise", "gossip", 0.05,
     1, 0},
    {"random_gossip_line", 4, 6, "line", kAdamW, "random", "gossip", 0.05, 1, 0},
    // EXO Gym's two: a Bernoulli mask at its default p, and its partitions cycling (p 0.3: 4
    // parts, a new partition every 4 rounds).
    {"bernoulli_allreduce_adamw", 4, 6, "ring", kAdamW, "bernoulli", "allreduce", 0.005, 1, 0},
    {"partitioned_allreduce_interval2", 4, 12, "ring", kAdamW, "partitioned", "allreduce", 0.3, 2, 0},
    {"bernoulli_gossip_line_delay1", 4, 7, "line", kAdamW, "bernoulli", "gossip", 0.05, 1, 1},
    {"layerwise_ring_line_interval2_delay2", 3, 14, "line", kAdamW, "layerwise", "ring", 0.05, 2, 2},
    // The indices as EXO Gym moves them: node 0's draw, broadcast as a mask before the values.
    {"bernoulli_allreduce_broadcast", 4, 6, "ring", kAdamW, "bernoulli", "allreduce", 0.005, 1, 0, "broadcast"},
    {"random_ring_line_broadcast_interval2", 4, 8, "line", kAdamW, "random", "ring", 0.05, 2, 0, "broadcast"},
};
INSTANTIATE_TEST_SUITE_P(Cases, SpartaReference, ::testing::ValuesIn(kSpartaCases),
                         [](const ::testing::TestParamInfo<SpartaCase>& i) { return i.param.name; });

// Each selection's indices against its definition, on the real MLP's tensors (784-256-128-10,
// d = 235146) at the default p = 0.005: k = round(1175.73) = 1176. interval 2, so steps 2r
// and 2r + 1 both belong to round r.
TEST(SpartaIndices, EachSelectionFollowsItsDefinition) {
  const std::vector<int64_t> sizes = {784 * 256, 256, 256 * 128, 128, 128 * 10, 10};
  const int64_t d = 235146, k = 1176;
  ASSERT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), d);
  const uint64_t seed = 7;
  const int rounds = static_cast<int>((d + k - 1) / k);  // 200: the last window wraps past d
  ASSERT_GT(rounds * k, d);
  auto check_sorted_distinct_in = [](const torch::Tensor& ix, int64_t lo, int64_t hi) {
    ASSERT_EQ(ix.scalar_type(), torch::kInt64);
    ASSERT_GT(ix.numel(), 0);
    EXPECT_GE(ix.min().item<int64_t>(), lo);
    EXPECT_LT(ix.max().item<int64_t>(), hi);
    if (ix.numel() > 1) EXPECT_TRUE((ix.slice(0, 1) > ix.slice(0, 0, -1)).all().item<bool>());  // strictly increasing
  };
  for (const auto& [chosen, selection] : EnumNames<SpartaSelection>::all()) {
    SCOPED_TRACE(selection);
    SparseExchangeOptions o;
    o.p = 0.005;
    o.selection = chosen;
    o.interval = 2;
    const SparseExchange ex(3, seed, {{1, 2}, {0, 2}, {0, 1}}, sizes, o);
    const auto order = seeded_permutation(d, stream_seed(seed, "sparta_order"));
    std::vector<bool> covered(d, false);
    std::set<size_t> tensors_visited;
    std::set<int64_t> counts;
    for (int r = 0; r < rounds; ++r) {
      const auto ix = ex.indices(2 * r);
      ASSERT_TRUE(torch::equal(ix, ex.indices(2 * r + 1))) << "round " << r;
      if (selection == "layerwise") {
        // Tensor r mod 6 alone, with its own round(p size), at least one.
        const size_t t = static_cast<size_t>(r) % sizes.size();
        const int64_t first = std::accumulate(sizes.begin(), sizes.begin() + t, int64_t{0});
        const std::vector<int64_t> per_tensor = {1004, 1, 164, 1, 6, 1};  // round(0.005 x size), min 1
        check_sorted_distinct_in(ix, first, first + sizes[t]);
        EXPECT_EQ(ix.numel(), per_tensor[t]) << "round " << r;
        tensors_visited.insert(t);
        if (r < 12) {
          EXPECT_TRUE(
              torch::equal(ix - first, seeded_indices(sizes[t], per_tensor[t], stream_seed(seed, "sparta", r))));
        }
        continue;
      }
      if (selection == "bernoulli") {
        // Each element kept when its seeded uniform draw is below p (reference_indices above): a
        // count near p d that varies.
        check_sorted_distinct_in(ix, 0, d);
        if (r < 12)
          EXPECT_TRUE(torch::equal(ix, reference_indices(selection, r, 0.005, seed, sizes, order))) << "round " << r;
        EXPECT_NEAR(static_cast<double>(ix.numel()), 0.005 * d, 6 * std::sqrt(0.005 * d)) << "round " << r;
        counts.insert(ix.numel());
        continue;
      }
      if (selection == "partitioned") {
        // Per tensor: P = ceil(1 / p) = 200 parts, at most the tensor's size (10 for the last
        // bias: one element a round there); round r takes part r mod P of its cycle's partition
        // (reference_indices above). Over a cycle every index is covered.
        const auto want = reference_indices(selection, r, 0.005, seed, sizes, order);
        EXPECT_TRUE(torch::equal(ix, want)) << "round " << r;
        for (int64_t i : std::vector<int64_t>(want.data_ptr<int64_t>(), want.data_ptr<int64_t>() + want.numel()))
          covered[i] = true;
        continue;
      }
      check_sorted_distinct_in(ix, 0, d);
      ASSERT_EQ(ix.numel(), k);
      if (selection == "random") {
        if (r < 12) EXPECT_TRUE(torch::equal(ix, seeded_indices(d, k, stream_seed(seed, "sparta", r))));
        if (r > 0) EXPECT_FALSE(torch::equal(ix, ex.indices(2 * r - 2)));
        continue;
      }
      // Window r: positions r k ... r k + k - 1 modulo d, of 0..d-1 or of the shuffle.
      std::vector<int64_t> want;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t position = (r * k + i) % d;
        want.push_back(selection == "windows" ? position : order[position]);
      }
      std::sort(want.begin(), want.end());
      EXPECT_TRUE(torch::equal(ix, torch::tensor(want, torch::kInt64))) << "round " << r;
      for (int64_t i : std::vector<int64_t>(ix.data_ptr<int64_t>(), ix.data_ptr<int64_t>() + ix.numel()))
        covered[i] = true;
    }
    if (selection == "windows") {
      // The last window wraps: its end past d continues at 0.
      const auto last = ex.indices(2 * (rounds - 1));
      EXPECT_EQ(last[0].item<int64_t>(), 0);
      EXPECT_EQ(last[-1].item<int64_t>(), d - 1);
      EXPECT_EQ(last.lt((rounds - 1) * k).sum().item<int64_t>(), (rounds * k) - d);
    }
    if (selection == "windows" || selection == "shuffled_sequential" || selection == "partitioned") {
      EXPECT_EQ(std::count(covered.begin(), covered.end(), true), d) << "a cycle of rounds covers every index";
    }
    if (selection == "bernoulli") EXPECT_GT(counts.size(), 1u) << "the count should vary from round to round";
    if (selection == "layerwise") EXPECT_EQ(tensors_visited.size(), sizes.size());
  }
}

// ---- gossip -----------------------------------------------------------------------------

struct GossipCase {
  std::string name;
  int nodes, steps;
  std::string topology, optimizer;
};

void PrintTo(const GossipCase& c, std::ostream* os) { *os << c.name; }

class GossipReference : public Reference, public ::testing::WithParamInterface<GossipCase> {};

// Decentralized SGD with Metropolis-Hastings weights W, in the order the code states (local
// step, then mix): Koloskova et al., "A Unified Theory of Decentralized SGD", ICML 2020,
// Algorithm 1: x_i^{t+1/2} = x_i^t - (local optimizer step), x_i^{t+1} = sum_j W_ij x_j^{t+1/2}.
// (Lian et al.'s D-PSGD, NeurIPS 2017, Algorithm 1, instead applies the gradient taken at
// x_i^t to the mix of the x_j^t; the two differ by W acting on the step.)
TEST_P(GossipReference, MatchesTheEngineNodeByNode) {
  const GossipCase& c = GetParam();
  const Scenario s = scenario(c.nodes, c.steps, c.topology, c.optimizer, "{name: gossip}");
  const auto neighbours = neighbours_of(s);
  const auto w = metropolis_weights(neighbours);
  auto ref = replicas(s);
  for (int t = 0; t < c.steps; ++t) {
    for (auto& r : ref) local_step(*r, s);
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> half;
    for (auto& r : ref) half.push_back(r->parameters().clone());
    for (int i = 0; i < c.nodes; ++i) ref[i]->parameters().copy_(mix(w, i, half));
  }
  const EngineRun run = run_engine(s, *data_);
  const double diff = worst(run, ref);
  std::printf("gossip %s: engine vs reference %.3g, replica spread %.3g\n", c.name.c_str(), diff, spread(ref));
  EXPECT_LT(diff, kTolerance);
  if (c.topology != "star") EXPECT_GT(spread(ref), 100 * kTolerance);  // mixing has not made them one
}

const std::vector<GossipCase> kGossipCases = {
    {"line_adamw", 4, 5, "line", kAdamW},
    {"star_adamw", 5, 4, "star", kAdamW},
    {"random_graph_adamw", 6, 5, "erdos_renyi", kAdamW},
    {"random_graph_sgd_momentum", 6, 5, "erdos_renyi", "{name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0}"},
};
INSTANTIATE_TEST_SUITE_P(Cases, GossipReference, ::testing::ValuesIn(kGossipCases),
                         [](const ::testing::TestParamInfo<GossipCase>& i) { return i.param.name; });

// The graphs the gossip cases use, as the test reads them: the random one is irregular (so
// max(deg i, deg j) matters), the line's ends have degree 1, and the star's hub is a switch.
TEST(ReferenceTopologies, RandomGraphIsIrregularAndTheStarIsCompleteThroughItsSwitch) {
  const Scenario er = scenario(6, 1, "erdos_renyi", kAdamW, "{name: gossip}");
  const Topology g = build_topology(topology_spec(er));
  ASSERT_EQ(g.num_vertices(), 6);  // hosts only, no switches
  const auto nb = graph_neighbours(g);
  std::set<size_t> degrees;
  for (const auto& n : nb) degrees.insert(n.size());
  std::printf("erdos_renyi (seed 11, p 0.5) degrees:");
  for (const auto& n : nb) std::printf(" %zu", n.size());
  std::printf("\n");
  EXPECT_GE(degrees.size(), 3u) << "degrees too alike: max(deg i, deg j) would hardly matter";
  EXPECT_LT(*degrees.begin(), 5u) << "complete graph";

  const auto line = graph_neighbours(build_topology(topology_spec(scenario(4, 1, "line", kAdamW, "{name: gossip}"))));
  EXPECT_EQ(line, (std::vector<std::vector<int>>{{1}, {0, 2}, {1, 3}, {2}}));

  // The star: hosts 0..4 each linked only to switch vertex 5. The switch trains nothing, so
  // the neighbour exchange is among hosts, and each host reaches every other through the
  // switch without passing another host: the exchange graph is complete (Metropolis weights
  // 1/5 each, self included), which is also what host_neighbours, the engine's source, says.
  const Topology star = build_topology(topology_spec(scenario(5, 1, "star", kAdamW, "{name: gossip}")));
  ASSERT_EQ(star.num_vertices(), 6);
  EXPECT_EQ(star.graph[5].kind, VertexKind::Switch);
  EXPECT_EQ(star.num_links(), 5);
  const std::vector<std::vector<int>> complete = {{1, 2, 3, 4}, {0, 2, 3, 4}, {0, 1, 3, 4}, {0, 1, 2, 4}, {0, 1, 2, 3}};
  EXPECT_EQ(graph_neighbours(star), complete);
  EXPECT_EQ(host_neighbours(star), complete);
  EXPECT_EQ(host_neighbours(g), nb);  // and the engine's source agrees on the random graph
}

// ---- DeMo -------------------------------------------------------------------------------

// The transform against the explicit cosine matrix, for even and odd lengths (Makhoul's
// reordering differs by parity), and back.
TEST(DemoTransform, DctAndIdctAreTheOrthonormalCosineMatrix) {
  // By hand for N = 2: C = [[1, 1], [1, -1]] / sqrt(2).
  auto two = dct(torch::tensor({3.0, 1.0}, torch::kFloat64));
  EXPECT_NEAR(two[0].item<double>(), 4.0 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(two[1].item<double>(), 2.0 / std::sqrt(2.0), 1e-15);
  torch::manual_seed(3);
  for (int64_t n : {1, 2, 3, 5, 8, 16, 63, 64}) {
    SCOPED_TRACE(n);
    const auto c = cosine_matrix(n);
    EXPECT_LT((c.matmul(c.t()) - torch::eye(n, torch::kFloat64)).abs().max().item<double>(), 1e-13);
    const auto x = torch::randn({4, n}, torch::kFloat64);
    EXPECT_LT((dct(x) - x.matmul(c.t())).abs().max().item<double>(), 1e-12);
    EXPECT_LT((idct(x) - x.matmul(c)).abs().max().item<double>(), 1e-12);
    EXPECT_LT((idct(dct(x)) - x).abs().max().item<double>(), 1e-12);
    // Float32 in, float32 out, rounded from the exact transform.
    const auto xf = x.to(torch::kFloat32);
    EXPECT_EQ(dct(xf).scalar_type(), torch::kFloat32);
    EXPECT_LT((dct(xf) - dct_rows(xf, c)).abs().max().item<double>(), 1e-6);
    EXPECT_LT((idct(xf) - idct_rows(xf, c)).abs().max().item<double>(), 1e-6);
  }
}

struct DemoCase {
  std::string name;
  int nodes, steps;
  std::string optimizer;  // DeMo uses its lr and weight_decay (the optimizer itself is not stepped)
  double beta;
  int chunk, k;
  bool sign;
  std::string model = "mlp";  // cnn: the default model on Fashion-MNIST, its 4-D conv kernels
};

void PrintTo(const DemoCase& c, std::ostream* os) { *os << c.name; }

class DemoReference : public Reference, public ::testing::WithParamInterface<DemoCase> {};

// The largest divisor of n not above `limit`, by trial from the top.
int64_t largest_divisor_at_most(int64_t n, int64_t limit) {
  int64_t best = 1;
  for (int64_t d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) best = d;
  return best;
}

// DeMo (Peng, Quesnelle, Kingma, arXiv 2411.19870) as its reference optimizer (bloc97/DeMo,
// demo.py) runs it, for each parameter tensor p with gradient g:
//   theta <- (1 - lr wd) theta; delta <- beta delta + lr g;
//   encode: view p as rows x cols (rows = p.size(0) for 2-D and more, after flattening the
//   rest; a 1-D tensor is one row), split rows by h and cols by w, each the largest divisor not
//   above `chunk`; the 2-D orthonormal DCT-II of each h x w block, C_h B C_w^T (a 1-D block is
//   1 x w, and C_1 = [1]); compress: per block, the min(k, h w) coefficients of largest
//   magnitude in the row-major flattening; delta <- delta - decode(what was kept);
//   all-gather every node's pairs; each coefficient is the mean over the nodes that sent it
//   (scatter_reduce "mean", include_self False), the rest 0; decode with C_h^T X C_w;
//   theta <- theta - lr sign(decoded) (without the sign: theta - decoded).
// Top-k ties: float data, so ties have probability ~0, except among exact zeros.
TEST_P(DemoReference, MatchesTheEngineNodeByNode) {
  const DemoCase& c = GetParam();
  std::ostringstream a;
  a << "{name: demo, beta: " << c.beta << ", chunk: " << c.chunk << ", k: " << c.k
    << ", sign: " << (c.sign ? "true" : "false") << "}";
  Scenario s = scenario(c.nodes, c.steps, "ring", c.optimizer, a.str());
  std::unique_ptr<Dataset> own;
  if (c.model == "cnn") {
    s = reference_scenario(
        11, c.nodes, c.steps, topology_yaml("ring"), c.optimizer, a.str(),
        {"workload.model=cnn", "workload.dataset=fashion_mnist", "workload.synthetic={}", "workload.batch_size=8"});
    own = std::make_unique<Dataset>(load_dataset(s));
  }
  const Dataset& data = own ? *own : *data_;
  const double lr = s.optimizer.lr, wd = s.optimizer.weight_decay;

  auto ref = make_replicas(s, data);
  struct Part {
    int64_t offset, rows, cols, h, w, k;
    torch::Tensor ch, cw;  // cosine matrices, float64
  };
  std::vector<Part> parts;
  int64_t offset = 0, sparse_blocks = 0;
  for (const auto& p : trainable_parameters(ref[0]->model())) {
    Part part{offset, p.dim() >= 2 ? p.size(0) : 1, 0, 0, 0, 0, {}, {}};
    part.cols = p.numel() / part.rows;
    part.h = p.dim() >= 2 ? largest_divisor_at_most(part.rows, c.chunk) : 1;
    part.w = largest_divisor_at_most(part.cols, c.chunk);
    part.k = std::min<int64_t>(c.k, part.h * part.w);
    part.ch = cosine_matrix(part.h);
    part.cw = cosine_matrix(part.w);
    if (part.k < part.h * part.w) sparse_blocks += part.rows / part.h * (part.cols / part.w);
    parts.push_back(part);
    offset += p.numel();
  }
  const int64_t d = offset;
  if (c.model == "mlp") ASSERT_EQ(d, kD);
  ASSERT_GT(sparse_blocks, 0) << "every coefficient travels: no top-k to check";
  // [rows, cols] <-> [blocks, h w]; transforms in float64, results rounded to float32.
  auto encode = [](const torch::Tensor& x, const Part& q) {
    auto b = x.to(torch::kFloat64).reshape({q.rows / q.h, q.h, q.cols / q.w, q.w}).permute({0, 2, 1, 3});
    return q.ch.matmul(b).matmul(q.cw.t()).reshape({-1, q.h * q.w}).to(torch::kFloat32);
  };
  auto decode = [](const torch::Tensor& X, const Part& q) {
    auto b = X.to(torch::kFloat64).reshape({q.rows / q.h, q.cols / q.w, q.h, q.w});
    return q.ch.t().matmul(b).matmul(q.cw).permute({0, 2, 1, 3}).reshape({q.rows, q.cols}).to(torch::kFloat32);
  };

  // The sign of an update that is 0 but for rounding (every node's gradient of a dead unit is
  // 0, and every coefficient of its block travels) is the sign of float noise, which two
  // correct transforms need not share; such elements are compared apart.
  constexpr double kRoundingNoise = 1e-10;
  auto undetermined = torch::zeros({d}, torch::kBool);
  std::vector<torch::Tensor> delta;  // each node's residual (its own storage)
  for (int i = 0; i < c.nodes; ++i) delta.push_back(torch::zeros({d}));
  for (int t = 0; t < c.steps; ++t) {
    std::vector<torch::Tensor> sum, count;  // per part: the kept coefficients summed over nodes, and how many sent each
    for (const auto& q : parts) {
      sum.push_back(torch::zeros({q.rows / q.h * (q.cols / q.w), q.h * q.w}, torch::kFloat64));
      count.push_back(torch::zeros_like(sum.back()));
    }
    for (int i = 0; i < c.nodes; ++i) {
      ref[i]->forward_backward(ref[i]->next_batch(data, s.workload.batch_size));
      torch::NoGradGuard no_grad;
      delta[i].mul_(c.beta).add_(ref[i]->gradients() * lr);
      for (size_t j = 0; j < parts.size(); ++j) {
        const Part& q = parts[j];
        auto view = delta[i].slice(0, q.offset, q.offset + q.rows * q.cols).view({q.rows, q.cols});
        const auto coefficients = encode(view, q);
        // The k largest |coefficient| of each block, found by sorting (not topk).
        const auto keep = coefficients.abs().argsort(1, /*descending=*/true).slice(1, 0, q.k);
        const auto kept = torch::zeros_like(coefficients).scatter(1, keep, coefficients.gather(1, keep));
        view.sub_(decode(kept, q));
        sum[j].scatter_add_(1, keep, coefficients.gather(1, keep).to(torch::kFloat64));
        count[j].scatter_add_(1, keep, torch::ones_like(keep, torch::kFloat64));
      }
    }
    torch::NoGradGuard no_grad;
    for (auto& r : ref) r->parameters().mul_(1.0 - lr * wd);
    for (size_t j = 0; j < parts.size(); ++j) {
      const Part& q = parts[j];
      const auto mean = torch::where(count[j] > 0, sum[j] / count[j].clamp_min(1), torch::zeros_like(sum[j]));
      const auto decoded = decode(mean.to(torch::kFloat32), q).reshape(-1);
      undetermined.slice(0, q.offset, q.offset + q.rows * q.cols).logical_or_(decoded.abs() < kRoundingNoise);
      for (auto& r : ref) {
        auto p = r->parameters().slice(0, q.offset, q.offset + q.rows * q.cols);
        if (c.sign)
          p.sub_(decoded.sign() * lr);
        else
          p.sub_(decoded);
      }
    }
  }
  // The engine itself, to read each node's residual as well (its algorithm state).
  MemoryRecorder record;
  Engine engine(s, data);
  ASSERT_EQ(engine.run(record).status, testbed::RunStatus::Completed);
  double diff = 0, delta_diff = 0, moved = 0;
  const auto initial = make_replicas(s, data)[0]->parameters();
  const auto determined = undetermined.logical_not();
  for (int i = 0; i < c.nodes; ++i) {
    const auto apart = (engine.replicas()[i]->parameters() - ref[i]->parameters()).abs();
    diff = std::max(diff, apart.masked_select(determined).max().item<double>());
    // An undetermined element moved by lr x (sign noise): at most 2 lr a step.
    EXPECT_LE(apart.max().item<double>(), 2 * s.optimizer.lr * c.steps + kTolerance);
    delta_diff =
        std::max(delta_diff, (engine.algorithm().state(i).tensors.at("delta") - delta[i]).abs().max().item<double>());
    moved = std::max(moved, (ref[i]->parameters() - initial).abs().max().item<double>());
  }
  const int64_t noise = undetermined.sum().item<int64_t>();
  std::printf(
      "demo %s: engine vs reference %.3g (residual %.3g), moved %.3g, replica spread %.3g, %lld of %lld "
      "updates 0 but for rounding\n",
      c.name.c_str(), diff, delta_diff, moved, spread(ref), static_cast<long long>(noise), static_cast<long long>(d));
  EXPECT_LT(noise, d / 20) << "too few updates left to compare";
  EXPECT_LT(diff, kTolerance);
  EXPECT_LT(delta_diff, kTolerance);
  EXPECT_GT(moved, 100 * kTolerance);
  // Every node applies the same update: the replicas stay one model.
  EXPECT_LT(spread(ref), 1e-7);
}

// The MLP's tensors are 64 x 16, 64, 32 x 64, 32, 4 x 32 and 4.
const std::vector<DemoCase> kDemoCases = {
    // The defaults (beta 0.999, chunk 64, k 32, sign) with AdamW's lr 1e-3 and weight decay
    // 0.01: one block per tensor; 32 of 1024, 64, 2048 and 128 coefficients, every one of 32 and 4.
    {"defaults_adamw", 3, 5, kAdamW, 0.999, 64, 32, true},
    // chunk 10 divides no dimension: blocks of 8 x 8 (and 4), several per tensor; k 3 of 64.
    {"beta0.9_chunk10_k3_weight_decay", 4, 5, "{name: sgd, lr: 0.01, weight_decay: 0.1}", 0.9, 10, 3, true},
    // Without the sign the update's size shows, so the mean over senders does too.
    {"no_sign_beta0.95_chunk16_k8", 3, 5, "{name: sgd, lr: 0.05, weight_decay: 0}", 0.95, 16, 8, false},
    // The CNN at the defaults: conv kernels 16 x 25 and 32 x 400 (blocks of 16 x 25 and 32 x 50),
    // the dense 128 x 512 and 10 x 128, over 5 steps.
    {"cnn_defaults_adamw", 3, 5, kAdamW, 0.999, 64, 32, true, "cnn"},
};
INSTANTIATE_TEST_SUITE_P(Cases, DemoReference, ::testing::ValuesIn(kDemoCases),
                         [](const ::testing::TestParamInfo<DemoCase>& i) {
                           std::string n = i.param.name;
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

}  // namespace
}  // namespace reference_sparse
}  // namespace testbed
