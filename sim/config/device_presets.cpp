// Device presets from the vendors' datasheets, and their names for the scenario's key.
#include "sim/config/device_presets.h"

#include <stdexcept>

#include "sim/config/scenario.h"

namespace testbed {

// Dense (non-sparse) peaks from the vendors' datasheets: where a datasheet gives only the
// figure "with sparsity", the dense one is half of it. GPU launch latency: ~5 us per kernel is
// the commonly cited cost of an eager framework's launch (CUDA's own launch is a few us, plus
// dispatch); it is not a datasheet figure. Memory: the datasheet's GB read as GiB, as nvidia-smi
// shows these cards (an H100 80GB reports 81 559 MiB usable, 0.4 % below 80 GiB); the V100 is
// the 32 GB SXM2, the B200 one GPU of an HGX B200 (1.44 TB over 8), the Jetson's 64 GB are
// shared with its CPU, and the CPU socket's 512 GiB is 8 channels of 64 GB DIMMs (no datasheet).
const std::vector<DevicePreset>& device_presets() {
  static const std::vector<DevicePreset> presets = {
      //                    fp32     tf32      bf16      fp16      memory B/s  launch
      // NVIDIA H100 SXM5 datasheet: FP32 67, TF32 989 sparse, BF16 and FP16 1979 sparse; HBM3 3.35 TB/s.
      {"h100", 67e12, 494.5e12, 989e12, 989e12, 3.35e12, 5e-6, 80},
      // NVIDIA H200 SXM datasheet: the H100's arithmetic (FP32 67, TF32 989, BF16/FP16 1979,
      // all but FP32 with sparsity); HBM3e 4.8 TB/s.
      {"h200", 67e12, 494.5e12, 989.5e12, 989.5e12, 4.8e12, 5e-6, 141},
      // NVIDIA HGX B200 datasheet, one GPU: FP32 75, TF32 2.2 P sparse, FP16/BF16 4.5 P sparse;
      // HBM3e 7.7 TB/s.
      {"b200", 75e12, 1.1e15, 2.25e15, 2.25e15, 7.7e12, 5e-6, 180},
      // NVIDIA A100 datasheet, 80GB SXM: FP32 19.5, TF32 156, BF16/FP16 312 dense; HBM2e 2039 GB/s.
      // FP32 is the non-TF32 figure: PyTorch (>= 1.12) runs fp32 matmuls without TF32 by default.
      {"a100", 19.5e12, 156e12, 312e12, 312e12, 2.039e12, 5e-6, 80},
      // The same datasheet, 40GB SXM: the same arithmetic, HBM2 1555 GB/s.
      {"a100_40gb", 19.5e12, 156e12, 312e12, 312e12, 1.555e12, 5e-6, 40},
      // The same datasheet, 80GB PCIe: the same arithmetic, HBM2e 1935 GB/s.
      {"a100_pcie", 19.5e12, 156e12, 312e12, 312e12, 1.935e12, 5e-6, 80},
      // AMD Instinct MI300X datasheet: FP32 163.4, TF32 653.7, BF16 and FP16 1307.4 (dense);
      // HBM3 5.3 TB/s.
      {"mi300x", 163.4e12, 653.7e12, 1307.4e12, 1307.4e12, 5.3e12, 5e-6, 192},
      // NVIDIA Ada (AD102) whitepaper, GeForce RTX 4090: FP32 82.6, TF32 82.6, BF16 and FP16
      // with FP32 accumulate 165.2 dense; GDDR6X 1008 GB/s. GeForce: no PCIe peer-to-peer.
      {"rtx4090", 82.6e12, 82.6e12, 165.2e12, 165.2e12, 1.008e12, 5e-6, 24, false},
      // NVIDIA RTX 2080 Ti (Turing TU102) whitepaper: FP32 13.4, FP16 tensor with FP32 accumulate
      // 53.8 (DeAR's and ACP-SGD's testbeds); no TF32, no BF16; GDDR6 616 GB/s. GeForce: no PCIe
      // peer-to-peer (only over an NVLink bridge of two cards).
      {"rtx2080ti", 13.4e12, 0, 0, 53.8e12, 616e9, 5e-6, 11, false},
      // NVIDIA V100 SXM2 datasheet: FP32 15.7, FP16 tensor 125; no TF32, no BF16; HBM2 900 GB/s.
      {"v100", 15.7e12, 0, 0, 125e12, 900e9, 5e-6, 32},
      // NVIDIA T4 datasheet: FP32 8.1, FP16 tensor 65; no TF32, no BF16; GDDR6 320 GB/s.
      {"t4", 8.1e12, 0, 0, 65e12, 320e9, 5e-6, 16},
      // NVIDIA L4 datasheet: FP32 30.3, TF32 120 sparse, BF16 and FP16 242 sparse; GDDR6 300 GB/s.
      {"l4", 30.3e12, 60e12, 121e12, 121e12, 300e9, 5e-6, 24},
      // NVIDIA Jetson AGX Orin 64GB (Jetson AGX Orin Series Technical Brief v1.2): 2048 CUDA cores,
      // 5.3 FP32 TFLOPS; 64 tensor cores, 170 sparse INT8 TOPS, so 85 dense and FP16/BF16 at half
      // the INT8 rate, 42.5; TF32 at half of FP16 as on every Ampere part; 256-bit LPDDR5
      // 204.8 GB/s, shared with the CPU. The edge of split fine-tuning.
      {"jetson_agx_orin", 5.3e12, 21.25e12, 42.5e12, 42.5e12, 204.8e9, 5e-6, 64},
      // One 32-core AVX-512 server socket at 2.5 GHz: 32 x 2 FMA units x 16 lanes x 2 FLOPs x
      // 2.5e9 = 5.12 TFLOPS FP32, doubled by AVX512-BF16 dot products (no TF32, no FP16
      // arithmetic); 8 channels of DDR5-4800 = 307 GB/s. An eager CPU op has no device launch,
      // only dispatch: LibTorch's per-op overhead with autograd recording, 1.0 us on this host
      // (build/testbed_roofline).
      {"cpu", 5.12e12, 0, 10.24e12, 0, 307.2e9, 1e-6, 512}};
  return presets;
}

const std::vector<Precision>& precisions() {
  static const std::vector<Precision> all = {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp16};
  return all;
}

double preset_peak(const DevicePreset& p, Precision dtype) {
  switch (dtype) {
    case Precision::Fp32:
      return p.fp32_flops;
    case Precision::Tf32:
      return p.tf32_flops;
    case Precision::Bf16:
      return p.bf16_flops;
    case Precision::Fp16:
      return p.fp16_flops;
  }
  throw std::invalid_argument("unknown precision " + std::to_string(static_cast<int>(dtype)));
}

std::string preset_dtypes(const DevicePreset& p) {
  std::string has;
  for (Precision dtype : precisions())
    if (preset_peak(p, dtype) > 0) has += (has.empty() ? "" : ", ") + enum_name(dtype);
  return has;
}

int dtype_bytes(Precision dtype) { return dtype == Precision::Bf16 || dtype == Precision::Fp16 ? 2 : 4; }

std::vector<std::string> ComputeSection::device_presets() {
  std::vector<std::string> names;
  for (const auto& p : testbed::device_presets()) names.push_back(p.name);
  return names;
}

}  // namespace testbed
