// Compute model: fixed seconds per step, or FLOPs / (peak x MFU).
#include "sim/compute_model.h"

#include <stdexcept>

namespace testbed {

const std::vector<DevicePreset>& device_presets() {
  static const std::vector<DevicePreset> presets = {
      {"h100", 989e12}, {"a100", 312e12}, {"rtx4090", 165e12}, {"v100", 125e12},
      {"t4", 65e12},    {"l4", 121e12},   {"cpu", 1e12}};
  return presets;
}

std::vector<std::string> ComputeSection::device_presets() {
  std::vector<std::string> names;
  for (const auto& p : testbed::device_presets()) names.push_back(p.name);
  return names;
}

ComputeModel::ComputeModel(const ComputeSection& section, double flops_per_step)
    : section_(section), flops_per_step_(flops_per_step), seconds_(section.step_time.s) {
  if (section.model == "flops") {
    double peak = section.peak_flops;
    for (const auto& p : device_presets()) {
      if (peak <= 0 && p.name == section.device) peak = p.peak_flops;
    }
    if (peak <= 0) throw std::invalid_argument("unknown device preset '" + section.device + "'");
    seconds_ = flops_per_step / (peak * section.mfu);
  }
}

double ComputeModel::step_seconds(int /*node*/, int /*step*/) const { return seconds_; }

}  // namespace testbed
