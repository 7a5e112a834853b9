// What guards a run before and while it runs: the memory estimate it is refused on (its parts
// against hand-counted vectors, the refusal against made-up machines) and the one-sentence
// text of a failure inside LibTorch.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "comm/plans/collectives.h"
#include "sim/config/scenario.h"
#include "sim/config/scenario_loader.h"
#include "sim/core/error_text.h"
#include "sim/core/memory_estimate.h"
#include "topologies/builders.h"
#include "training/data/dataset.h"

namespace testbed {
namespace run_guards {  // its own names: workload_tests compiles as one unity file
namespace {

constexpr int64_t kParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;  // the MLP

Dataset small_data() {
  Dataset d;
  d.train_inputs = torch::zeros({100, 784});                      // 313600 bytes
  d.train_targets = torch::zeros({100}, torch::kInt64);           // 800
  d.test_inputs = torch::zeros({20, 784});                        // 62720
  d.test_targets = torch::zeros({20}, torch::kInt64);             // 160
  d.train_groups = torch::zeros({100}, torch::kInt64);            // 800
  d.test_variants.push_back({"noise", torch::zeros({20, 784})});  // 62720
  return d;
}
constexpr double kDataBytes = 313600 + 800 + 62720 + 160 + 800 + 62720;

// The estimate of a scenario, with its own topology and the MLP's size (6 parameter tensors).
MemoryEstimate estimate(const std::string& yaml, const Dataset& data) {
  const Scenario s = parse_scenario(yaml, "s.yaml");
  return estimate_memory(s, data, {kParameters, 6}, build_topology(topology_spec(s)));
}

// The measured constants the estimate uses (docs/guarantees.md), written out here.
constexpr double kReplicaObjects = 100e3, kVertex = 19e3, kLink = 14e3, kConnection = 160e3;

TEST(MemoryEstimate, CountsEachReplicasVectors) {
  // Per node: parameters, gradients, one op buffer, one eval snapshot, plus the optimizer's and
  // the algorithm's.
  struct Case {
    std::string yaml;
    int vectors;
  };
  const std::vector<Case> cases = {
      {"nodes: 7\n", 2 + 2 + 2},                                 // adamw's two moments
      {"nodes: 7\nalgorithm: {name: diloco}\n", 2 + 2 + 2 + 2},  // outer copy + momentum
      {"nodes: 7\nalgorithm: {name: streaming_diloco}\n", 2 + 2 + 2 + 2},
      {"nodes: 7\noptimizer: {name: sgd}\n", 2 + 0 + 2},  // no momentum buffer
      {"nodes: 7\noptimizer: {name: sgd, momentum: 0.9}\nalgorithm: {name: demo}\n", 2 + 1 + 1 + 2},
      {"nodes: 7\noptimizer: {name: adam}\nalgorithm: {name: sparta}\n", 2 + 2 + 2},
  };
  const Dataset data = small_data();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    const MemoryEstimate e = estimate(c.yaml, data);
    EXPECT_EQ(e.vectors_per_replica, c.vectors);
    EXPECT_DOUBLE_EQ(e.replicas_bytes, 7.0 * (c.vectors * 4 * kParameters + kReplicaObjects));
    EXPECT_DOUBLE_EQ(e.eval_model_bytes, 4.0 * kParameters);
    EXPECT_DOUBLE_EQ(e.data_bytes, kDataBytes);
  }
  // A projection builds no replica, and of the model only what it reads the shapes from (one
  // block of a transformer it repeats). Slip caught: a GPT projection charged its whole model
  // (a 7B GPT refused on a 24 GB host for 25 GB it never allocates).
  const Scenario projection = parse_scenario("nodes: 7\nworkload: {train: false}\n", "s.yaml");
  const MemoryEstimate p =
      estimate_memory(projection, data, {kParameters, 6, {}, 1234}, build_topology(topology_spec(projection)));
  EXPECT_DOUBLE_EQ(p.replicas_bytes, 0);
  EXPECT_DOUBLE_EQ(p.eval_model_bytes, 4.0 * 1234);
}

// Messages of the plans a run keeps, counted by hand for 7 nodes on the default ring: a ring
// all-reduce is 2 (p - 1) steps of p messages, a ring all-gather p - 1 steps, a neighbour
// exchange one message per neighbour (2 on a ring).
TEST(MemoryEstimate, CountsThePlansTheRunKeeps) {
  struct Case {
    std::string yaml;
    int64_t messages;
  };
  const int64_t all_reduce = 2 * 6 * 7, all_gather = 6 * 7, exchange = 7 * 2;
  const std::vector<Case> cases = {
      {"nodes: 7\n", all_reduce},
      {"nodes: 7\ncollective: {slices: 3}\n", 3 * all_reduce},  // pieces
      {"nodes: 7\ncollective: {algorithm: direct}\n", 2 * 7 * 6},
      {"nodes: 7\nalgorithm: {name: streaming_diloco}\n", 4 * all_reduce},  // a plan per fragment
      {"nodes: 7\nalgorithm: {name: demo}\n", all_gather},
      {"nodes: 7\nalgorithm: {name: gossip}\n", exchange},
      {"nodes: 7\nalgorithm: {name: sparta, selection: layerwise}\n", 6 * all_reduce},  // a plan per tensor
      {"nodes: 7\nalgorithm: {name: sparta_diloco, exchange: gossip}\n", exchange + all_reduce},
      // A subset of 3 or 4 of 7 each round, 300 steps / H 10 = 30 rounds: counted as 30 plans
      // over all 7 (an upper bound).
      {"nodes: 7\nalgorithm: {name: local_sgd, H: 10, fraction: 0.5}\n", 30 * all_reduce},
  };
  const Dataset data = small_data();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    const MemoryEstimate e = estimate(c.yaml, data);
    EXPECT_EQ(e.plan_messages, c.messages);
    // Each message is at least a CollectiveMessage and a per-message slot of the run.
    EXPECT_GE(e.message_tables_bytes, static_cast<double>(c.messages) * (sizeof(CollectiveMessage) + 8));
    EXPECT_LE(e.message_tables_bytes, static_cast<double>(c.messages) * 400 + 7 * 200);
  }
  // ns-3: 7 hosts and 7 links of the ring, 7 connections (each rank to the next); the other
  // backends hold no per-packet state worth counting.
  EXPECT_DOUBLE_EQ(estimate("nodes: 7\n", data).network_bytes, 7 * kVertex + 7 * kLink + 7 * kConnection);
  EXPECT_DOUBLE_EQ(estimate("nodes: 7\nnetwork: {backend: flow}\n", data).network_bytes, 0);
}

// A flow projection of DDP times its whole-fleet rings on lanes (ring_lanes.h) and keeps no
// plan for them once a ring has more messages than a row each (2 (p - 1) p > 65 536: p = 200
// gives 79 600) and the ring's routes share no link (a ring topology's never do). Slips caught:
// the condition dropped (plans counted that are never built: a 1024-node projection refused),
// or kept under flow_lanes false, in training, on ns-3, or for rings of a row each.
TEST(MemoryEstimate, KeepsNoPlanForARingTimedOnLanes) {
  const Dataset data = small_data();
  const std::string projection = "nodes: 200\nworkload: {train: false}\ncompute: {model: flops}\n";
  EXPECT_EQ(estimate(projection + "network: {backend: flow}\n", data).plan_messages, 0);
  EXPECT_EQ(estimate(projection + "network: {backend: flow, flow_lanes: false}\n", data).plan_messages, 2 * 199 * 200);
  EXPECT_EQ(estimate(projection, data).plan_messages, 2 * 199 * 200);                                // ns-3
  EXPECT_EQ(estimate("nodes: 200\nnetwork: {backend: flow}\n", data).plan_messages, 2 * 199 * 200);  // training
  EXPECT_EQ(estimate("nodes: 100\nworkload: {train: false}\ncompute: {model: flops}\nnetwork: {backend: flow}\n", data)
                .plan_messages,
            2 * 99 * 100);
}

TEST(MemoryEstimate, RefusesWhatTheMachineCannotHold) {
  const Dataset data = small_data();
  // 20000 replicas of the MLP under AdamW, 20000 x (6 x 4 x 235146 + 100e3) bytes, about 106.98
  // GiB, and a ring all-reduce plan of 2 x 19999 x 20000 = 8.0e8 messages.
  const MemoryEstimate big = estimate("nodes: 20000\n", data);
  EXPECT_NEAR(big.replicas_bytes / (1 << 30), 20000.0 * (6 * 4 * kParameters + kReplicaObjects) / (1 << 30), 0.01);
  EXPECT_EQ(big.plan_messages, int64_t{2} * 19999 * 20000);
  EXPECT_GT(big.message_tables_bytes, big.replicas_bytes);
  MachineMemory machine;
  machine.available_bytes = 24.0 * (1 << 30);
  const std::string why = memory_refusal(big, machine, 20000);
  EXPECT_NE(why.find("20000 replicas x 6 vectors of 235146 parameters: 106.98 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("collective plans of 799960000 messages"), std::string::npos) << why;
  EXPECT_NE(why.find("24.00 GiB available"), std::string::npos) << why;

  const MemoryEstimate small = estimate("nodes: 4\n", data);
  EXPECT_EQ(memory_refusal(small, machine, 4), "");
  // Under ulimit -v, what the process maps already counts too.
  machine.address_space_limit = 2.0 * (1 << 30);
  machine.address_space_used = 2.0 * (1 << 30) - small.total_bytes() + 1;
  EXPECT_NE(memory_refusal(small, machine, 4).find("limited to 2.00 GiB (ulimit -v)"), std::string::npos);
  machine.address_space_used = 2.0 * (1 << 30) - small.total_bytes() - 1;
  EXPECT_EQ(memory_refusal(small, machine, 4), "");
}

TEST(MemoryEstimate, StatefulClientsInMemoryCountAndDiskIsTheWayOut) {
  // 20000 clients keeping SGD's momentum (one vector each) in memory: 20000 x 4 x 235146 bytes,
  // 17.52 GiB; on a machine with 8 GiB the rest fits, so the refusal points at the disk.
  const Dataset data = small_data();
  const std::string fed =
      "nodes: 20000\noptimizer: {name: sgd, momentum: 0.9}\ntopology: {kind: star}\n"
      "network: {backend: flow}\nalgorithm: {name: fedavg, clients_per_round: 10, client_state: ";
  const MemoryEstimate memory = estimate(fed + "memory}\n", data);
  EXPECT_DOUBLE_EQ(memory.client_state_bytes, 20000.0 * 4 * kParameters);
  EXPECT_DOUBLE_EQ(estimate(fed + "disk}\n", data).client_state_bytes, 0);
  EXPECT_DOUBLE_EQ(estimate(fed + "none}\n", data).client_state_bytes, 0);
  MachineMemory machine;
  machine.available_bytes = 8.0 * (1 << 30);
  const std::string why = memory_refusal(memory, machine, 20000);
  EXPECT_NE(why.find("the clients' optimizer state 17.52 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("algorithm.client_state: disk"), std::string::npos) << why;
  EXPECT_EQ(memory_refusal(estimate(fed + "disk}\n", data), machine, 20000), "");
}

// A second-order optimizer's own state on the MLP's three layers (d_a counts the bias's 1),
// worked out a layer at a time: Eva keeps a and g; K-FAC A and G (d^2 each), their inverses
// (every node: zeros where it owns none) or eigenvectors plus eigenvalues, and the d_g x d_a
// direction; DP-KFAC the factors and inverses on the owner alone. Slips caught: the state left
// out (the estimate before this test), DP-KFAC's factors counted on every node, the eigenvalues
// dropped, a projection (no replica) charged.
TEST(MemoryEstimate, CountsASecondOrderOptimizersState) {
  const std::vector<SecondOrderLayer> mlp = {{"fc1", 0, 785, 256, 1}, {"fc2", 2, 257, 128, 1}, {"fc3", 4, 129, 10, 1}};
  const double squares = 785.0 * 785 + 256 * 256 + 257 * 257 + 128 * 128 + 129 * 129 + 10 * 10;
  const double products = 785.0 * 256 + 257 * 128 + 129 * 10, lengths = 785.0 + 256 + 257 + 128 + 129 + 10;
  const Dataset data = small_data();
  auto bytes = [&](const std::string& yaml) {
    const Scenario s = parse_scenario(yaml, "s.yaml");
    return estimate_memory(s, data, {kParameters, 6, mlp}, build_topology(topology_spec(s))).second_order_bytes;
  };
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: eva}\n"), 5 * 4 * lengths);
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: kfac}\n"), 5 * 4 * (2 * squares + products));
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: kfac, variant: eigen}\n"),
                   5 * 4 * (2 * squares + products + lengths));
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: kfac}\nalgorithm: {name: local_sgd}\n"),
                   5 * 4 * (2 * squares + products));
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: dp_kfac}\n"), 4 * (2 * squares + 5 * products));
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: sgd}\n"), 0);
  EXPECT_DOUBLE_EQ(bytes("nodes: 5\noptimizer: {name: kfac}\nworkload: {train: false}\ncompute: {model: flops}\n"), 0);
  MachineMemory machine;
  machine.available_bytes = 1e6;
  const Scenario s = parse_scenario("nodes: 5\noptimizer: {name: kfac}\n", "s.yaml");
  const std::string why =
      memory_refusal(estimate_memory(s, data, {kParameters, 6, mlp}, build_topology(topology_spec(s))), machine, 5);
  EXPECT_NE(why.find("GiB of second-order state"), std::string::npos) << why;
}

