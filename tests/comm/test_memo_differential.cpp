// Differential test of network-phase memoization: many small scenarios generated from a fixed seed,
// each run with network.memoize on and off, must give bit-identical rows, messages and parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/memo_compare.h"

namespace testbed {
namespace {

// The generator's seed and corpus size: 8 shards of 25 scenarios, so ctest can run the shards in
// parallel and a failure names a shard and a scenario index.
constexpr uint64_t kSeed = 0x6d656d6f64696666ULL;
constexpr int kShards = 8;
constexpr int kPerShard = 25;

// Uniform integer in [lo, hi] from the raw engine (std::uniform_int_distribution is not the same
// on every standard library; this is, so a scenario index names the same scenario everywhere).
int draw(std::mt19937_64& rng, int lo, int hi) {
  return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
}
bool chance(std::mt19937_64& rng, int percent) { return draw(rng, 0, 99) < percent; }
template <class T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& options) {
  return options[static_cast<size_t>(draw(rng, 0, static_cast<int>(options.size()) - 1))];
}

// make_mlp(inputs, hidden, outputs): inputs -> 2 hidden -> hidden -> outputs, with biases.
int64_t mlp_parameters(int64_t inputs, int64_t hidden, int64_t outputs) {
  return inputs * 2 * hidden + 2 * hidden + 2 * hidden * hidden + hidden + hidden * outputs + outputs;
}

struct Generated {
  std::string yaml;
  std::string label;  // a one-line summary for the log
};

// make_mlp's parameter tensors in flat order (weights, then biases, per layer).
std::vector<int64_t> mlp_tensors(int64_t inputs, int64_t hidden, int64_t outputs) {
  return {2 * hidden * inputs, 2 * hidden, hidden * 2 * hidden, hidden, outputs * hidden, outputs};
}

// How a scenario is drawn. `any`: every option, refusals included (stragglers, delayed or
// ops, subsets of nodes, uneven chunks, long round trips, shared links). `repeating`:
// only what memoization accepts, with the fleet in lockstep, so that phases repeat and replays are
// common. `restart`: staggered fragments of a few initial windows on 2-3 nodes whose gaps of one
// and two steps straddle min_rto, so that phases of one plan start after idle times on both sides
// of the restart after idle (ns3_tcp.cpp restart_after_idle), with cwnd grown or halved.
enum class Family { any, repeating, restart };

// One scenario, from the corpus seed and its index alone.
Generated generate(int index) {
  std::mt19937_64 rng(kSeed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1));
  const int f = draw(rng, 0, 99);
  const Family family = f < 45 ? Family::any : f < 85 ? Family::repeating : Family::restart;
  const bool any = family == Family::any, restart = family == Family::restart;

  const int nodes = restart ? draw(rng, 2, 3) : draw(rng, 2, 6);
  // A ring all-reduce on a line or tree shares links between ranks, which then finish at
  // different times and drift.
  const std::string topology = any ? pick<std::string>(rng, {"ring", "line", "star", "mesh", "torus2d", "tree"})
                                   : pick<std::string>(rng, {"ring", "star", "mesh", "torus2d"});
  const std::string bandwidth = pick<std::string>(rng, {"10Mbps", "50Mbps", "100Mbps", "1Gbps", "10Gbps"});
  // Round trips below min_rto / 4 (memoization needs the RTO at min_rto), or, in `any`, some
  // long enough that multi-hop paths are refused.
  const std::string latency = any ? pick<std::string>(rng, {"20us", "200us", "1ms", "2ms", "5ms", "10ms", "20ms"})
                                  : pick<std::string>(rng, {"20us", "200us", "1ms", "2ms"});
  // Small MTUs make messages of many segments: beyond the initial window, cwnd decides timing.
  const int mtu = restart ? pick<int>(rng, {576, 1500}) : pick<int>(rng, {576, 1500, 1500, 9000});
  const double segment = mtu - 52;  // TCP/IP headers (ns3_network.h kTcpIpHeaderBytes)

