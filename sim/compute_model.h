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

class ComputeModel {
 public:
  ComputeModel(const ComputeSection& section, double flops_per_step);
  // Seconds of compute for one training step of `node`. Deterministic.
  double step_seconds(int node, int step) const;
  double flops_per_step() const { return flops_per_step_; }

 private:
  ComputeSection section_;
  double flops_per_step_;
  double seconds_;
};

}  // namespace testbed
