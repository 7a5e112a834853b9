// How long a node's local computation takes in projected time (docs/architecture.md, decision 2).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/config/device_presets.h"
#include "sim/config/scenario.h"
#include "training/models/layer_cost.h"

namespace testbed {

// The device limits a step runs against.
struct Roof {
  double flops = 0;              // FLOP/s a large GEMM reaches: peak for the dtype x its efficiency
  double memory_bandwidth = 0;   // bytes per second a memory-bound pass reaches
  double launch_latency = 0;     // seconds per kernel
  double bytes_per_element = 4;  // activations and GEMM operands (fp32 4, bf16 2)
  double convolution_flops = 0;  // FLOP/s a large convolution reaches; 0: as a GEMM
  // FLOPs of one wave: a 128 x 128 x 128 tile on every SM (SMs x 2 x 128^3). A GEMM or
  // convolution takes at least a wave's time: a smaller one leaves SMs idle. 0: no such floor.
  double wave_flops = 0;
  // NCHW activations on tensor cores: cuDNN's tensor-core kernels take NHWC, so each pass of a
  // convolution first transposes what it reads and then what it writes (one read and one write
  // of its input and its output, two kernels).
  bool convolution_transposes = false;
  // A GEMM's or convolution's K loop against its tile's fill and write-back: a product of
  // inner dimension K reaches K / (K + tile_depth) of its rate (128: CUTLASS's and cuBLAS's
  // usual 128-deep pipeline of tiles). 0: no such loss.
  double tile_depth = 0;
};

// Totals of one step on a roof (before node speeds and straggler noise).
struct StepCost {
  double flops = 0;          // forward + input-gradient + weight-gradient FLOPs
  double bytes = 0;          // memory traffic, optimizer included
  int64_t kernels = 0;       // launches: forward, backward, optimizer
  double compute_bound = 0;  // seconds of passes limited by FLOPs
  double memory_bound = 0;   // seconds of passes limited by bandwidth (optimizer included)
  double launch = 0;         // kernels x launch latency
  // The same seconds by pass, launches included: each layer's forward, each layer's backward
  // (input and weight gradients), in TrainingWork::layers order, and the optimizer update.
  std::vector<double> forward, backward;
  double update = 0;
  double seconds() const { return compute_bound + memory_bound + launch; }
};

// Where a step's compute time goes, as shares of it that sum to 1: each layer's forward pass,
// each layer's backward pass (indexed like the forward; run in reverse), then the optimizer
// update. A node runs them in that order, so a layer's gradients exist from the end of its
// backward pass on (when DDP's buckets can leave).
struct StepShares {
  std::vector<double> forward, backward;
  double update = 0;
  // Share of the step elapsed when layer `layer`'s forward pass starts.
  double forward_before(int layer) const;
  // Share of the step elapsed when layer `layer`'s backward pass ends.
  double backward_done(int layer) const;
  double backward_end() const;  // all of forward and backward
};

// `cost`'s passes as shares of its step. A step that takes no time is all backward of layer 0:
// gradients exist only when it ends.
StepShares step_shares(const StepCost& cost);

// A roof on which a pass takes as many seconds as it has FLOPs, and bytes and launches take
// none. The flops model's shares are its roofline's seconds by pass; the fixed and measured
// models split the step by the roofline on this roof (forward B x f, input gradient g x B x f,
// weight gradient B x f; the update, which has no FLOPs, takes no share).
inline Roof flop_count_roof() { return Roof{1, std::numeric_limits<double>::infinity(), 0, 4}; }

// Bytes the optimizer moves per trainable parameter, zeroing the gradient buffer included.
double optimizer_bytes_per_parameter(OptimizerKind optimizer, bool momentum);

// The roofline: each layer's forward, input-gradient and weight-gradient passes take
// max(max(FLOPs, one wave) / rate, bytes / bandwidth), the rate a GEMM's or a convolution's
// (roof.flops or roof.convolution_flops); frozen layers skip the weight gradient, and
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
  // Seconds of an algorithm's extra work in node's step: on the roof under `flops`, with the
  // node's speed and noise; 0 under `fixed` (the step time is given); under `measured`, the
  // host seconds it took (0 for work already inside the step's host time).
  double extra_seconds(int node, int step, const ExtraWork& work, double host_seconds = 0) const;
  double speed(int node) const;  // relative speed factor of the node (1 = nominal)
  bool deterministic() const;    // false for the measured model
  double flops_per_step() const { return cost_.flops; }
  const StepCost& step_cost() const { return cost_; }   // the flops model's breakdown
  const StepShares& shares() const { return shares_; }  // a step's passes, in order

 private:
  double noise(int node, int step) const;

  ComputeSection section_;
  StepCost cost_;
  StepShares shares_;
  int nodes_;
  uint64_t seed_;
  double base_seconds_ = 0;  // fixed and flops models
  Roof roof_;                // flops model
  bool measured_ = false;
  std::vector<double> speeds_;  // per node
};

// The roof a compute section describes: its device preset with overrides applied. Throws
// std::invalid_argument for an unknown device or bad values.
Roof compute_roof(const ComputeSection& section);

}  // namespace testbed
