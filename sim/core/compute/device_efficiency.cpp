// The calibrated efficiencies of every device preset (docs/compute.md, "Calibration").
#include "sim/core/compute/device_efficiency.h"

#include <map>
#include <stdexcept>

namespace testbed {

const DeviceEfficiency& device_efficiency(const std::string& preset) {
  // SMs from the vendors' datasheets and whitepapers (MI300X: compute units; the cpu preset
  // has none: no wave floor). `memory`: BabelStream's copy kernel against the datasheet (the
  // H100's from mt4g's read benchmark, the T4's from NVIDIA's bandwidthTest). The others were
  // fitted to docs/measurements/training_throughputs.csv's `fit` rows as docs/compute.md says, each
  // named by its rows; a preset without measurements borrows the nearest measured one's.
  static const std::map<std::string, DeviceEfficiency> table = {
      //                      sms  tensor  fp32   conv   memory
      {"v100", {80, 0.581, 1.0, 0.992, 0.90}},        // R12; R1 (fp32 x conv); R2
      {"rtx2080ti", {68, 0.581, 0.92, 0.992, 0.89}},  // tensor and conv the V100's (checked: R5); fp32 R6
      {"t4", {40, 0.581, 0.92, 0.992, 0.75}},         // the RTX 2080 Ti's (Turing)
      {"a100", {108, 0.661, 0.92, 0.727, 0.84}},      // tensor R13 and R26 together; conv R4; fp32 the 2080 Ti's
      {"a100_40gb", {108, 0.661, 0.92, 0.727, 0.90}},
      {"a100_pcie", {108, 0.661, 0.92, 0.727, 0.84}},
      {"rtx4090", {128, 0.661, 0.92, 0.673, 0.91, false}},  // tensor, fp32 the A100's; conv R8 (checked: R9)
      {"l4", {58, 0.661, 0.92, 0.673, 0.91, false}},        // the RTX 4090's (Ada)
      {"jetson_agx_orin", {16, 0.661, 0.92, 0.727, 0.84}},  // the A100's (Ampere)
      {"h100", {132, 0.545, 0.92, 0.727, 0.82}},            // tensor R27; conv the A100's (checked: R11)
      {"h200", {132, 0.545, 0.92, 0.727, 0.82}},            // the H100's (the same chip)
      {"b200", {148, 0.545, 0.92, 0.727, 0.82}},            // the H100's
      {"mi300x", {304, 0.545, 0.92, 0.727, 0.82}},          // the H100's
      {"cpu", {0, 1.0, 1.0, 1.0, 1.0}},                     // not calibrated: the preset's figures as they are
  };
  auto it = table.find(preset);
  if (it == table.end()) throw std::invalid_argument("no calibrated efficiencies for device preset '" + preset + "'");
  return it->second;
}

}  // namespace testbed
