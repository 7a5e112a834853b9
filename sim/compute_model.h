// How long a node's local computation takes in projected time (DESIGN decision 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace testbed {

struct DevicePreset {
  std::string name;
  double peak_flops;  // dense peak at training precision
};

// Named accelerators for the flops model (peak dense bf16/fp16 tensor throughput, vendor figures).
const std::vector<DevicePreset>& device_presets();

// Step time of node n = base / speed(n) x noise(n, step), where base comes from the model
// (fixed seconds, FLOPs / (peak x MFU), or measured host seconds x scale), speed(n) is the
// node's relative speed (heterogeneous fleets) and noise = exp(sigma z), z ~ N(0,1) drawn from
// (seed, node, step) alone, so it does not depend on the order of calls.
class ComputeModel {
 public:
  // nodes: fleet size; seed: the scenario seed (speeds from stream "speeds", straggler noise
  // from stream "stragglers" indexed by node). Throws std::invalid_argument on bad sections.
  ComputeModel(const ComputeSection& section, double flops_per_step, int nodes, uint64_t seed);
  // Seconds of compute for node's step. host_seconds is the host time the real local step took
  // (used only by the measured model).
  double step_seconds(int node, int step, double host_seconds) const;
  double speed(int node) const;            // relative speed factor of the node (1 = nominal)
  bool deterministic() const;              // false for the measured model
  double flops_per_step() const;

 private:
  double noise(int node, int step) const;

  ComputeSection section_;
  double flops_per_step_;
  int nodes_;
  uint64_t seed_;
  double base_seconds_ = 0;    // fixed and flops models
  bool measured_ = false;
  std::vector<double> speeds_;  // per node
};

}  // namespace testbed
