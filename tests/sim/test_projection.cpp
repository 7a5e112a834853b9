// The cross-check of projection runs (workload.train false): for every algorithm on the CNN,
// the MLP and the tiny GPT (and some on a small LLaMA; and those that train across replica
// groups under each parallelism), at 4 to 64 nodes, on each network backend, a projection's /train
// time rows, /comm (bytes per step and every message) and summary equal the training run's bit
// for bit. The training run is the independent side: its ops come from real tensors
// (Algorithm::local_step), the projection's from shapes alone (projected_step).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/overlap_slowdown.h"
#include "sim/core/engine/engine.h"
#include "training/algorithms/registry.h"

namespace testbed {
namespace {

struct Case {
  std::string label;      // the test's name
  std::string algorithm;  // the algorithm section, YAML
  bool straggle = false;  // heterogeneous speeds and lognormal stragglers, so nodes drift apart
};

// Every algorithm that runs on the engine, with the options that change its ops' sizes,
// schedule or issue points.
const std::vector<Case>& algorithms() {
  static const std::vector<Case> all = {
      {"ddp_blocking", "{name: ddp, overlap: false}"},
      {"ddp_buckets", "{name: ddp, bucket_mb: 0.05}", true},
      {"lofi", "{name: lofi}"},
      {"local_sgd_sampled", "{name: local_sgd, H: 2, fraction: 0.5}", true},
      {"diloco", "{name: diloco, H: 2}"},
      {"streaming_diloco", "{name: streaming_diloco, H: 4, fragments: 2, tau: 1, outer_dtype: bf16}", true},
      {"sparta_random", "{name: sparta, p: 0.01}"},
      {"sparta_partitioned_ring", "{name: sparta, p: 0.05, selection: partitioned, exchange: ring}"},
      {"sparta_bernoulli_broadcast", "{name: sparta, p: 0.01, selection: bernoulli, index_transport: broadcast}", true},
      {"sparta_layerwise_delayed", "{name: sparta, p: 0.1, selection: layerwise, delay: 1}"},
      {"sparta_diloco", "{name: sparta_diloco, p: 0.01, H: 2}"},
      {"demo", "{name: demo}"},
      {"topk_tensor", "{name: topk, ratio: 0.01}"},
      {"topk_model_warmup", "{name: topk, scope: model, ratio: 0.01, warmup_ratio: 0.1, warmup_steps: 2}"},
      {"signsgd_ef", "{name: signsgd, variant: ef_sign}"},
      {"powersgd", "{name: powersgd, start_iter: 1}", true},
      {"acpsgd", "{name: acpsgd, bucket_mb: 0.01}"},
      {"dear", "{name: dear, bucket_mb: 0.02}", true},
      {"gossip", "{name: gossip}"},
      {"int8", "{name: int8}"},
      {"split", "{name: split, layer: 1, rank: 4}"},
  };
  return all;
}

const char* const kModels[] = {"cnn", "mlp", "gpt"};
const char* const kBackends[] = {"analytical", "flow", "ns3"};
const int kNodes[] = {4, 8, 16, 64};

struct Param {
  Case c;
  std::string model, backend;
  int nodes;
  std::string group = {};  // a replica_group section (its GPUs on hosts of 4), or none
  std::string group_label = {};
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.c.label << " on the " << p.model << ", " << p.nodes << " nodes, " << p.backend << " " << p.group;
}

// Each algorithm on each model; the backend and fleet size rotate so that every algorithm meets
// every backend and every model every backend, at 4 to 64 nodes (ns-3 at most 16: 64 nodes' packets
// would be most of the test's time).
std::vector<Param> params() {
  std::vector<Param> out;
  for (size_t a = 0; a < algorithms().size(); ++a) {
    for (int m = 0; m < 3; ++m) {
      if (algorithms()[a].label == "split" && std::string(kModels[m]) != "gpt") continue;  // cuts transformers only
      const std::string backend = kBackends[(a + m) % 3];
      int nodes = kNodes[(a + 2 * m) % 4];
      if (backend == "ns3") nodes = std::min(nodes, 16);
      out.push_back({algorithms()[a], kModels[m], backend, nodes});
    }
  }
  // The LLaMA decoder's projection takes its shapes from its configuration, never from a built
  // module (training/models/llama.h): those algorithms whose ops follow each tensor's shape check that too.
  for (const char* label : {"ddp_buckets", "diloco", "demo", "powersgd", "acpsgd", "dear", "sparta_partitioned_ring"}) {
    for (size_t a = 0; a < algorithms().size(); ++a)
      if (algorithms()[a].label == label) out.push_back({algorithms()[a], "llama", kBackends[a % 3], 8});
  }
  // Replica groups (training/algorithms/replica_groups.cpp): each parallelism under each
  // algorithm that trains across groups, the models and backends rotating, groups of 2 and 4.
  const char* const parallelisms[] = {"ddp", "zero1", "zero2", "fsdp"};
  const Case across[] = {{"groups_ddp", "{name: ddp}"},
                         {"groups_diloco", "{name: diloco, H: 2}", true},
                         {"groups_local_sgd", "{name: local_sgd, H: 2}"}};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      const std::string model = kModels[(i + j) % 3], parallelism = parallelisms[i];
      const std::string unit = parallelism != "fsdp" ? ""
                               : model == "mlp"      ? ", unit: 'fc*'"
                               : model == "cnn"      ? ", unit: 'conv*'"
                                                     : "";
      const int gpus = (i + j) % 2 ? 2 : 4;
      out.push_back({across[j], model, kBackends[(i + 2 * j) % 3], 8,
                     "{gpus: " + std::to_string(gpus) + ", parallelism: " + parallelism + unit + "}",
                     parallelism + std::to_string(gpus)});
    }
  }
  // BERT, the encoder of reproductions (b) and (c), under the algorithms those compare.
  for (const char* label : {"ddp_buckets", "powersgd", "acpsgd", "dear", "split"}) {
    for (size_t a = 0; a < algorithms().size(); ++a)
      if (algorithms()[a].label == label) out.push_back({algorithms()[a], "bert", kBackends[(a + 1) % 3], 16});
  }
  return out;
}

