// Turns the scenario's workload, optimizer and algorithm sections into training objects.
#pragma once

#include <memory>
#include <vector>

#include "sim/config/data_dirs.h"
#include "sim/config/scenario.h"
#include "training/algorithm.h"
#include "training/algorithms/merged_gradient_buckets.h"
#include "training/data/dataset.h"
#include "training/models/layer_cost.h"
#include "training/models/model_shapes.h"
#include "training/models/models.h"
#include "training/replica.h"
#include "training/vhl.h"

namespace testbed {

// Process-wide compute settings: LibTorch intra-op threads from the scenario (0: all
// cores; Debian's build starts with one), OpenBLAS kept single-threaded, allocator tuned.
void configure_host(const Scenario& scenario);

// The data set with its shifted test variants. Throws std::runtime_error naming the
// install script when files are missing.
Dataset load_dataset(const Scenario& scenario);

// A freshly initialised model (from workload.init_from when set): node n's replica, or
// with node -1 the shared initialisation. The same weights for every call with the same
// scenario and node; every node shares them unless workload.init is independent. Throws
// std::invalid_argument for an impossible shape.
std::shared_ptr<Model> make_model(const Scenario& scenario, int node = -1);

// The model's trainable shapes and layer costs: read off the built module, or, for LLaMA (whose
// large presets do not fit), from its configuration alone (tested equal to the module's); a
// projection of a GPT or BERT builds one block and repeats it (tested equal to the full build).
ModelShapes model_shapes(const Scenario& scenario);
// Whether model_shapes describes the model from its configuration, building nothing.
bool shapes_from_config(const Scenario& scenario);

// Node `node`'s optimizer (a second-order one deals its layers over the fleet under DDP).
OptimizerConfig optimizer_config(const Scenario& scenario, int node = 0);

// The scenario's VHL settings (fedavg's `vhl`), or null.
const VhlOptions* vhl_options(const Scenario& s);

// VHL's virtual data set for the scenario's data: virtual_samples per class, from the seed's
// "vhl_generator" stream, normalised as the real images are.
VirtualData make_vhl_data(const Scenario& s, const Dataset& data);

// One step's work for the compute model: the model's layer costs, the per-node batch (with
// VHL's virtual batch) and the optimizer.
TrainingWork training_work(const Scenario& scenario, const Model& model);
TrainingWork training_work(const Scenario& scenario, std::vector<LayerCost> layers);

// Each node's shard sampler, from the scenario's partition and seed. A partition that
// leaves a node without data throws ScenarioError at workload.partition (or nodes).
std::vector<ShardSampler> make_samplers(const Scenario& scenario, const Dataset& data);

// The scenario's algorithm (training/algorithms/registry.cpp) for this run: each node's
// shard size, the trainable parameter tensors' shapes, each host's topology neighbours and the
// tensors' layers in forward order (training/models/layer_cost.h, gradient_layers), and the layers a
// second-order optimizer preconditions (ModelShapes::second_order).
std::unique_ptr<Algorithm> make_algorithm(const Scenario& scenario, std::vector<int64_t> shard_sizes,
                                          std::vector<std::vector<int64_t>> tensor_shapes,
                                          std::vector<std::vector<int>> neighbours, std::vector<int> tensor_layers = {},
                                          std::vector<SecondOrderLayer> second_order = {},
                                          int64_t cut_values_per_sample = 0,
                                          const std::vector<std::string>& tensor_names = {},
                                          MergeTimes merge_times = {});

}  // namespace testbed
