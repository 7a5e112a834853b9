// The device memory a step needs, part by part (docs/compute.md, "Device memory").
#include "sim/config/device_memory.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "sim/config/device_presets.h"
#include "training/algorithms/fsdp_units.h"
#include "training/algorithms/registry.h"

namespace testbed {
namespace {

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

const DevicePreset& preset(const std::string& name) {
  for (const auto& p : device_presets())
    if (p.name == name) return p;
  throw std::invalid_argument("unknown device preset '" + name + "'");
}

// The trainable elements, all elements and per-sample outputs of layers [begin, end).
struct LayerSums {
  double parameters = 0, trainable = 0, outputs = 0;
};
LayerSums sums(const std::vector<LayerCost>& layers, size_t begin, size_t end) {
  LayerSums s;
  for (size_t l = begin; l < end; ++l) {
    const LayerCost& c = layers[l];
    if (!c.shared_weights) {
      s.parameters += c.weights;
      if (c.trains) s.trainable += c.weights;
    }
    s.outputs += c.outputs;
  }
  return s;
}

// FSDP (docs/replica_groups.md#fsdp): a GPU holds its slice of every flat parameter, its
// gradient and its moments in fp32; beside them, gathered in the parameters' dtype, the root
// unit (never resharded between forward and backward) with its unsharded gradient, and the
// largest unit twice (the one running and the one prefetched) with one unsharded gradient.
void fsdp_memory(const Scenario& s, const ModelShapes& shapes, double parameters, DeviceMemory& m) {
  const std::string pattern = fsdp_unit_pattern(s);
  std::map<std::string, double> units;
  double root = 0, trainable = 0;
  for (size_t t = 0; t < shapes.names.size(); ++t) {
    double e = 1;
    for (int64_t side : shapes.shapes[t]) e *= static_cast<double>(side);
    const std::string unit = fsdp_unit(shapes.names[t], pattern);
    (unit.empty() ? root : units[unit]) += e;
    trainable += e;
  }
  double largest = 0;
  for (const auto& [unit, e] : units) largest = std::max(largest, e);
  const int G = s.replica_group.gpus;
  const double d = s.compute.dtype == Precision::Bf16 || s.compute.dtype == Precision::Fp16 ? 2 : 4;
  const double reduced = s.replica_group.reduce_dtype == ReduceDtype::Fp32 ? 4 : d;
  m.weights = 4 * parameters / G + d * (root + 2 * largest);
  m.gradients = 4 * trainable / G + reduced * (root + largest);
  m.optimizer /= G;
}

// Activation checkpointing: what a step keeps for backward, per sample. Outside the blocks, every
// layer's output; of each block, only its input (its first layer's); and while a block's
// backward runs, its forward again: the largest block's outputs.
double checkpointed_outputs(const std::vector<LayerCost>& layers, const std::string& blocks) {
  double kept = 0, largest = 0, block = 0;
  std::string open;
  for (const LayerCost& l : layers) {
    const std::string unit = fsdp_unit(l.name, blocks);
    if (unit != open) {
      largest = std::max(largest, block);
      block = 0;
      open = unit;
      if (!unit.empty()) kept += l.inputs;
    }
    (unit.empty() ? kept : block) += l.outputs;
  }
  return kept + std::max(largest, block);
}

}  // namespace

double second_order_floats(const OptimizerSection& o, const std::vector<SecondOrderLayer>& layers, int nodes) {
  double floats = 0;
  for (const SecondOrderLayer& l : layers) {
    const double a = static_cast<double>(l.d_a), g = static_cast<double>(l.d_g);
    const double factors = 2 * (a * a + g * g), direction = a * g;
    if (o.name == OptimizerKind::Eva) floats += nodes * (a + g);
    if (o.name == OptimizerKind::Kfac)
      floats += nodes * (factors + direction + (o.variant == KfacVariant::Eigen ? a + g : 0));
    // eigen_dp's owner keeps eigenvalues beside its eigenvectors (in place of the inverses).
    if (o.name == OptimizerKind::DpKfac)
      floats += factors + (o.variant == KfacVariant::Eigen ? a + g : 0) + nodes * direction;
  }
  return floats;
}

double second_order_floats_per_gpu(const OptimizerSection& o, const std::vector<SecondOrderLayer>& layers, int nodes) {
  if (o.name != OptimizerKind::DpKfac) return second_order_floats(o, layers, nodes) / nodes;
  // Layer i's factors and inverses on node i mod N (DP-KFAC deals the inverse variant's way):
  // the node that owns the most, and every layer's direction.
  std::vector<double> owned(std::max(1, nodes), 0.0);
  double directions = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const double a = static_cast<double>(layers[i].d_a), g = static_cast<double>(layers[i].d_g);
    owned[i % owned.size()] += 2 * (a * a + g * g) + (o.variant == KfacVariant::Eigen ? a + g : 0);
    directions += a * g;
  }
  return *std::max_element(owned.begin(), owned.end()) + directions;
}