std::string scenario_yaml(const Param& p, bool train) {
  std::string workload =
      p.model == "gpt" ? "{model: gpt, dataset: brown, batch_size: 2, steps: 5, eval_every: 1000, eval_samples: 4, "
                         "gpt: {preset: tiny, layers: 1, width: 48, heads: 2, context: 24}"
      : p.model == "bert"
          ? "{model: bert, dataset: brown_genres, batch_size: 4, steps: 5, eval_every: 1000, eval_samples: 4, "
            "bert: {preset: tiny, layers: 1, width: 32, heads: 2, sequence: 16}"
      : p.model == "llama"
          ? "{model: llama, dataset: brown, batch_size: 2, steps: 5, eval_every: 1000, eval_samples: 4, "
            "llama: {preset: tiny, layers: 2, width: 64, heads: 4, kv_heads: 2, hidden: 96, context: 24}"
          : "{model: " + p.model + ", batch_size: 8, steps: 5, eval_every: 1000, eval_samples: 16";
  if (!train) workload += ", train: false";
  workload += "}";
  return "name: projection_check\nnodes: " + std::to_string(p.nodes) + "\nthreads: 1\n" +
         (p.group.empty() ? std::string("topology: {kind: ring, link: {bandwidth: 200Mbps, latency: 2ms}}\n")
                          : "topology: {kind: gpu_hosts, gpus_per_host: 4, link: {bandwidth: 200Mbps, latency: 2ms}}\n"
                            "replica_group: " +
                                p.group + "\n") +
         "network: {backend: " + p.backend +
         "}\n"
         "workload: " +
         workload +
         "\n"
         "algorithm: " +
         p.c.algorithm + "\n" +
         (p.c.straggle
              ? "compute: {model: flops, device: rtx4090, speed_min: 0.5, speed_max: 1.5, straggler_sigma: 0.2}\n"
              : "compute: {model: flops, device: a100}\n");
}