  // The algorithm, and how its exchanged buffer and its messages scale with the parameters.
  std::ostringstream a;
  int period = 1;              // steps between the exchanges of one buffer
  int fragments = 1;           // streaming_diloco: exchanges per period, of d / fragments each
  double share = 1.0 / nodes;  // of the buffer in one message: a ring chunk
  double wire = 4;             // bytes per element
  double per_parameter = 1;    // buffer elements per parameter
  double sparta_p = 0;         // sparta all-reduce: the fraction of parameters
  bool layerwise = false;      // sparta: a fraction of one tensor per round (a plan per tensor)
  bool neighbour = false;
  const int which = restart ? 30 : draw(rng, 0, 99);
  if (which < 16) {
    // Overlapped: the buckets leave during backward, and the step is still one phase. A model
    // this small is one bucket (PyTorch's first holds 1 MiB), issued as backward ends.
    a << "{name: ddp, overlap: " << (chance(rng, 50) ? "true" : "false") << "}";
  } else if (which < 22) {
    period = draw(rng, 2, 4);
    a << "{name: diloco, H: " << period << "}";
  } else if (which < 48) {
    // Fragment f syncs at offset f H / P: (H, P) = (4, 3) and (5, 3) give gaps of one and two
    // steps, (3, 2) too but its first recorded phase is followed by the long one, (5, 2) gaps of
    // two and three; P dividing H gives equal gaps. A phase followed by a gap of more than one
    // step is not replayed (PhaseRecord::quiet is when the next phase began), so `repeating`
    // keeps to schedules with gaps of one step.
    std::tie(period, fragments) = pick<std::pair<int, int>>(
        rng, restart ? std::vector<std::pair<int, int>>{{5, 3}, {5, 3}, {4, 3}}
             : any   ? std::vector<std::pair<int, int>>{{3, 1}, {2, 2}, {3, 2}, {4, 2}, {5, 2}, {4, 3}, {5, 3}, {6, 3}}
                     : std::vector<std::pair<int, int>>{{2, 2}, {3, 2}, {4, 3}, {5, 3}, {5, 3}, {3, 3}});
    per_parameter = 1.0 / fragments;
    const std::string dtype =
        restart ? "fp32" : pick<std::string>(rng, {"fp32", "fp32", "fp32", "bf16", "bf16", "fp4"});
    wire = dtype == "fp32" ? 4 : dtype == "bf16" ? 2 : 0.5;
    const int tau = !any || chance(rng, 70) ? 0 : 1;  // tau 1 overlaps the sync with a step: refused
    a << "{name: streaming_diloco, H: " << period << ", fragments: " << fragments << ", tau: " << tau
      << ", outer_dtype: " << dtype << "}";
  } else if (which < 66) {
    const double p = pick<double>(rng, {0.05, 0.1, 0.25, 0.5});
    const int delay = !any || chance(rng, 40) ? 0 : draw(rng, 1, 2);  // delayed ops are refused
    period = !any || chance(rng, 60) ? 1 : draw(rng, 2, 3);
    // Layerwise: k of each tensor in turn, a plan per tensor; these split evenly on 2 or 4 nodes.
    const std::string selection = nodes == 2 || nodes == 4 ? pick<std::string>(rng, {"random", "windows", "layerwise"})
                                                           : pick<std::string>(rng, {"random", "windows"});
    layerwise = selection == "layerwise";
    std::string exchange = "allreduce";
    per_parameter = p;
    if (chance(rng, 25)) {
      exchange = pick<std::string>(rng, {"ring", "gossip"});
      neighbour = true;
      share = 1;  // the whole selection to every neighbour
    } else {
      sparta_p = p;
    }
    a << "{name: sparta, p: " << p << ", selection: " << selection << ", delay: " << delay << ", interval: " << period
      << ", exchange: " << exchange << "}";
  } else if (which < 72) {
    period = draw(rng, 1, 3);
    // Half the nodes a round is a subset: refused.
    a << "{name: local_sgd, H: " << period << ", fraction: " << (!any || chance(rng, 50) ? "1" : "0.5") << "}";
  } else if (which < 84) {
    neighbour = true;
    share = 1;
    a << "{name: gossip}";
  } else if (which >= 90) {
    // ACP-SGD (P or Q buckets during backward: a phase) and DeAR (its all-gathers are a round:
    // never a phase), at fusion thresholds that make one bucket or one per tensor or so.
    const std::string bucket = pick<std::string>(rng, {"25", "0.004", "0.0005"});
    if (which < 95) {
      a << "{name: acpsgd, rank: " << draw(rng, 1, 2) << ", bucket_mb: " << bucket << "}";
      per_parameter = 0.2;  // rank-1 or -2 factors of small matrices, and the biases whole
    } else {
      a << "{name: dear, bucket_mb: " << bucket << "}";
    }
  } else {
    const int chunk = pick<int>(rng, {8, 16, 32});
    const int k = draw(rng, 1, chunk / 4);
    // Every rank's pairs: k of each block of up to chunk x chunk (a bias: of chunk), an index and
    // a value each, 12 bytes a pair; about a parameter in chunk^2 / k sends one.
    per_parameter = 2.0 * k / (chunk * chunk);
    wire = 6;
    share = 1;
    a << "{name: demo, chunk: " << chunk << ", k: " << k << "}";
  }

