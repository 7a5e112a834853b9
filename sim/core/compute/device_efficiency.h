// How close each device preset's kernels come to its datasheet peaks in training, by kind of
// kernel: fitted to published measured throughputs (docs/compute.md, "Calibration").
#pragma once

#include <string>

namespace testbed {

struct DeviceEfficiency {
  int sms = 0;             // streaming multiprocessors (compute units): the datasheet's count
  double tensor = 0;       // a large GEMM's share of the tensor peak (tf32, bf16, fp16)
  double fp32 = 0;         // a large GEMM's share of the fp32 peak (CUDA cores, no TF32)
  double convolution = 0;  // a convolution's rate against a GEMM's of the same dtype
  double memory = 0;       // an elementwise or normalisation pass's share of the memory bandwidth
  // Whether a tensor-core convolution on NCHW tensors pays a transpose of its input and output
  // to NHWC and back (cuDNN's tensor-core kernels read NHWC). Ada's published NCHW rows run
  // faster than the model allows with them, even at every efficiency 1 (docs/compute.md).
  bool nchw_transposes = true;
};

// The preset's figures; throws std::invalid_argument for a name with none.
const DeviceEfficiency& device_efficiency(const std::string& preset);

}  // namespace testbed