// The scenario's data with its test split cut to 64 samples: the training run's final
// evaluation (over the whole split) would otherwise be most of this test's time, and no
// evaluation changes a time, a byte or a message.
const Dataset& dataset(const Scenario& s) {
  static std::map<std::string, std::unique_ptr<Dataset>> cache;
  auto& slot = cache[s.workload.dataset];
  if (!slot) {
    slot = std::make_unique<Dataset>(load_dataset(s));
    slot->test_inputs = slot->test_inputs.slice(0, 0, 64);
    slot->test_targets = slot->test_targets.slice(0, 0, 64);
  }
  return *slot;
}

struct Outcome {
  MemoryRecorder record;
  RunSummary summary;
  RunInfo info;
};

Outcome run(const Scenario& s) {
  Outcome o;
  Engine engine(s, dataset(s));
  o.info = engine.run_info();
  o.summary = engine.run(o.record);
  return o;
}

class Projection : public ::testing::TestWithParam<Param> {};

TEST_P(Projection, EqualsTheTrainingRunBitForBit) {
  const Param& p = GetParam();
  const Scenario trained = parse_scenario(scenario_yaml(p, true), "trained");
  const Scenario projected = parse_scenario(scenario_yaml(p, false), "projected");
  const Outcome t = run(trained), j = run(projected);
  ASSERT_EQ(t.summary.status, testbed::RunStatus::Completed) << t.summary.error;
  ASSERT_EQ(j.summary.status, testbed::RunStatus::Completed) << j.summary.error;
  EXPECT_FALSE(t.info.projection);
  EXPECT_TRUE(j.info.projection);

  // The training run has communication to compare (lofi's one average included).
  ASSERT_FALSE(t.record.messages.empty());
  ASSERT_EQ(j.record.train_rows.size(), t.record.train_rows.size());
  for (size_t i = 0; i < t.record.train_rows.size(); ++i) {
    const TrainRow &a = t.record.train_rows[i], &b = j.record.train_rows[i];
    EXPECT_EQ(b.step, a.step);
    EXPECT_EQ(b.time, a.time) << "step " << a.step;
    EXPECT_EQ(b.compute_time, a.compute_time) << "step " << a.step;
    EXPECT_EQ(b.bytes, a.bytes) << "step " << a.step;
    for (double loss : b.loss) EXPECT_TRUE(std::isnan(loss));  // no sample was seen
  }
  ASSERT_EQ(j.record.messages.size(), t.record.messages.size());
  for (size_t i = 0; i < t.record.messages.size(); ++i) {
    const MessageRecord &a = t.record.messages[i], &b = j.record.messages[i];
    ASSERT_TRUE(a.src == b.src && a.dst == b.dst && a.bytes == b.bytes && a.t_send == b.t_send &&
                a.t_recv == b.t_recv && a.lost_bytes == b.lost_bytes && a.kind == b.kind)
        << "message " << i << ": trained " << a.kind << " " << a.src << "->" << a.dst << " " << a.bytes << " B at "
        << a.t_send << "-" << a.t_recv << ", projected " << b.kind << " " << b.src << "->" << b.dst << " " << b.bytes
        << " B at " << b.t_send << "-" << b.t_recv;
  }
  EXPECT_EQ(j.summary.projected_time_s, t.summary.projected_time_s);
  EXPECT_EQ(j.summary.total_bytes, t.summary.total_bytes);
  EXPECT_EQ(j.summary.steps_completed, t.summary.steps_completed);
  EXPECT_EQ(j.summary.phases_replayed, t.summary.phases_replayed);
  EXPECT_EQ(j.summary.phases_simulated, t.summary.phases_simulated);
  EXPECT_TRUE(j.record.eval_rows.empty());
  EXPECT_FALSE(t.record.eval_rows.empty());
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, Projection, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return info.param.c.label + "_" + info.param.model + "_" + info.param.backend + "_" +
                                  std::to_string(info.param.nodes) + info.param.group_label;
                         });

// Every registered algorithm has a case above (its name in the case's YAML), so one registered
// without this cross-check fails here; one that runs federated refuses a projection instead.
TEST(Projection, EveryRegisteredAlgorithmHasACase) {
  for (const AlgorithmEntry& entry : algorithm_registry()) {
    bool has_case = false;
    for (const Case& c : algorithms())
      has_case |=
          c.algorithm.rfind("{name: " + entry.name + ",", 0) == 0 || c.algorithm == "{name: " + entry.name + "}";
    if (!entry.federated) {
      EXPECT_TRUE(has_case) << entry.name << " has no projection case";
      continue;
    }
    EXPECT_ANY_THROW(
        parse_scenario("algorithm: {name: " + entry.name + "}\nworkload: {train: false, steps: 20}\n", "f.yaml"))
        << entry.name << " runs federated, so a projection of it must be refused";
  }
}

