// Device presets from the vendors' datasheets, and their names for the scenario's key.
#include "sim/config/device_presets.h"

#include "sim/config/scenario.h"

namespace testbed {

// Dense (non-sparse) peaks from the vendors' datasheets. GPU launch latency: ~5 us per
// kernel is the commonly cited cost of an eager framework's launch (CUDA's own launch is a few
// us, plus dispatch); it is not a datasheet figure.
const std::vector<DevicePreset>& device_presets() {
  static const std::vector<DevicePreset> presets = {
      // NVIDIA H100 SXM5 datasheet: FP32 67 TFLOPS, BF16 1979 sparse = 989 dense, HBM3 3.35 TB/s.
      {"h100", 67e12, 989e12, 3.35e12, 5e-6},
      // NVIDIA A100 80GB SXM datasheet: FP32 19.5, BF16 312 dense, HBM2e 2039 GB/s. FP32 is the
      // non-TF32 figure: PyTorch (>= 1.12) runs fp32 matmuls without TF32 by default.
      {"a100", 19.5e12, 312e12, 2.039e12, 5e-6},
      // NVIDIA Ada (AD102) whitepaper, GeForce RTX 4090: FP32 82.6, BF16 with FP32 accumulate
      // 165.2 dense, GDDR6X 1008 GB/s.
      {"rtx4090", 82.6e12, 165.2e12, 1.008e12, 5e-6},
      // NVIDIA V100 SXM2 datasheet: FP32 15.7, FP16 tensor 125 (no BF16), HBM2 900 GB/s.
      {"v100", 15.7e12, 125e12, 900e9, 5e-6},
      // NVIDIA T4 datasheet: FP32 8.1, FP16 tensor 65 (no BF16), GDDR6 320 GB/s.
      {"t4", 8.1e12, 65e12, 320e9, 5e-6},
      // NVIDIA L4 datasheet: FP32 30.3, BF16 242 sparse = 121 dense, GDDR6 300 GB/s.
      {"l4", 30.3e12, 121e12, 300e9, 5e-6},
      // One 32-core AVX-512 server socket at 2.5 GHz: 32 x 2 FMA units x 16 lanes x 2 FLOPs x
      // 2.5e9 = 5.12 TFLOPS FP32, doubled by AVX512-BF16 dot products; 8 channels of DDR5-4800
      // = 307 GB/s. An eager CPU op has no device launch, only dispatch: LibTorch's per-op
      // overhead with autograd recording, 1.0 us on this host (build/testbed_roofline).
      {"cpu", 5.12e12, 10.24e12, 307.2e9, 1e-6}};
  return presets;
}

std::vector<std::string> ComputeSection::device_presets() {
  std::vector<std::string> names;
  for (const auto& p : testbed::device_presets()) names.push_back(p.name);
  return names;
}

}  // namespace testbed