  // The fleet: equal speeds, fixed unequal speeds (phases still repeat, with entry offsets), or,
  // in `any`, stragglers (refused: entry times never repeat). Buffers split evenly unless `any`
  // says otherwise.
  std::string speeds;
  const int fleet = draw(rng, 0, 99);
  if (!restart && fleet >= 60 && (fleet < 85 || !any)) {
    speeds = ", speeds: " + pick<std::string>(rng, {"[1, 0.5]", "[1, 0.8, 1.25]", "[2, 1]", "[1, 1, 0.75]"});
  } else if (any && fleet >= 85) {
    speeds = ", straggler_sigma: 0.1";
  }
  bool even = !any || chance(rng, 60);

  // Step time from 1 ms to 400 ms, mostly near min_rto (0.2 s): from 0.1 s to 0.2 s gaps of one
  // step stay below the RTO and gaps of two exceed it; from 0.2 s to 0.4 s every idle restarts
  // slow start and halves cwnd once.
  double step_time;
  if (restart) {
    step_time = pick<double>(rng, {0.11, 0.12, 0.13, 0.15, 0.17, 0.19});
  } else if (chance(rng, 75)) {
    step_time = pick<double>(
        rng, {0.001, 0.005, 0.02, 0.05, 0.08, 0.11, 0.12, 0.13, 0.15, 0.17, 0.19, 0.2, 0.21, 0.25, 0.3, 0.35, 0.4});
  } else {
    step_time = std::round(std::exp(std::log(0.001) +
                                    (std::log(0.4) - std::log(0.001)) * static_cast<double>(rng() % 1000000) / 1e6) *
                           1e4) /
                1e4;
  }