// A collective of more messages than kMessageRowsPerCollective is one row of /comm/messages
// (recorder.h). A blocking ring all-reduce of the MLP over 200 nodes sends 2 x 199 x 200 =
// 79 600 messages a step: each step is one row, src and dst -1, with the ring's bytes (each of
// its 2 (p - 1) steps moves every element once: 2 x 199 x 235 146 x 4). Over 150 nodes (44 700
// a step) every message keeps its row. Slips caught: the limit compared the wrong way, a row
// per rank instead of per collective, bytes not summed, the first send or last arrival lost.
TEST(MessageRows, ACollectiveOfManyMessagesIsOneRow) {
  auto projection = [](int nodes) {
    const Scenario s = parse_scenario("name: one_row\nnodes: " + std::to_string(nodes) +
                                          "\nthreads: 1\n"
                                          "topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}\n"
                                          "network: {backend: analytical}\n"
                                          "workload: {model: mlp, batch_size: 8, steps: 2, train: false}\n"
                                          "algorithm: {name: ddp, overlap: false}\n"
                                          "compute: {model: flops, device: a100}\n",
                                      "one_row");
    return run(s);
  };
  const int64_t parameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
  const Outcome many = projection(200);
  ASSERT_EQ(many.summary.status, testbed::RunStatus::Completed) << many.summary.error;
  ASSERT_EQ(many.record.messages.size(), 2u);
  double previous_end = 0;
  for (size_t i = 0; i < 2; ++i) {
    const MessageRecord& m = many.record.messages[i];
    EXPECT_EQ(m.src, -1);
    EXPECT_EQ(m.dst, -1);
    EXPECT_EQ(m.bytes, uint64_t(2 * 199 * parameters * 4));
    uint64_t step_bytes = 0;
    for (uint64_t b : many.record.train_rows[i].bytes) step_bytes += b;
    EXPECT_EQ(m.bytes, step_bytes);
    EXPECT_EQ(m.lost_bytes, 0u);
    // 398 ring steps of at least a link latency each, after the step's compute.
    EXPECT_GE(m.t_recv - m.t_send, 398 * 0.001);
    EXPECT_GE(m.t_send, previous_end);
    previous_end = m.t_recv;
    EXPECT_FALSE(m.kind.empty());
  }
  const Outcome few = projection(150);
  ASSERT_EQ(few.summary.status, testbed::RunStatus::Completed) << few.summary.error;
  EXPECT_EQ(few.record.messages.size(), size_t(2 * 2 * 149 * 150));
  for (const auto& m : few.record.messages) ASSERT_GE(m.src, 0);
}