std::vector<DeviceMemory> device_memory(const Scenario& s, const ModelShapes& model) {
  // The layers as the step runs them: with FlashAttention, no scores kept.
  ModelShapes shapes = model;
  if (s.compute.attention == Attention::Flash) {
    shapes.layers = fused_attention(model.layers);
    if (model.cut_layer >= 0)  // the cut's index among the fused layers
      shapes.cut_layer =
          static_cast<int>(fused_attention({model.layers.begin(), model.layers.begin() + model.cut_layer}).size());
  }
  const int activation_bytes = dtype_bytes(s.compute.dtype);
  const bool autocast = s.compute.dtype == Precision::Bf16 || s.compute.dtype == Precision::Fp16;
  const OptimizerSection& o = s.optimizer;
  const double state_per_trainable = o.name == OptimizerKind::AdamW || o.name == OptimizerKind::Adam ? 8
                                     : o.momentum > 0                                                ? 4
                                                                                                     : 0;
  const AlgorithmEntry* entry = find_algorithm(s.algorithm.name);
  const int vectors = entry ? entry->state_vectors + 1 : 1;  // its state and one op buffer
  auto part = [&](const std::string& device, const std::string& name, const LayerSums& l, double trainable) {
    DeviceMemory m;
    m.device = device;
    m.part = name;
    m.capacity = preset(device).memory_gib * 1024.0 * 1024.0 * 1024.0;
    // fp32 master weights; under autocast a bf16/fp16 copy of each is cached for the step.
    m.weights = l.parameters * (4 + (autocast ? 2 : 0));
    m.gradients = 4 * trainable;
    m.optimizer = state_per_trainable * trainable;
    m.activations = static_cast<double>(s.workload.batch_size) * l.outputs * activation_bytes;
    m.algorithm = 4.0 * vectors * trainable;
    return m;
  };
  if (shapes.cut_layer < 0) {
    LayerSums l = sums(shapes.layers, 0, shapes.layers.size());
    l.parameters = static_cast<double>(shapes.parameters);  // the module's own count, buffers aside
    DeviceMemory m = part(s.compute.device, "", l, static_cast<double>(shapes.trainable()));
    if (s.compute.activation_checkpointing)
      m.activations = static_cast<double>(s.workload.batch_size) *
                      checkpointed_outputs(shapes.layers, fsdp_unit_pattern(s)) * activation_bytes;
    m.optimizer += 4 * second_order_floats_per_gpu(o, shapes.second_order, s.nodes);
    // Replica groups (docs/replica_groups.md): a GPU keeps its slice of what its group shards,
    // and of the algorithm's vectors, which it exchanges slice by slice across the groups.
    const ReplicaGroupSection& g = s.replica_group;
    if (g.grouped()) {
      m.algorithm /= g.gpus;
      if (g.parallelism == GroupParallelism::Zero1 || g.parallelism == GroupParallelism::Zero2) {
        m.optimizer /= g.gpus;
        // Mixed precision: the bf16 or fp16 parameters stay whole, the fp32 master copy is
        // sharded with the optimizer's state (DeepSpeed's ZeRO-1 and -2).
        if (autocast) m.weights = l.parameters * (2 + 4.0 / g.gpus);
      }
      if (g.parallelism == GroupParallelism::Zero2) m.gradients /= g.gpus;
      if (g.parallelism == GroupParallelism::Fsdp) fsdp_memory(s, shapes, l.parameters, m);
    }
    return {m};
  }
  // Split fine-tuning: the edge holds the front, the cloud one back half (an edge's).
  const auto* split = std::get_if<SplitOptions>(&s.algorithm.options);
  const LayerSums front = sums(shapes.layers, 0, shapes.cut_layer),
                  back = sums(shapes.layers, shapes.cut_layer, shapes.layers.size());
  DeviceMemory edge = part(s.compute.device, "edge", front, front.trainable),
               cloud = part(split ? split->cloud : s.compute.device, "cloud", back, back.trainable);
  // The cut's op buffer: the step's activations and their gradient.
  edge.algorithm = cloud.algorithm = 8.0 * s.workload.batch_size * static_cast<double>(shapes.cut_values_per_sample);
  return {edge, cloud};
}

std::string device_memory_text(const DeviceMemory& m, int batch) {
  return m.device + " holds " + gib(m.capacity) + "; " + (m.part.empty() ? "a GPU" : "the " + m.part) +
         " needs about " + gib(m.total()) + ": weights " + gib(m.weights) + ", gradients " + gib(m.gradients) +
         ", optimizer state " + gib(m.optimizer) + ", activations " + gib(m.activations) + " (batch " +
         std::to_string(batch) + ", every layer's output kept for backward), the algorithm's buffers " +
         gib(m.algorithm);
}

}  // namespace testbed