  // The model: messages from a third of an initial window (10 segments) to several, no more
  // packets a phase than keep the corpus fast (a ring all-reduce moves 2 (n - 1) messages a
  // rank; exchanges and gathers about as many), buffers that split evenly when `even`.
  const double windows = restart ? pick<double>(rng, {0.5, 1, 1.5}) : pick<double>(rng, {0.3, 0.8, 1.5, 1.5, 3, 5});
  const double message_bytes = windows * 10 * segment;
  int64_t target = static_cast<int64_t>(message_bytes / wire / share / per_parameter);
  const double packets = 2.0 * nodes * (nodes - 1) * message_bytes / segment;
  if (packets > 600) target = static_cast<int64_t>(static_cast<double>(target) * 600 / packets);
  target = std::clamp<int64_t>(target, 200, restart ? 30000 : 12000);
  int inputs = 0, hidden = 0, outputs = 0;
  for (int attempt = 0;; ++attempt) {
    // Some cannot split evenly (layerwise selections of a few elements of a bias): take uneven.
    if (attempt == 20000) even = false;
    if (attempt == 40000) throw std::logic_error("no model size near " + std::to_string(target));
    outputs = draw(rng, 2, 10);
    hidden = draw(rng, 4, 120);
    // d = hidden (2 inputs + 2 hidden + 3 + outputs) + outputs, solved for inputs.
    const int64_t twice_inputs = (target - outputs) / hidden - 2 * hidden - 3 - outputs;
    inputs = static_cast<int>(std::clamp<int64_t>(twice_inputs / 2 + draw(rng, -2, 2), 2, 256));
    const int64_t d = mlp_parameters(inputs, hidden, outputs);
    if (d < target * 8 / 10 || d > target * 12 / 10) continue;
    if (!even) break;
    bool ok = d % (int64_t{fragments} * nodes) == 0;
    if (sparta_p > 0 && !layerwise) ok = ok && std::llround(sparta_p * static_cast<double>(d)) % nodes == 0;
    if (sparta_p > 0 && layerwise) {
      for (int64_t size : mlp_tensors(inputs, hidden, outputs))
        ok = ok && std::clamp<int64_t>(std::llround(sparta_p * static_cast<double>(size)), 1, size) % nodes == 0;
    }
    if (ok) break;
  }
  // Enough exchanges for phases to repeat: the first opens the connections, the next grow cwnd.
  const int steps = restart ? 24 : std::clamp((9 * period + fragments - 1) / fragments + 1, 12, 22);

  std::ostringstream y;
  y << "name: memo_diff_" << index << "\n"
    << "seed: " << draw(rng, 0, 999) << "\n"
    << "nodes: " << nodes << "\n"
    << "threads: 1\n"
    << "topology: {kind: " << topology << ", link: {bandwidth: " << bandwidth << ", latency: " << latency << "}}\n"
    << "network: {mtu: " << mtu;
  if (!restart && chance(rng, 20)) y << ", slow_start_after_idle: false";
  if (any && chance(rng, 20)) y << ", min_rto: " << pick<std::string>(rng, {"100ms", "300ms"});
  // Short device queues: losses set ssthresh.
  if (!restart && chance(rng, 12)) y << ", queue_packets: " << draw(rng, 4, 16);
  if (neighbour && chance(rng, 20)) y << ", transport: udp";
  y << "}\n";
  // A neighbour exchange runs no collective, and would refuse the key (drawn first all the same,
  // so that the corpus's other draws stay as they were).
  const bool slices = !restart && chance(rng, 10) && !neighbour;
  y << "workload: {model: mlp, dataset: synthetic, synthetic: {inputs: " << inputs << ", hidden: " << hidden
    << ", outputs: " << outputs << ", train_samples: " << 64 * nodes << ", test_samples: 64},\n"
    << "           batch_size: 8, steps: " << steps << ", eval_every: " << (steps + 1) / 2 << "}\n"
    << "compute: {model: fixed, step_time: " << step_time << "s" << speeds << "}\n"
    << "algorithm: " << a.str() << "\n";
  // A collective library's costs (drawn after everything else, so that the corpus's other draws
  // stay as they were): NCCL's preset, or latencies and a rate below the link's of their own.
  std::string library;
  const int lib = draw(rng, 0, 99);
  if (lib < 15) {
    library = "library: nccl";
  } else if (lib < 35) {
    library = "launch_latency: " + pick<std::string>(rng, {"0us", "20us"}) +
              ", message_latency: " + pick<std::string>(rng, {"5us", "50us", "200us"});
    if (chance(rng, 50)) library += ", bandwidth_share: " + pick<std::string>(rng, {"0.5", "0.8"});
  }
  if (slices || !library.empty()) {
    y << "collective: {" << (slices ? "slices: 2" : "") << (slices && !library.empty() ? ", " : "") << library << "}\n";
  }
  Generated g;
  g.yaml = y.str();
  std::ostringstream label;
  label << "#" << index << " "
        << (any       ? "any"
            : restart ? "restart"
                      : "repeating")
        << " " << a.str() << " n=" << nodes << " " << topology << " " << bandwidth << "/" << latency << " mtu " << mtu
        << " step " << step_time << speeds << " d=" << mlp_parameters(inputs, hidden, outputs)
        << (even ? "" : " uneven") << (library.empty() ? "" : " {" + library + "}");
  g.label = label.str();
  return g;
}

