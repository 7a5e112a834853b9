// What one GPU holds while it trains a step of the scenario, against its preset's memory: the
// weights, their gradients, the optimizer's state, the activations autograd keeps for backward
// and the algorithm's own buffers. A projection that would not fit describes a machine that
// cannot exist; the scenario's rules refuse it (compute.memory_check).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "training/models/model_shapes.h"

namespace testbed {

struct DeviceMemory {
  std::string device;
  double capacity = 0;     // bytes: the preset's
  double weights = 0;      // every parameter in fp32, plus autocast's bf16/fp16 copies of them
  double gradients = 0;    // the trainable parameters' in fp32
  double optimizer = 0;    // moments, momentum, a second-order optimizer's own state
  double activations = 0;  // batch x every layer's output per sample x the dtype's bytes
  double algorithm = 0;    // the algorithm's parameter-sized vectors and one op buffer
  std::string part;        // "" for a whole replica; "edge" or "cloud" for a split model's half
  double total() const { return weights + gradients + optimizer + activations + algorithm; }
};

// Floats a second-order optimizer keeps beyond its SGD, summed over `nodes` replicas (Eva: d_a +
// d_g a layer; K-FAC on every node: factors, inverses or eigenvectors and eigenvalues, the
// direction; DP-KFAC: factors and inverses on each layer's owner, the direction everywhere).
double second_order_floats(const OptimizerSection& optimizer, const std::vector<SecondOrderLayer>& layers, int nodes);
// The most any one of `nodes` replicas holds.
double second_order_floats_per_gpu(const OptimizerSection& optimizer, const std::vector<SecondOrderLayer>& layers,
                                   int nodes);

// Each device the scenario's step runs on (one; two for split fine-tuning's edge and cloud),
// with what it holds. Only meaningful for compute.model flops, whose device is the preset's.
std::vector<DeviceMemory> device_memory(const Scenario& scenario, const ModelShapes& shapes);

// "rtx4090 holds 24.00 GiB; a GPU needs about 31.20 GiB: weights ..., ..." (the breakdown).
std::string device_memory_text(const DeviceMemory& memory, int batch);

}  // namespace testbed
