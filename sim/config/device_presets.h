// The devices a scenario can name for the roofline compute model (compute.device), with
// their vendor datasheet figures (sources in device_presets.cpp).
#pragma once

#include <string>
#include <vector>

namespace testbed {

// A device as the roofline sees it: vendor datasheet figures.
struct DevicePreset {
  std::string name;
  double fp32_flops;        // dense FP32 peak (no TF32: PyTorch's default for fp32 matmuls)
  double bf16_flops;        // dense BF16 tensor peak (FP16 where the device has no BF16)
  double memory_bandwidth;  // bytes per second
  double launch_latency;    // seconds per kernel launch
};

const std::vector<DevicePreset>& device_presets();

}  // namespace testbed
