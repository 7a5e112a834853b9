// What one GPU holds (sim/config/device_memory.h) against its preset: the MLP's parts counted by
// hand, the refusal and the warning, and two published fits: GPT-2 124M at nanoGPT's batch of 12
// x 1024 tokens in bf16 on a 40 GB A100, and full AdamW training of a 7B model, which no 80 GB
// GPU holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "sim/config/device_memory.h"
#include "sim/config/input_error.h"
#include "sim/config/model_check.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"

namespace testbed {
namespace device_memory_test {  // workload_tests compiles as one unity file
namespace {

constexpr double kMlpParameters = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;  // 235 146
constexpr double kMlpOutputs = 256 + 256 + 128 + 128 + 10 + 10;  // fc1, relu1, fc2, relu2, fc3, loss a sample
constexpr double kGiB = 1024.0 * 1024 * 1024;

DeviceMemory mlp_memory(const std::string& extra, const std::string& dtype = "fp32") {
  const Scenario s = parse_scenario(
      "workload: {model: mlp, batch_size: 64}\ncompute: {model: flops, device: t4, dtype: " + dtype + "}\n" + extra,
      "m.yaml");
  const auto parts = device_memory(s, check_model(s));
  EXPECT_EQ(parts.size(), 1u);
  return parts.at(0);
}

// Slips caught: gradients or moments counted for frozen or all parameters alike, the autocast
// copy left out (or counted in fp32), activations not scaled by the batch or the dtype, an
// algorithm's state vectors forgotten, the capacity read in GB instead of GiB.
TEST(DeviceMemory, TheMlpsPartsByHand) {
  const DeviceMemory adamw = mlp_memory("optimizer: {name: adamw}\n");
  EXPECT_DOUBLE_EQ(adamw.capacity, 16 * kGiB);
  EXPECT_DOUBLE_EQ(adamw.weights, 4 * kMlpParameters);
  EXPECT_DOUBLE_EQ(adamw.gradients, 4 * kMlpParameters);
  EXPECT_DOUBLE_EQ(adamw.optimizer, 8 * kMlpParameters);
  EXPECT_DOUBLE_EQ(adamw.activations, 64 * kMlpOutputs * 4);
  EXPECT_DOUBLE_EQ(adamw.algorithm, 4 * kMlpParameters);  // DDP: no state, one op buffer
  EXPECT_DOUBLE_EQ(adamw.total(), (4 + 4 + 8 + 4) * kMlpParameters + 64 * kMlpOutputs * 4);

  const DeviceMemory bf16 = mlp_memory("", "fp16");
  EXPECT_DOUBLE_EQ(bf16.weights, 6 * kMlpParameters);  // fp32 master + the fp16 copy
  EXPECT_DOUBLE_EQ(bf16.activations, 64 * kMlpOutputs * 2);

  EXPECT_DOUBLE_EQ(mlp_memory("optimizer: {name: sgd, momentum: 0.9}\n").optimizer, 4 * kMlpParameters);
  EXPECT_DOUBLE_EQ(mlp_memory("optimizer: {name: sgd}\n").optimizer, 0);
  EXPECT_DOUBLE_EQ(mlp_memory("algorithm: {name: diloco}\n").algorithm,
                   4 * 3 * kMlpParameters);  // outer copy, momentum
}

// A batch that cannot fit is refused at compute.device with the breakdown and the capacity;
// `warn` lets it run with the same sentence on stderr; `off` says nothing.
TEST(DeviceMemory, OverCapacityIsRefusedOrWarned) {
  // The CNN keeps about 25 k activation values a sample: 200 000 samples in fp32 are about 19
  // GiB, over a 16 GiB T4; 100 000 fit.
  const std::string over = "workload: {model: cnn, batch_size: 200000}\ncompute: {model: flops, device: t4";
  try {
    parse_scenario(over + "}\n", "over.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("over.yaml:2:"), std::string::npos) << what;  // at compute.device
    EXPECT_NE(what.find("t4 holds 16.00 GiB; a GPU needs about 1"), std::string::npos) << what;
    EXPECT_NE(what.find("activations 1"), std::string::npos) << what;
    EXPECT_NE(what.find("compute.memory_check: warn"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(
      parse_scenario("workload: {model: cnn, batch_size: 100000}\ncompute: {model: flops, device: t4}\n", "fits.yaml"));
  const Scenario warned = parse_scenario(over + ", memory_check: warn}\n", "warn.yaml");
  bool said = false;
  for (const auto& w : warned.warnings) said |= w.find("t4 holds 16.00 GiB") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NO_THROW(parse_scenario(over + ", memory_check: off}\n", "off.yaml"));
}

// nanoGPT trains GPT-2 124M at batch 12 x 1024 in bf16 on 40 GB A100s (its train_gpt2 config);
// the estimate (attention's T x T scores kept, as this model charges them) fits. A 7B model with
// AdamW holds 4 + 4 + 8 bytes a parameter before any activation, about 100 GiB: no 80 GB GPU.
TEST(DeviceMemory, PublishedFits) {
  const Scenario gpt2 = parse_scenario(
      "workload: {model: gpt, dataset: brown, batch_size: 12, train: false, gpt: {preset: gpt2_124m}}\n"
      "compute: {model: flops, device: a100_40gb, dtype: bf16}\n",
      "gpt2.yaml");
  const DeviceMemory m = device_memory(gpt2, check_model(gpt2)).at(0);
  EXPECT_LT(m.total(), m.capacity);
  EXPECT_GT(m.total(), 0.25 * m.capacity);  // not trivially small: activations dominate
  const std::string llama =
      "workload: {model: llama, dataset: brown, batch_size: 1, train: false, llama: {preset: 7b}}\n"
      "compute: {model: flops, device: h100, dtype: bf16";
  EXPECT_THROW(parse_scenario(llama + "}\n", "7b.yaml"), InputError);
  EXPECT_NO_THROW(parse_scenario(llama + ", memory_check: warn}\n", "7b.yaml"));
}

// Replica groups (docs/replica_groups.md): a GPU keeps its slice of what its group shards (ZeRO-1
// the optimizer's moments, ZeRO-2 the gradients too) and of the algorithm's vectors (exchanged
// slice by slice across groups); weights and activations stay whole. The MLP on 4-GPU groups,
// by hand. Slips caught: zero1 sharding the gradients, zero2 not, ddp sharding anything it
// keeps whole, the algorithm's vectors kept whole.
TEST(DeviceMemory, ReplicaGroupsShardWhatTheySplit) {
  auto grouped = [](const std::string& parallelism) {
    const Scenario s = parse_scenario(
        "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\nalgorithm: {name: diloco}\n"
        "replica_group: {gpus: 4, parallelism: " +
            parallelism +
            "}\nworkload: {model: mlp, batch_size: 64, train: false}\n"
            "compute: {model: flops, device: t4}\n",
        "g.yaml");
    return device_memory(s, check_model(s)).at(0);
  };
  const double p = kMlpParameters;
  for (const char* parallelism : {"ddp", "zero1", "zero2"}) {
    SCOPED_TRACE(parallelism);
    const std::string name = parallelism;
    const DeviceMemory m = grouped(name);
    EXPECT_DOUBLE_EQ(m.weights, 4 * p);
    EXPECT_DOUBLE_EQ(m.gradients, name == "zero2" ? 4 * p / 4 : 4 * p);
    EXPECT_DOUBLE_EQ(m.optimizer, name == "ddp" ? 8 * p : 8 * p / 4);
    EXPECT_DOUBLE_EQ(m.activations, 64 * kMlpOutputs * 4);
    EXPECT_DOUBLE_EQ(m.algorithm, 4 * 3 * p / 4);  // DiLoCo's outer copy and momentum, one op buffer: a slice each
  }
  // Under bf16 ZeRO keeps the bf16 parameters whole and shards the fp32 master copy.
  const Scenario bf16 = parse_scenario(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\nreplica_group: {gpus: 4, parallelism: zero2}\n"
      "workload: {model: mlp, batch_size: 64, train: false}\ncompute: {model: flops, device: t4, dtype: fp16}\n",
      "b.yaml");
  EXPECT_DOUBLE_EQ(device_memory(bf16, check_model(bf16)).at(0).weights, 2 * p + 4 * p / 4);
}

// FSDP keeps a G-th of every flat parameter, gradient and moment, plus what is gathered in the
// parameters' dtype: the root (here nothing: the MLP's three layers are its units), the largest
// unit twice (the one running and the one prefetched: fc1's 200 960) and one unit's unsharded
// gradient. Llama 2 7B with AdamW on 8-GPU FSDP groups of H100s fits in bf16 with
// FlashAttention; the same GPU alone does not (PublishedFits). Slips caught: the prefetched unit
// or the gathered gradient left out, the weights kept whole.
TEST(DeviceMemory, FsdpShardsEverythingButWhatIsGathered) {
  const Scenario s = parse_scenario(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 4}\nreplica_group: {gpus: 4, parallelism: fsdp, unit: "
      "'fc*'}\n"
      "workload: {model: mlp, batch_size: 64, train: false}\ncompute: {model: flops, device: t4}\n",
      "f.yaml");
  const DeviceMemory m = device_memory(s, check_model(s)).at(0);
  const double p = kMlpParameters, fc1 = 784 * 256 + 256;
  EXPECT_DOUBLE_EQ(m.weights, 4 * p / 4 + 4 * 2 * fc1);
  EXPECT_DOUBLE_EQ(m.gradients, 4 * p / 4 + 4 * fc1);
  EXPECT_DOUBLE_EQ(m.optimizer, 8 * p / 4);
  EXPECT_DOUBLE_EQ(m.activations, 64 * kMlpOutputs * 4);

  const Scenario llama = parse_scenario(
      "nodes: 8\ntopology: {kind: gpu_hosts, gpus_per_host: 8}\nreplica_group: {gpus: 8, parallelism: fsdp}\n"
      "workload: {model: llama, dataset: brown, batch_size: 1, train: false, llama: {preset: 7b}}\n"
      "compute: {model: flops, device: h100, dtype: bf16, attention: flash}\n",
      "7b.yaml");
  const DeviceMemory seven = device_memory(llama, check_model(llama)).at(0);
  EXPECT_LT(seven.total(), seven.capacity);
  EXPECT_LT(seven.weights, 0.25 * seven.capacity);  // a slice and three blocks, not 6.7 G parameters
}

// Activation checkpointing of the small LLaMA's blocks ("layers.0", "layers.1"): a step keeps
// every output outside the blocks, each block's input (its first layer's), and the larger
// block's outputs while its forward runs again; its FLOPs grow by the blocks' forward, once.
// Worked from the model's layer list by that rule. Slips caught: the recomputed forward left
// out of the step (or counted for every layer), the block inputs or the one block recomputed
// at a time left out of memory.
TEST(DeviceMemory, ActivationCheckpointingKeepsBlockInputsAndRecomputes) {
  const std::string base =
      "workload: {model: llama, dataset: brown, batch_size: 8, train: false, llama: {preset: tiny}}\n"
      "compute: {model: flops, device: a100";
  const Scenario plain = parse_scenario(base + "}\n", "p.yaml");
  const Scenario checkpointed = parse_scenario(base + ", activation_checkpointing: true}\n", "c.yaml");
  const ModelShapes shapes = check_model(plain);
  double outside = 0, inputs = 0, block_flops = 0;
  std::map<std::string, double> blocks;
  for (const LayerCost& l : shapes.layers) {
    const bool in_block = l.name.rfind("layers.", 0) == 0;
    if (!in_block) {
      outside += l.outputs;
      continue;
    }
    const std::string block = l.name.substr(0, l.name.find('.', 7));
    if (!blocks.count(block)) inputs += l.inputs;
    blocks[block] += l.outputs;
    block_flops += l.flops;
  }
  ASSERT_EQ(blocks.size(), 2u);
  double largest = 0;
  for (const auto& [name, outputs] : blocks) largest = std::max(largest, outputs);
  const DeviceMemory m = device_memory(checkpointed, shapes).at(0);
  EXPECT_DOUBLE_EQ(m.activations, 8 * (outside + inputs + largest) * 4);
  EXPECT_LT(m.activations, device_memory(plain, shapes).at(0).activations);

  auto flops = [&](const Scenario& s) {
    return ComputeModel(s.compute, training_work(s, shapes.layers), 1, 0).flops_per_step();
  };
  EXPECT_NEAR(flops(checkpointed) - flops(plain), 8 * block_flops, 1e-6 * flops(plain));
}

// With compute.attention: flash no T x T scores are kept: GPT-2 124M's activations at 12 x
// 1024 drop by 4 h T^2 - h T values a layer and sample (q k^T, its scale, mask and softmax
// written where the fused kernel writes a log-sum-exp), in bf16.
TEST(DeviceMemory, FlashAttentionKeepsNoScores) {
  const std::string gpt2 =
      "workload: {model: gpt, dataset: brown, batch_size: 12, train: false, gpt: {preset: gpt2_124m}}\n"
      "compute: {model: flops, device: a100_40gb, dtype: bf16";
  const Scenario eager = parse_scenario(gpt2 + "}\n", "e.yaml"),
                 flash = parse_scenario(gpt2 + ", attention: flash}\n", "f.yaml");
  const ModelShapes shapes = check_model(eager);
  const double T = 1024, h = 12;
  EXPECT_DOUBLE_EQ(device_memory(eager, shapes).at(0).activations - device_memory(flash, shapes).at(0).activations,
                   12.0 * 2 * 12 * (4 * h * T * T - h * T));
}

// A second-order optimizer's state on the busiest GPU, worked out for three layers (d_a, d_g) =
// (3, 2), (5, 4), (2, 2) on 2 nodes: Eva's vectors and K-FAC's factors, inverses and directions
// on every node; DP-KFAC's factors and inverses on layer i's owner, node i mod 2 (node 1 owns
// the (5, 4) layer: 2 (25 + 16) = 82, node 0 the others: 2 (9 + 4) + 2 (4 + 4) = 42), its
// directions (6 + 20 + 4) everywhere. Slips caught: every owner's factors summed on one node,
// the mean node taken instead of the busiest, the directions counted once for the fleet.
TEST(DeviceMemory, SecondOrderStateOnTheBusiestGpu) {
  const std::vector<SecondOrderLayer> layers = {{"a", 0, 3, 2, 1}, {"b", 2, 5, 4, 1}, {"c", 4, 2, 2, 1}};
  OptimizerSection o;
  o.name = OptimizerKind::Eva;
  EXPECT_DOUBLE_EQ(second_order_floats_per_gpu(o, layers, 2), 3 + 2 + 5 + 4 + 2 + 2);
  o.name = OptimizerKind::Kfac;
  EXPECT_DOUBLE_EQ(second_order_floats_per_gpu(o, layers, 2), 2 * (9 + 4 + 25 + 16 + 4 + 4) + 30);
  o.name = OptimizerKind::DpKfac;
  EXPECT_DOUBLE_EQ(second_order_floats_per_gpu(o, layers, 2), 82 + 30);
  o.name = OptimizerKind::AdamW;
  EXPECT_DOUBLE_EQ(second_order_floats_per_gpu(o, layers, 2), 0);
}

}  // namespace
}  // namespace device_memory_test
}  // namespace testbed
