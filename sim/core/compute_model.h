// How long a node's local computation takes in projected time (docs/architecture.md, decision 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/device_presets.h"
#include "sim/config/scenario.h"
#include "training/layer_cost.h"

namespace testbed {

// The device limits a step runs against.
struct Roof {
  double flops = 0;              // achievable FLOP/s: peak for the dtype x MFU
  double memory_bandwidth = 0;   // bytes per second
  double launch_latency = 0;     // seconds per kernel
  double bytes_per_element = 4;  // activations and GEMM operands (fp32 4, bf16 2)
};

// Totals of one step on a roof (before node speeds and straggler noise).
struct StepCost {
  double flops = 0;          // forward + input-gradient + weight-gradient FLOPs
  double bytes = 0;          // memory traffic, optimizer included
  int64_t kernels = 0;       // launches: forward, backward, optimizer
  double compute_bound = 0;  // seconds of passes limited by FLOPs
  double memory_bound = 0;   // seconds of passes limited by bandwidth (optimizer included)
  double launch = 0;         // kernels x launch latency
  double seconds() const { return compute_bound + memory_bound + launch; }
};

// Bytes the optimizer moves per trainable parameter, zeroing the gradient buffer included.
double optimizer_bytes_per_parameter(const std::string& optimizer, bool momentum);

// The roofline: each layer's forward, input-gradient and weight-gradient passes take
// max(FLOPs / roof.flops, bytes / bandwidth); frozen layers skip the weight gradient, and
// layers with nothing trainable before them skip the input gradient (autograd stops
// there). The optimizer step is a memory-bound pass over the trainable parameters. Every
// kernel adds the launch latency.
StepCost roofline(const TrainingWork& work, const Roof& roof);

// Step time of node n = base / speed(n) x noise(n, step), where base comes from the model
// (fixed seconds, the roofline of the step's work, or measured host seconds x scale),
// speed(n) is the node's relative speed (heterogeneous fleets) and noise = exp(sigma z),
// z ~ N(0,1) drawn from (seed, node, step) alone, so it does not depend on the order of calls.
class ComputeModel {
 public:
  // nodes: fleet size; seed: the scenario seed (speeds from stream "speeds", straggler noise
  // from stream "stragglers" indexed by node). Throws std::invalid_argument on bad sections.
  ComputeModel(const ComputeSection& section, const TrainingWork& work, int nodes, uint64_t seed);
  // A step of exactly flops_per_step FLOPs with no memory traffic or launches (the roofline
  // of pure arithmetic), for callers without a model.
  ComputeModel(const ComputeSection& section, double flops_per_step, int nodes, uint64_t seed);
  // Seconds of compute for node's step. host_seconds is the host time the real local step took
  // (used only by the measured model).
  double step_seconds(int node, int step, double host_seconds) const;
  double speed(int node) const;            // relative speed factor of the node (1 = nominal)
  bool deterministic() const;              // false for the measured model
  double flops_per_step() const { return cost_.flops; }
  const StepCost& step_cost() const { return cost_; }  // the flops model's breakdown

 private:
  double noise(int node, int step) const;

  ComputeSection section_;
  StepCost cost_;
  int nodes_;
  uint64_t seed_;
  double base_seconds_ = 0;    // fixed and flops models
  bool measured_ = false;
  std::vector<double> speeds_;  // per node
};

// The roof a compute section describes: its device preset with overrides applied. Throws
// std::invalid_argument for an unknown device or bad values.
Roof compute_roof(const ComputeSection& section);

}  // namespace testbed