// A DDP projection whose bucket rings are timed on lanes (network.md#ring-lanes) against the
// same projection with every message a flow: 200 nodes on a ring of 1 Gb/s, 1 ms links, the
// MLP's gradient in one bucket leaving during backward, 3 steps. Step times, bytes and message
// rows equal to the bit. And by hand: in the first step every node enters at once, so each of
// the ring's 398 steps takes a chunk (1 175 or 1 176 of the 235 146 values, 4 bytes each, 9 002
// wire bytes per 8 948 of payload) at 1 Gb/s plus 1 ms, to a tick a step. Slips caught: lanes taken off the
// flow path's ticks (the first comparison), or the ring timed a chunk too few or too many
// steps, or without the latency (the second).
TEST(RingLanes, AProjectionOnLanesEqualsOneOfFlows) {
  auto projection = [](bool lanes) {
    const Scenario s = parse_scenario(std::string("name: lanes\nnodes: 200\nthreads: 1\n"
                                                  "topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}\n"
                                                  "network: {backend: flow, flow_lanes: ") +
                                          (lanes ? "true" : "false") +
                                          "}\n"
                                          "workload: {model: mlp, batch_size: 8, steps: 3, train: false}\n"
                                          "algorithm: {name: ddp}\n"
                                          "collective: {library: none}\n"  // by hand at line rate
                                          "compute: {model: flops, device: a100}\n",
                                      "lanes");
    return run(s);
  };
  const Outcome lanes = projection(true), flows = projection(false);
  ASSERT_EQ(lanes.summary.status, testbed::RunStatus::Completed) << lanes.summary.error;
  ASSERT_EQ(flows.summary.status, testbed::RunStatus::Completed) << flows.summary.error;
  ASSERT_EQ(lanes.record.train_rows.size(), 3u);
  ASSERT_EQ(flows.record.train_rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lanes.record.train_rows[i].time, flows.record.train_rows[i].time) << "step " << i;
    EXPECT_EQ(lanes.record.train_rows[i].bytes, flows.record.train_rows[i].bytes) << "step " << i;
  }
  ASSERT_EQ(lanes.record.messages.size(), flows.record.messages.size());
  const double wire = 9002.0 / 8948.0, step_low = 1175 * 4 * 8 * wire / 1e9 + 1e-3,
               step_high = 1176 * 4 * 8 * wire / 1e9 + 1e-3;
  for (size_t i = 0; i < lanes.record.messages.size(); ++i) {
    const MessageRecord &a = lanes.record.messages[i], &b = flows.record.messages[i];
    EXPECT_EQ(a.src, -1);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.t_send, b.t_send);
    EXPECT_EQ(a.t_recv, b.t_recv);
    EXPECT_GE(a.t_recv - a.t_send, 398 * step_low - 1e-9);
    // Later steps start as the last one ended at each node: nodes whose last chunk was the
    // shorter send first, up to 398 element times before the rest.
    const double spread = i == 0 ? 0 : 398 * (step_high - step_low);
    EXPECT_LE(a.t_recv - a.t_send, 398 * (step_high + 1e-9) + spread + 1e-9) << "step " << i;
  }
}

// Why a ring whose buffer does not split evenly is never in lockstep (network.md#memoization),
// on ns-3: 4 nodes on a 100 Mb/s ring of 10 ms links, jumbo frames, a synthetic MLP 32-148-10
// (32*296 + 296 + 296*148 + 148 + 148*10 + 10 = 55 214 values) in one bucket. Its ring chunks
// end at floor(k * 55 214 / 4): 13 803, 13 804, 13 803 and 13 804 values, chunks 1 and 3 the
// longer by 4 bytes. Each ring send waits on one receipt, so a rank's step ends at the end of
// one chain of 2(N-1) = 6 sends that carries a single chunk round the ring, begun by the rank
// two along: ranks 1 and 3 end on the longer chunks' chains, each of whose six messages is the
// other's with 4 more bytes in its last packet, 6 * 4 * 8 / 100e6 s = 1 920 ns later a step.
// Each rank starts its next step at its own end, so nothing pulls the pairs back together: from
// step to step ranks 1 and 3 fall 1 920 ns further behind ranks 0 and 2, which keep one step
// time. (The first step is not by this rule: slow start still holds its later messages back
// for ACKs.) The control, hidden 150 (56 560 values, four chunks of 14 140): the ranks end
// together every step and steps replay, so the uneven run's replaying none is the drift's doing.
// Slips caught: chunks all of one size (no skew), a ring step that waits for every rank (the skew
// would not grow), or a send timed without its bytes (no skew).
TEST(RingChains, AnUnevenRingDriftsApartByItsChunksDifference) {
  auto projection = [](int hidden) {
    return run(
        parse_scenario("name: chains\nnodes: 4\nthreads: 1\n"
                       "topology: {kind: ring, link: {bandwidth: 100Mbps, latency: 10ms}}\n"
                       "network: {backend: ns3, transport: tcp, mtu: 9000}\n"
                       "workload: {model: mlp, dataset: synthetic, synthetic: {inputs: 32, hidden: " +
                           std::to_string(hidden) +
                           ", outputs: 10}, batch_size: 8, steps: 6, train: false}\n"
                           "algorithm: {name: ddp, overlap: false}\n"
                           "compute: {model: fixed, step_time: 10ms}\n",
                       "chains"));
  };
  auto ns = [](double seconds) { return std::llround(seconds * 1e9); };
  const Outcome uneven = projection(148);
  ASSERT_EQ(uneven.summary.status, testbed::RunStatus::Completed) << uneven.summary.error;
  const auto& rows = uneven.record.train_rows;
  ASSERT_EQ(rows.size(), 6u);
  for (size_t step = 0; step < rows.size(); ++step) {
    const std::vector<double>& t = rows[step].time;
    ASSERT_EQ(t.size(), 4u);
    EXPECT_EQ(ns(t[2] - t[0]), 0) << "step " << step + 1;
    EXPECT_EQ(ns(t[3] - t[1]), 0) << "step " << step + 1;
    EXPECT_GT(ns(t[1] - t[0]), 0) << "step " << step + 1;
    if (step == 0) continue;
    const std::vector<double>& before = rows[step - 1].time;
    EXPECT_EQ(ns(t[1] - t[0]) - ns(before[1] - before[0]), 1920) << "step " << step + 1;
    if (step >= 2) EXPECT_EQ(ns(t[0] - before[0]), ns(before[0] - rows[step - 2].time[0])) << "step " << step + 1;
  }
  EXPECT_EQ(uneven.summary.phases_replayed, 0);

  const Outcome even = projection(150);
  ASSERT_EQ(even.summary.status, testbed::RunStatus::Completed) << even.summary.error;
  ASSERT_EQ(even.record.train_rows.size(), 6u);
  for (const TrainRow& row : even.record.train_rows) {
    ASSERT_EQ(row.time.size(), 4u);
    for (int rank = 1; rank < 4; ++rank) EXPECT_EQ(ns(row.time[rank] - row.time[0]), 0) << "step " << row.step;
  }
  EXPECT_GT(even.summary.phases_replayed, 0);
}

