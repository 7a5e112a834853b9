// Compute model: fixed seconds per step, a roofline of the model's layers on a device, or
// measured host time, scaled per node by a relative speed and per step by lognormal noise.
#include "sim/core/compute/compute_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "sim/config/layer_profile.h"
#include "sim/core/compute/device_efficiency.h"
#include "training/seed_streams.h"

namespace testbed {

namespace {

constexpr double kTwoPow53Inv = 1.0 / 9007199254740992.0;  // 2^-53
constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;         // splitmix64 increment
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

double optimizer_bytes_per_parameter(OptimizerKind optimizer, bool momentum) {
  // Optimizer state stays fp32 whatever the training dtype (mixed precision keeps fp32 master
  // weights and moments), and the update is assumed fused: one read of each input, one write of
  // each output. Every step also zeroes the flat gradient buffer (4 bytes written).
  constexpr double zero_grad = 4;
  if (optimizer == OptimizerKind::AdamW || optimizer == OptimizerKind::Adam)
    return 16 + 12 + zero_grad;  // reads p g m v, writes p m v
  if (optimizer == OptimizerKind::Sgd)
    return (momentum ? 12 + 8 : 8 + 4) + zero_grad;  // reads p g [buf], writes p [buf]
  // Eva's preconditioning before SGD, kernel by kernel as the reference runs it (unfused, 4-byte
  // elements): g^T grad a reads grad (4); the outer product g a^T writes v (4); scaling it
  // reads and writes v (8); adding grad reads both, writes v (12); dividing by the damping (8);
  // KL's v . grad reads both and writes the product (12), its sum reads it (4); the copy into
  // grad (8); the scale by nu (8). Its vectors come from 16 samples a layer: not counted.
  if (optimizer == OptimizerKind::Eva)
    return (momentum ? 12 + 8 : 8 + 4) + zero_grad + 4 + 4 + 8 + 12 + 8 + 12 + 4 + 8 + 8;
  // K-FAC's in-place update after its GEMMs (which its rounds charge): KL's v . grad reads both
  // and writes (12), times lr^2 (8), its sum (4); the copy into grad (8); the scale by nu (8).
  if (optimizer == OptimizerKind::Kfac || optimizer == OptimizerKind::DpKfac)
    return (momentum ? 12 + 8 : 8 + 4) + zero_grad + 12 + 8 + 4 + 8 + 8;
  throw std::invalid_argument("compute model: unknown optimizer " + std::to_string(static_cast<int>(optimizer)));
}

StepCost roofline(const TrainingWork& work, const Roof& roof) {
  StepCost cost;
  const double B = work.batch, e = roof.bytes_per_element;
  // One pass (one GEMM, convolution or elementwise sweep) runs at whichever limit binds;
  // returns its seconds, launches included.
  auto pass = [&](double flops, double bytes, int64_t kernels, bool convolution, double k = 0) {
    double rate = convolution && roof.convolution_flops > 0 ? roof.convolution_flops : roof.flops;
    if (k > 0) rate *= k / (k + roof.tile_depth);
    const double t_compute = flops > 0 ? std::max(flops, roof.wave_flops) / rate : 0;
    const double t_memory = bytes / roof.memory_bandwidth;
    cost.flops += flops;
    cost.bytes += bytes;
    cost.kernels += kernels;
    if (t_compute >= t_memory) {
      cost.compute_bound += t_compute;
    } else {
      cost.memory_bound += t_memory;
    }
    return std::max(t_compute, t_memory) + static_cast<double>(kernels) * roof.launch_latency;
  };
  bool grad_flows = false;  // something earlier trains, so this layer's input needs a gradient
  double trainable = 0;
  int64_t trainable_tensors = 0;
  for (const auto& l : work.layers) {
    const double in = B * l.inputs, out = B * l.outputs;
    // forward: read W and X, write Y
    const bool transposes = roof.convolution_transposes && l.convolution;
    auto transpose = [&] { return transposes ? pass(0, 2 * e * (in + out), 2, false) : 0.0; };
    auto forward = [&] {
      return pass(B * l.flops, e * (l.weights + in + out), l.kernels, l.convolution, l.gemm_k) + transpose();
    };
    cost.forward.push_back(forward());
    cost.backward.push_back(0);
    // Activation checkpointing: the block's forward again, just before its backward.
    if (l.recomputed) cost.backward.back() += forward();
    // input gradient, per operand: read W, dY (and saved activations), write dX
    if (grad_flows && l.grad_operands > 0) {
      const double g = l.grad_operands;
      cost.backward.back() +=
          pass(g * B * l.flops + B * l.recompute_flops, e * (l.weights + g * out + in + (l.grad_reads_input ? in : 0)),
               g * l.kernels, l.convolution, l.gemm_k_backward) +
          transpose();
    }
    // weight gradient: read X and dY, write dW; one kernel per parameter tensor (GEMM, bias sum)
    if (l.trains && l.weights > 0) {
      cost.backward.back() += pass(B * l.flops, e * (l.weights + in + out), l.tensors, l.convolution) + transpose();
      if (!l.shared_weights) {
        trainable += l.weights;
        trainable_tensors += l.tensors;
      }
    }
    grad_flows = grad_flows || l.trains;
  }
  if (trainable > 0) {
    // Sharded optimizer state (ZeRO): each GPU updates its slice of the parameters.
    const double bytes =
        trainable / work.optimizer_shards * optimizer_bytes_per_parameter(work.optimizer, work.momentum);
    const int64_t kernels = trainable_tensors + 1;  // a fused update per tensor, one zeroing of the gradient buffer
    cost.bytes += bytes;
    cost.memory_bound += bytes / roof.memory_bandwidth;
    cost.kernels += kernels;
    cost.update = bytes / roof.memory_bandwidth + static_cast<double>(kernels) * roof.launch_latency;
  }
  cost.launch = static_cast<double>(cost.kernels) * roof.launch_latency;
  return cost;
}

double StepShares::forward_before(int layer) const {
  double t = 0;
  for (int l = 0; l < layer && l < static_cast<int>(forward.size()); ++l) t += forward[l];
  return t;
}

double StepShares::backward_done(int layer) const {
  double t = 0;
  for (double f : forward) t += f;
  for (int l = static_cast<int>(backward.size()) - 1; l >= layer; --l) t += backward[l];
  return t;
}

double StepShares::backward_end() const { return backward_done(0); }

StepShares step_shares(const StepCost& cost) {
  StepShares s{cost.forward, cost.backward, cost.update};
  double total = s.update;
  for (size_t l = 0; l < s.forward.size(); ++l) total += s.forward[l] + s.backward[l];
  if (s.forward.empty()) s.forward.push_back(0), s.backward.push_back(0);
  if (!(total > 0)) {
    std::fill(s.forward.begin(), s.forward.end(), 0.0);
    std::fill(s.backward.begin(), s.backward.end(), 0.0);
    s.backward[0] = 1;
    s.update = 0;
    return s;
  }
  for (size_t l = 0; l < s.forward.size(); ++l) s.forward[l] /= total, s.backward[l] /= total;
  s.update /= total;
  return s;
}

Roof compute_roof(const ComputeSection& section) {
  const DevicePreset* preset = nullptr;
  for (const auto& p : device_presets()) {
    if (p.name == section.device) preset = &p;
  }
  // An unknown device is fine only when every figure it would give is set explicitly.
  auto from_preset = [&](const char* key) -> const DevicePreset& {
    if (preset) return *preset;
    std::string known;
    for (const auto& p : device_presets()) known += (known.empty() ? "" : ", ") + p.name;
    throw std::invalid_argument("compute.device: unknown device preset '" + section.device + "' (known: " + known +
                                "; or set compute." + key + ")");
  };
  Roof roof;
  double peak = section.peak_flops.flops;
  if (!(peak > 0)) {
    peak = preset_peak(from_preset("peak_flops"), section.dtype);
    if (!(peak > 0))
      throw std::invalid_argument("compute.dtype: " + section.device + " has no " + enum_name(section.dtype) +
                                  " arithmetic (it has " + preset_dtypes(*preset) + "; or set compute.peak_flops)");
  }
  auto share = [](const char* key, double x) {
    if (!(x > 0) || x > 1)
      throw std::invalid_argument(std::string("compute.") + key + " must be in (0, 1], got " + num(x));
    return x;
  };
  roof.memory_bandwidth = section.memory_bandwidth.bytes_per_s > 0 ? section.memory_bandwidth.bytes_per_s
                                                                   : from_preset("memory_bandwidth").memory_bandwidth;
  if (section.mfu) {
    // The flat model: every GEMM and convolution at one share of the peak, memory at the full bandwidth.
    roof.flops = peak * share("mfu", *section.mfu);
  } else {
    // Calibrated: a preset's own efficiencies; a device given by its figures alone needs all three.
    const DeviceEfficiency* e = preset ? &device_efficiency(preset->name) : nullptr;
    auto figure = [&](const char* key, const std::optional<double>& given, double calibrated) {
      if (given) return share(key, *given);
      if (!e)
        throw std::invalid_argument("compute.device: '" + section.device +
                                    "' has no calibrated efficiencies: set compute." + key + " (or compute.mfu)");
      return calibrated;
    };
    const bool tensor = section.dtype != Precision::Fp32;
    const double gemm = figure("gemm_efficiency", section.gemm_efficiency, e ? (tensor ? e->tensor : e->fp32) : 0);
    roof.flops = peak * gemm;
    roof.convolution_flops =
        peak * figure("convolution_efficiency", section.convolution_efficiency, e ? gemm * e->convolution : 0);
    roof.memory_bandwidth *= figure("memory_efficiency", section.memory_efficiency, e ? e->memory : 0);
    if (e) roof.wave_flops = e->sms * 2.0 * 128 * 128 * 128;
    roof.tile_depth = 128;
  }
  roof.convolution_transposes = section.memory_format == MemoryFormat::Nchw && section.dtype != Precision::Fp32 &&
                                !(preset && !device_efficiency(preset->name).nchw_transposes);
  roof.launch_latency =
      section.launch_latency ? section.launch_latency->s : from_preset("launch_latency").launch_latency;
  if (!(roof.memory_bandwidth > 0) || !std::isfinite(roof.memory_bandwidth))
    throw std::invalid_argument("compute.memory_bandwidth must be positive");
  if (!(roof.launch_latency >= 0) || !std::isfinite(roof.launch_latency))
    throw std::invalid_argument("compute.launch_latency must be finite and non-negative, got " +
                                num(roof.launch_latency));
  roof.bytes_per_element = dtype_bytes(section.dtype);
  return roof;
}

namespace {

// A step of pure arithmetic: one layer with FLOPs and nothing else.
TrainingWork flops_only(double flops_per_step) {
  if (!(flops_per_step >= 0) || !std::isfinite(flops_per_step))
    throw std::invalid_argument("compute model: flops per step must be finite and non-negative");
  LayerCost step;
  step.name = "step";
  step.flops = flops_per_step;
  step.kernels = 0;
  step.grad_operands = 0;
  TrainingWork work;
  work.layers.push_back(step);
  return work;
}

// A step whose passes take the profile's measured seconds: each row's time split among the
// layers it times in proportion to their passes on `split` (the roofline of compute.device); a
// "*" row that times no layer of its own is spread over all of them.
StepCost profiled(const StepCost& split, const LayerProfile& profile, const std::vector<int>& owner,
                  int optimizer_shards) {
  const size_t rows = profile.rows.size(), layers = owner.size();
  std::vector<double> forward(rows, 0), backward(rows, 0);
  std::vector<int> count(rows, 0);
  double all_forward = 0, all_backward = 0;
  for (size_t l = 0; l < layers; ++l) {
    all_forward += split.forward[l];
    all_backward += split.backward[l];
    if (owner[l] < 0) continue;
    forward[owner[l]] += split.forward[l];
    backward[owner[l]] += split.backward[l];
    ++count[owner[l]];
  }
  auto part = [](double mine, double sum, int n) { return sum > 0 ? mine / sum : 1.0 / n; };
  const ProfileRow* spread = nullptr;
  for (size_t r = 0; r < rows; ++r)
    if (profile.rows[r].layer == "*" && count[r] == 0) spread = &profile.rows[r];
  StepCost cost;
  cost.flops = split.flops;
  cost.bytes = split.bytes;
  cost.kernels = split.kernels;
  for (size_t l = 0; l < layers; ++l) {
    double f = 0, b = 0;
    if (owner[l] >= 0) {
      const ProfileRow& row = profile.rows[owner[l]];
      f = row.forward_s * part(split.forward[l], forward[owner[l]], count[owner[l]]);
      b = row.backward_s * part(split.backward[l], backward[owner[l]], count[owner[l]]);
    }
    if (spread) {
      f += spread->forward_s * part(split.forward[l], all_forward, static_cast<int>(layers));
      b += spread->backward_s * part(split.backward[l], all_backward, static_cast<int>(layers));
    }
    cost.forward.push_back(f);
    cost.backward.push_back(b);
    cost.compute_bound += f + b;
  }
  // A measured update is a whole replica's; sharded (ZeRO), a GPU updates its slice.
  cost.update = profile.optimizer_s ? *profile.optimizer_s / optimizer_shards : split.update;
  cost.compute_bound += cost.update;
  return cost;
}

}  // namespace

ComputeModel::ComputeModel(const ComputeSection& section, double flops_per_step, int nodes, uint64_t seed)
    : ComputeModel(section, flops_only(flops_per_step), nodes, seed) {}

ComputeModel::ComputeModel(const ComputeSection& section, const TrainingWork& work, int nodes, uint64_t seed)
    : section_(section), nodes_(nodes), seed_(seed) {
  if (nodes < 1) throw std::invalid_argument("compute model: nodes must be >= 1, got " + std::to_string(nodes));
  if (work.batch < 1) throw std::invalid_argument("compute model: batch must be >= 1");

  if (section.model == ComputeKind::Flops) {
    roof_ = compute_roof(section);
    cost_ = roofline(work, roof_);
    base_seconds_ = cost_.seconds();
    shares_ = step_shares(cost_);
  } else if (section.model == ComputeKind::Profile) {
    roof_ = compute_roof(section);
    const LayerProfile profile = read_layer_profile(section.file);
    cost_ = profiled(roofline(work, roof_), profile, profile_owners(profile, work.layers), work.optimizer_shards);
    base_seconds_ = cost_.seconds();
    shares_ = step_shares(cost_);
  } else {
    // FLOPs are still reported (Engine::flops_per_step); they do not depend on the roof.
    const StepCost counted = roofline(work, flop_count_roof());
    cost_.flops = counted.flops;
    shares_ = step_shares(counted);
  }
  if (section.model == ComputeKind::Fixed) {
    if (!(section.step_time.s >= 0) || !std::isfinite(section.step_time.s))
      throw std::invalid_argument("compute.step_time must be a finite non-negative duration, got " +
                                  num(section.step_time.s));
    base_seconds_ = section.step_time.s;
  } else if (section.model == ComputeKind::Measured) {
    if (!(section.measured_scale > 0) || !std::isfinite(section.measured_scale))
      throw std::invalid_argument("compute.measured_scale must be positive, got " + num(section.measured_scale));
    measured_ = true;
  }

  if (!(section.straggler_sigma >= 0) || !std::isfinite(section.straggler_sigma))
    throw std::invalid_argument("compute.straggler_sigma must be finite and non-negative, got " +
                                num(section.straggler_sigma));

  speeds_.resize(static_cast<size_t>(nodes));
  if (!section.speeds.empty()) {
    for (size_t i = 0; i < section.speeds.size(); ++i) {
      double v = section.speeds[i];
      if (!(v > 0) || !std::isfinite(v))
        throw std::invalid_argument("compute.speeds[" + std::to_string(i) + "] must be a positive finite speed, got " +
                                    num(v));
    }
    for (int n = 0; n < nodes; ++n) speeds_[n] = section.speeds[n % section.speeds.size()];
  } else {
    double lo = section.speed_min, hi = section.speed_max;
    if (!(lo > 0) || !std::isfinite(lo))
      throw std::invalid_argument("compute.speed_min must be a positive finite speed, got " + num(lo));
    if (!(hi > 0) || !std::isfinite(hi))
      throw std::invalid_argument("compute.speed_max must be a positive finite speed, got " + num(hi));
    if (lo > hi)
      throw std::invalid_argument("compute.speed_min (" + num(lo) + ") must not exceed compute.speed_max (" + num(hi) +
                                  ")");
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

double ComputeModel::extra_seconds(int node, int step, const ExtraWork& work, double host_seconds) const {
  if (measured_) return step_seconds(node, step, host_seconds);
  if (!section_.reads_device()) return 0;  // an algorithm's extra work on compute.device's roof
  const double pass = std::max(work.flops / roof_.flops, work.bytes / roof_.memory_bandwidth) +
                      static_cast<double>(work.kernels) * roof_.launch_latency;
  return pass / speed(node) * noise(node, step);
}

bool ComputeModel::deterministic() const { return !measured_; }

}  // namespace testbed
