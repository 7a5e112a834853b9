// The devices a scenario can name for the roofline compute model (compute.device), with
// their vendor datasheet figures (sources in device_presets.cpp).
#pragma once

#include <string>
#include <vector>

namespace testbed {

// A device as the roofline sees it: vendor datasheet figures. A peak of 0: the device has no
// such arithmetic (V100 has no BF16), and a scenario asking for it is refused.
struct DevicePreset {
  std::string name;
  double fp32_flops;        // dense FP32 (no TF32: PyTorch's default for fp32 matmuls)
  double tf32_flops;        // dense TF32 tensor (fp32 storage, TF32 matmuls: allow_tf32)
  double bf16_flops;        // dense BF16 tensor, FP32 accumulate
  double fp16_flops;        // dense FP16 tensor, FP32 accumulate
  double memory_bandwidth;  // bytes per second
  double launch_latency;    // seconds per kernel launch
  double memory_gib;        // device memory, the datasheet's GB read as GiB (as nvidia-smi shows them)
  // Whether GPUs of this kind reach each other peer-to-peer over PCIe (GeForce cards do not:
  // NCCL stages their traffic through host memory, collective.local_transport shm).
  bool pcie_peer_to_peer = true;
};

const std::vector<DevicePreset>& device_presets();

// The precision a GPU trains in (compute.dtype): it picks the preset's peak and the bytes of an
// activation. tf32 keeps fp32 storage and multiplies on the tensor cores.
enum class Precision { Fp32, Tf32, Bf16, Fp16 };

// Every precision, in the enum's order.
const std::vector<Precision>& precisions();

// The preset's peak for `dtype` (0 when the device has none); bytes a weight or activation
// element takes in it.
double preset_peak(const DevicePreset& preset, Precision dtype);
int dtype_bytes(Precision dtype);

// The dtypes the preset has a peak for: "fp32, fp16".
std::string preset_dtypes(const DevicePreset& preset);

}  // namespace testbed