// The overlap slowdown's sweep (sim/core/compute/overlap_slowdown.h), by hand. Ops leave at 10
// and 50 and hold the stream 20 and 10 ticks; backward ends at 100; s = 0.5. The stream is busy
// on the clock over [10, 30): 20 / 1.5 of the passes, each 1.5 as long, so the second op leaves
// at 50 + (20 / 1.5) x 0.5 = 56.67; it holds the stream to 66.67 (another 10 / 1.5 of the
// passes), and backward ends 0.5 x 20 = 10 ticks late, at 110. Slip caught: every pass from the
// first op to backward's end slowed, whatever the ops' times (the old rule: 145).
TEST(OverlapSlowdown, SlowsOnlyThePassesTheStreamIsBusyBeside) {
  const SlowedPasses slowed = slow_overlapped_passes({10, 50}, {20, 10}, 100, 0.5);
  EXPECT_EQ(slowed.leaves, (std::vector<int64_t>{10, 57}));
  EXPECT_EQ(slowed.compute_end, 110);
  const SlowedPasses none = slow_overlapped_passes({10, 50}, {20, 10}, 100, 0);
  EXPECT_EQ(none.leaves, (std::vector<int64_t>{10, 50}));
  EXPECT_EQ(none.compute_end, 100);
}

// One stream: an op that leaves while the previous one holds it waits, and the stream is busy
// for both in turn. Ops at 10 and 15 of 20 ticks each, s = 1: the second leaves at 20 (5
// passes of ticks at twice the time) and the stream is busy to 10 + 20 + 20 = 50, so 20 ticks
// of passes are slowed and backward ends at 120. An op due at backward's end moves with it.
// Slip caught: the second op's busy time counted from its own leaving (the stream busy to 40,
// backward ending at 115).
TEST(OverlapSlowdown, OpsQueueOnTheNodesOneStream) {
  const SlowedPasses slowed = slow_overlapped_passes({10, 15, 100}, {20, 20, 7}, 100, 1.0);
  EXPECT_EQ(slowed.leaves, (std::vector<int64_t>{10, 20, 120}));
  EXPECT_EQ(slowed.compute_end, 120);
}