TEST(MemoryEstimate, ReadsThisMachine) {
  const MachineMemory m = machine_memory();
  EXPECT_GT(m.available_bytes, 0);
  EXPECT_GT(m.address_space_used, 0);
}

// A LibTorch failure reads as one sentence: its message, no C++ backtrace.
TEST(ErrorSentence, LibTorchFailuresLoseTheirBacktrace) {
  std::string what, sentence;
  try {
    (void)torch::mm(torch::zeros({2, 3}), torch::zeros({4, 5}));
  } catch (const std::exception& e) {
    what = e.what();
    sentence = error_sentence(e);
  }
  ASSERT_NE(what.find("Exception raised from"), std::string::npos) << "LibTorch's own text changed: " << what;
  EXPECT_EQ(sentence.rfind("LibTorch failed: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", 0), 0u)
      << sentence;
  EXPECT_EQ(sentence.find("Exception raised from"), std::string::npos) << sentence;
  EXPECT_EQ(sentence.find("frame #"), std::string::npos) << sentence;
  EXPECT_EQ(sentence.find('\n'), std::string::npos) << sentence;

  try {
    throw std::bad_alloc();
  } catch (const std::exception& e) {
    EXPECT_EQ(error_sentence(e), "out of memory: an allocation failed (std::bad_alloc)");
  }
  try {
    throw std::runtime_error("plain words");
  } catch (const std::exception& e) {
    EXPECT_EQ(error_sentence(e), "plain words");
  }
}

}  // namespace
}  // namespace run_guards
}  // namespace testbed
