// What an algorithm is built from: its options and what it may know of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/algorithms/merged_gradient_buckets.h"
#include "training/algorithms/registry.h"
#include "training/models/model_shapes.h"
#include "training/replica.h"

namespace testbed {

struct AlgorithmSettings {
  AlgorithmOptions options;  // the alternative of the algorithm's registry entry
  int nodes = 1;
  int batch_size = 1;
  int steps = 1;
  uint64_t seed = 0;                                // the scenario seed; algorithms derive named streams
  std::vector<std::vector<int>> neighbours;         // each node's topology neighbours (hosts)
  std::vector<int64_t> shard_sizes;                 // each node's training samples
  std::vector<int64_t> tensor_sizes;                // trainable parameter tensors, in flat order
  std::vector<std::vector<int64_t>> tensor_shapes;  // theirs (what a matrix is, for the low-rank ones)
  // Each tensor's layer, numbered in forward order (tensors of one module share it); empty
  // when unknown (a tensor a layer, in flat order).
  std::vector<int> tensor_layers;
  OptimizerConfig optimizer;  // the inner (local) optimizer
  // The layers a second-order optimizer preconditions (Model::layer_taps), for its messages.
  std::vector<SecondOrderLayer> second_order;
  // A model cut for split fine-tuning: the values a sample sends across the cut (0: not cut).
  int64_t cut_values_per_sample = 0;
  // Replica groups (replica_groups.h): GPUs a group (1: every node a replica), the
  // parallelism inside it (ddp, zero1, zero2, fsdp) and the bytes of an element its sharded
  // collectives carry (the parameters' dtype: 2 under bf16 or fp16 training, else 4).
  int group_gpus = 1;
  std::string group_parallelism = "ddp";
  double group_wire_bytes = 4;
  double group_reduce_bytes = 4;  // zero, fsdp: the gradients' reduce-scatters (reduce_dtype)
  std::vector<int> group_units;   // fsdp: each tensor's unit in forward order, -1 the root (fsdp_units.h)
  // ddp's mgwfbp: each tensor's gradient time and the fleet's all-reduce cost (empty otherwise).
  MergeTimes merge_times;
};

}  // namespace testbed