// compute.overlap_slowdown in a run, by hand, on a fixed step time T (under `fixed` the update
// takes no share, so backward ends at T), the analytical backend and no library, so that an
// all-reduce of n bytes over 2 ranks takes d = 2 alpha + n x 8 / bandwidth alone, and ResNet-18's
// gradients in 5 MB buckets.
//  - At 100 Gb/s a bucket takes 0.4 ms, far less than the passes between two buckets, so each
//    holds the stream alone: its d on the clock covers d / (1 + s) of passes, delaying what
//    follows by s d / (1 + s). Bucket b leaves at t_b + s / (1 + s) sum_{j<b} d_j, t_b its time
//    without the slowdown, and step 0's compute is T + s / (1 + s) sum d_j over the buckets that
//    leave during backward.
//  - At 1 Gb/s the buckets hold the stream 16 to 40 ms each, longer than the passes between
//    them, to past backward's end: every pass from the first bucket's send t0 is slowed, and
//    step 0's compute is
//    T + s (T - t0).
// Slips caught: the slowdown applied from backward's start instead of the first bucket, to the
// buckets' own times not at all, left out of /train's compute time, or (the old rule) to every
// pass to backward's end at 100 Gb/s, where the stream is idle for most of it.
TEST(OverlapSlowdown, StretchesThePassesBesideTheBucketsOnTheWire) {
  auto projection = [](const std::string& bandwidth, const std::string& slowdown) {
    const Scenario s = parse_scenario(
        "name: slow\nnodes: 2\nthreads: 1\n"
        "topology: {kind: ring, link: {bandwidth: " +
            bandwidth +
            ", latency: 1us}}\n"
            "network: {backend: analytical}\n"
            "workload: {model: resnet18, batch_size: 8, steps: 2, train: false}\n"
            "algorithm: {name: ddp, bucket_mb: 5}\n"
            "collective: {library: none}\n"
            "compute: {model: fixed, step_time: 100ms, overlap_slowdown: " +
            slowdown + "}\n",
        "slow");
    return run(s);
  };
  const double T = 0.1, s = 0.25;
  // Node 0's messages that leave in step 0's backward, by send: a ring of two sends two a
  // bucket, the first at issue, the second once the peer's first has arrived.
  auto step0_sends = [&](const Outcome& o) {
    std::vector<MessageRecord> sent;
    for (const MessageRecord& m : o.record.messages)
      if (m.src == 0 && m.t_send < T) sent.push_back(m);
    std::sort(sent.begin(), sent.end(), [](const auto& a, const auto& b) { return a.t_send < b.t_send; });
    return sent;
  };
  {
    const Outcome plain = projection("100Gbps", "0");
    const Outcome slow = projection("100Gbps", "0.25");
    ASSERT_EQ(plain.summary.status, testbed::RunStatus::Completed) << plain.summary.error;
    ASSERT_EQ(slow.summary.status, testbed::RunStatus::Completed) << slow.summary.error;
    const std::vector<MessageRecord> before = step0_sends(plain), after = step0_sends(slow);
    ASSERT_GE(before.size(), 6u) << "ResNet-18's 44.7 MB in 5 MB buckets: several leave during backward";
    ASSERT_EQ(after.size(), before.size());
    double busy = 0;  // sum of d_j over the buckets before
    for (size_t b = 0; b + 1 < before.size(); b += 2) {
      EXPECT_NEAR(after[b].t_send, before[b].t_send + s / (1 + s) * busy, 1e-9) << "bucket " << b / 2;
      busy += 2 * 1e-6 + static_cast<double>(before[b].bytes + before[b + 1].bytes) * 8 / 100e9;
    }
    EXPECT_DOUBLE_EQ(plain.record.train_rows[0].compute_time[0], T);
    EXPECT_NEAR(slow.record.train_rows[0].compute_time[0], T + s / (1 + s) * busy, 1e-8);
  }
  {
    const Outcome plain = projection("1Gbps", "0");
    const Outcome slow = projection("1Gbps", "0.25");
    ASSERT_EQ(slow.summary.status, testbed::RunStatus::Completed) << slow.summary.error;
    const double t0 = step0_sends(plain).at(0).t_send;
    EXPECT_EQ(step0_sends(slow).at(0).t_send, t0);
    EXPECT_NEAR(slow.record.train_rows[0].compute_time[0], T + s * (T - t0), 1e-9);
  }
}

}  // namespace
}  // namespace testbed