// Totals over the shards run in this process (the gtest binary run whole prints the corpus's).
struct Totals {
  int64_t scenarios = 0, failed = 0, replayed = 0, simulated = 0, scenarios_with_replays = 0;
};
Totals corpus;

class MemoDifferential : public ::testing::TestWithParam<int> {
 protected:
  static void TearDownTestSuite() {
    std::printf(
        "[memo-diff] corpus: %lld scenarios, %lld failed, %lld with replays; phases replayed %lld, simulated %lld\n",
        static_cast<long long>(corpus.scenarios), static_cast<long long>(corpus.failed),
        static_cast<long long>(corpus.scenarios_with_replays), static_cast<long long>(corpus.replayed),
        static_cast<long long>(corpus.simulated));
  }
};

TEST_P(MemoDifferential, MemoizedRunsEqualSimulatedOnes) {
  const int shard = GetParam();
  int64_t replayed = 0, simulated = 0, with_replays = 0, failed = 0;
  for (int i = shard * kPerShard; i < (shard + 1) * kPerShard; ++i) {
    const Generated g = generate(i);
    Scenario memo_on, memo_off;
    try {
      memo_on = parse_scenario(g.yaml, "generated", {"network.memoize=true"});
      memo_off = parse_scenario(g.yaml, "generated", {"network.memoize=false"});
    } catch (const std::exception& e) {
      ADD_FAILURE() << g.label << ": the generator wrote a bad scenario: " << e.what() << "\n" << g.yaml;
      continue;
    }
    const Dataset data = load_dataset(memo_on);
    const Outcome on = run_outcome(memo_on, data);
    const Outcome off = run_outcome(memo_off, data);
    // Both must complete: a generator that writes failing scenarios tests nothing.
    EXPECT_EQ(off.summary.status, testbed::RunStatus::Completed) << g.label << ": " << off.summary.error << "\n"
                                                                 << g.yaml;
    EXPECT_EQ(off.summary.phases_replayed, 0) << g.label;
    const std::string diff = differences(on, off);
    if (!diff.empty()) {
      ++failed;
      ADD_FAILURE() << g.label << ": memoize on and off differ (replayed " << on.summary.phases_replayed << " of "
                    << on.summary.phases_replayed + on.summary.phases_simulated << " phases)\n"
                    << diff << "Reproduce: save as s.yaml, then `testbed run s.yaml --set network.memoize=true` and "
                    << "`... =false` and h5diff the results:\n"
                    << g.yaml;
    }
    std::printf("[memo-diff] %s: replayed %lld, simulated %lld%s\n", g.label.c_str(),
                static_cast<long long>(on.summary.phases_replayed), static_cast<long long>(on.summary.phases_simulated),
                diff.empty() ? "" : "  DIFFERS");
    replayed += on.summary.phases_replayed;
    simulated += on.summary.phases_simulated;
    with_replays += on.summary.phases_replayed > 0;
  }
  std::printf(
      "[memo-diff] shard %d: %d scenarios (%lld with replays), %lld failed; phases replayed %lld, simulated %lld\n",
      shard, kPerShard, static_cast<long long>(with_replays), static_cast<long long>(failed),
      static_cast<long long>(replayed), static_cast<long long>(simulated));
  corpus.scenarios += kPerShard;
  corpus.failed += failed;
  corpus.replayed += replayed;
  corpus.simulated += simulated;
  corpus.scenarios_with_replays += with_replays;
  // The comparison proves something only where phases were replayed: every shard must replay
  // at least 40 phases (of about 270), in at least 6 of its 25 scenarios.
  EXPECT_GE(replayed, 40) << "too few phases were replayed for the comparison to mean anything";
  EXPECT_GE(with_replays, 6) << "too few scenarios replayed anything";
}

INSTANTIATE_TEST_SUITE_P(Shards, MemoDifferential, ::testing::Range(0, kShards));

}  // namespace
}  // namespace testbed
