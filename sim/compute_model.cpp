// Compute model: fixed seconds per step, FLOPs / (peak x MFU), or measured host time, scaled
// per node by a relative speed and per step by lognormal straggler noise.
#include "sim/compute_model.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <random>

#include "sim/seed_streams.h"

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

namespace {

constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;  // 2^-53
constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;        // splitmix64 increment
constexpr double kTwoPi = 6.283185307179586476925286766559;

// [0, 1) from the top 53 bits.
double unit_closed_open(uint64_t x) { return static_cast<double>(x >> 11) * kTwoPow53Inv; }
// (0, 1]: safe for log.
double unit_open_closed(uint64_t x) { return static_cast<double>((x >> 11) + 1) * kTwoPow53Inv; }

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

ComputeModel::ComputeModel(const ComputeSection& section, double flops_per_step, int nodes,
                           uint64_t seed)
    : section_(section), flops_per_step_(flops_per_step), nodes_(nodes), seed_(seed) {
  if (nodes < 1) throw std::invalid_argument("compute model: nodes must be >= 1, got " + std::to_string(nodes));

  if (section.model == "fixed") {
    if (!(section.step_time.s >= 0) || !std::isfinite(section.step_time.s))
      throw std::invalid_argument("compute.step_time must be a finite non-negative duration, got " +
                                  num(section.step_time.s));
    base_seconds_ = section.step_time.s;
  } else if (section.model == "flops") {
    double peak = section.peak_flops;
    if (!(peak > 0)) {
      for (const auto& p : device_presets()) {
        if (p.name == section.device) peak = p.peak_flops;
      }
      if (!(peak > 0)) {
        std::string known;
        for (const auto& p : device_presets()) known += (known.empty() ? "" : ", ") + p.name;
        throw std::invalid_argument("compute.device: unknown device preset '" + section.device +
                                    "' (known: " + known + "; or set compute.peak_flops)");
      }
    }
    if (!(section.mfu > 0) || section.mfu > 1)
      throw std::invalid_argument("compute.mfu must be in (0, 1], got " + num(section.mfu));
    if (!(flops_per_step >= 0) || !std::isfinite(flops_per_step))
      throw std::invalid_argument("compute model: flops per step must be finite and non-negative");
    base_seconds_ = flops_per_step / (peak * section.mfu);
  } else if (section.model == "measured") {
    if (!(section.measured_scale > 0) || !std::isfinite(section.measured_scale))
      throw std::invalid_argument("compute.measured_scale must be positive, got " +
                                  num(section.measured_scale));
    measured_ = true;
  } else {
    throw std::invalid_argument("compute.model: unknown model '" + section.model +
                                "' (expected fixed, flops or measured)");
  }

  if (!(section.straggler_sigma >= 0) || !std::isfinite(section.straggler_sigma))
    throw std::invalid_argument("compute.straggler_sigma must be finite and non-negative, got " +
                                num(section.straggler_sigma));

  speeds_.resize(static_cast<size_t>(nodes));
  if (!section.speeds.empty()) {
    for (size_t i = 0; i < section.speeds.size(); ++i) {
      double v = section.speeds[i];
      if (!(v > 0) || !std::isfinite(v))
        throw std::invalid_argument("compute.speeds[" + std::to_string(i) +
                                    "] must be a positive finite speed, got " + num(v));
    }
    for (int n = 0; n < nodes; ++n) speeds_[n] = section.speeds[n % section.speeds.size()];
  } else {
    double lo = section.speed_min, hi = section.speed_max;
    if (!(lo > 0) || !std::isfinite(lo))
      throw std::invalid_argument("compute.speed_min must be a positive finite speed, got " + num(lo));
    if (!(hi > 0) || !std::isfinite(hi))
      throw std::invalid_argument("compute.speed_max must be a positive finite speed, got " + num(hi));
    if (lo > hi)
      throw std::invalid_argument("compute.speed_min (" + num(lo) + ") must not exceed compute.speed_max (" +
                                  num(hi) + ")");
    if (lo == hi) {
      for (auto& s : speeds_) s = lo;
    } else {
      std::mt19937_64 rng(stream_seed(seed, "speeds"));
      for (int n = 0; n < nodes; ++n) speeds_[n] = lo + (hi - lo) * unit_closed_open(rng());
    }
  }
}

double ComputeModel::speed(int node) const {
  if (node < 0 || node >= nodes_)
    throw std::out_of_range("compute model: node " + std::to_string(node) + " outside fleet of " +
                            std::to_string(nodes_));
  return speeds_[static_cast<size_t>(node)];
}

// exp(sigma z) with z ~ N(0,1) a pure function of (seed, node, step): Box-Muller on two
// splitmix64 outputs of the node's straggler stream at positions 2 step and 2 step + 1.
double ComputeModel::noise(int node, int step) const {
  const double sigma = section_.straggler_sigma;
  if (sigma == 0) return 1.0;
  const uint64_t base = stream_seed(seed_, "stragglers", static_cast<uint64_t>(node));
  const uint64_t k = 2 * static_cast<uint64_t>(static_cast<int64_t>(step));
  const double u1 = unit_open_closed(mix64(base + k * kGamma));
  const double u2 = unit_closed_open(mix64(base + (k + 1) * kGamma));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
  return std::exp(sigma * z);
}

double ComputeModel::step_seconds(int node, int step, double host_seconds) const {
  const double base = measured_ ? host_seconds * section_.measured_scale : base_seconds_;
  return base / speed(node) * noise(node, step);
}

bool ComputeModel::deterministic() const { return !measured_; }

double ComputeModel::flops_per_step() const { return flops_per_step_; }

}  // namespace testbed
