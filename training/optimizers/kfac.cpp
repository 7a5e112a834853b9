// K-FAC's factors, inversion or eigendecomposition, preconditioning and KL clipping.
#include "training/optimizers/kfac.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

torch::Tensor with_ones_column(const torch::Tensor& a) {
  return torch::cat({a, torch::ones({a.size(0), 1}, a.options())}, 1);
}

torch::Tensor inverse_spd(const torch::Tensor& x) { return torch::cholesky_inverse(torch::linalg_cholesky(x)); }

constexpr double kEigenFloor = 1e-10;  // eigenvalues at or below it count as zero (the reference's eps)

}  // namespace

torch::Tensor kfac_factor_a(const LayerTap& l) {
  const int64_t batch = l.input.size(0);
  torch::Tensor a;
  if (l.conv()) {
    namespace F = torch::nn::functional;
    const auto patches = F::unfold(l.input, F::UnfoldFuncOptions(l.kernel).padding(l.padding).stride(l.stride));
    const int64_t positions = patches.size(2);
    a = patches.transpose(1, 2).reshape({-1, patches.size(1)});
    if (l.bias.defined()) a = with_ones_column(a);
    a = a / static_cast<double>(positions);
  } else {
    a = l.input.dim() > 2 ? l.input.mean(1) : l.input;
    if (l.bias.defined()) a = with_ones_column(a);
  }
  return a.t().mm(a / static_cast<double>(batch));
}

torch::Tensor kfac_factor_g(const LayerTap& l) {
  const int64_t batch = l.output_grad.size(0);
  if (l.conv()) {
    const int64_t positions = l.output_grad.size(2) * l.output_grad.size(3);
    auto g = l.output_grad.permute({0, 2, 3, 1}).reshape({-1, l.output_grad.size(1)});
    g = g * static_cast<double>(batch) * static_cast<double>(positions);
    return g.t().mm(g / static_cast<double>(g.size(0)));
  }
  const auto g = l.output_grad.dim() > 2 ? l.output_grad.mean(1) : l.output_grad;
  return g.t().mm(g * static_cast<double>(batch));
}

std::vector<std::pair<int, int>> kfac_owners(size_t layers, const KfacOptions& options, int nodes) {
  const bool per_factor =
      options.variant == KfacVariant::Eigen && !options.distributed_preconditioning && nodes > static_cast<int>(layers);
  std::vector<std::pair<int, int>> owners;
  int next = 0;
  for (size_t i = 0; i < layers; ++i) {
    const int a = next % nodes;
    if (per_factor) ++next;
    owners.emplace_back(a, next % nodes);
    ++next;
  }
  return owners;
}

Kfac::Kfac(std::vector<LayerTap*> layers, KfacOptions options, int nodes, int rank)
    : layers_(std::move(layers)), options_(options), rank_(rank) {
  if (layers_.empty()) throw std::invalid_argument("kfac needs a model with Linear or Conv2d layers");
  for (auto* l : layers_) l->keep = std::numeric_limits<int64_t>::max();  // the whole batch
  for (const auto& [a, g] : kfac_owners(layers_.size(), options_, nodes)) {
    owner_a_.push_back(a);
    owner_g_.push_back(g);
  }
  const size_t n = layers_.size();
  for (auto* v : {&a_, &g_, &inv_a_, &inv_g_, &qa_, &da_, &qg_, &dg_, &direction_}) v->resize(n);
}

void Kfac::compute_factors() {
  torch::NoGradGuard no_grad;
  const double d = options_.factor_decay;
  auto fold = [&](torch::Tensor& running, const torch::Tensor& fresh) {
    if (steps_ == 0) running = torch::eye(fresh.size(0), fresh.options());  // the identity first
    running.mul_(1 - d).add_(fresh, d);
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (options_.distributed_preconditioning && rank_ != owner_a_[i]) continue;
    const LayerTap& l = *layers_[i];
    if (!l.input.defined() || !l.output_grad.defined())
      throw std::logic_error("kfac: layer '" + l.name + "' saw no training pass");
    fold(a_[i], kfac_factor_a(l));
    fold(g_[i], kfac_factor_g(l));
  }
}

void Kfac::invert() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto& a = a_[i];
    auto& g = g_[i];
    if (options_.variant == KfacVariant::Inverse) {
      if (steps_ == 0 && a.defined()) {  // what a node that owns none of it holds: zeros
        inv_a_[i] = torch::zeros_like(a);
        inv_g_[i] = torch::zeros_like(g);
      }
      if (rank_ != owner_a_[i]) continue;
      const double pi = std::sqrt((a.trace().item<double>() / a.size(0)) / (g.trace().item<double>() / g.size(0)));
      // Into the running factors themselves, as the reference's _add_value_to_diagonal does.
      a.diagonal().add_(std::sqrt(options_.damping) * pi);
      g.diagonal().add_(std::sqrt(options_.damping) / pi);
      inv_a_[i] = inverse_spd(a);
      inv_g_[i] = inverse_spd(g);
    } else {
      // DP-KFAC's owner alone holds the layer's factors (eigen_dp.py): the others hold nothing.
      if (options_.distributed_preconditioning && rank_ != owner_a_[i]) continue;
      if (steps_ == 0) {
        qa_[i] = torch::zeros_like(a);
        da_[i] = torch::zeros({a.size(0)}, a.options());
        qg_[i] = torch::zeros_like(g);
        dg_[i] = torch::zeros({g.size(0)}, g.options());
      }
      auto eigen = [](const torch::Tensor& x, torch::Tensor& values, torch::Tensor& vectors) {
        auto [d, q] = torch::linalg_eigh(x);
        values = d * (d > kEigenFloor).to(d.scalar_type());
        vectors = q.contiguous();
      };
      if (rank_ == owner_a_[i]) eigen(a, da_[i], qa_[i]);
      if (rank_ == owner_g_[i]) eigen(g, dg_[i], qg_[i]);
    }
  }
}

void Kfac::compute_preconditioned() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto grad = layers_[i]->gradient_matrix();
    if (options_.distributed_preconditioning && rank_ != owner_a_[i]) {
      if (!direction_[i].defined()) direction_[i] = torch::zeros_like(grad);  // the broadcast fills it
    } else if (options_.variant == KfacVariant::Eigen) {
      const auto v1 = qg_[i].t().mm(grad).mm(qa_[i]);
      const auto v2 = v1 / (dg_[i].unsqueeze(1) * da_[i].unsqueeze(0) + options_.damping);
      direction_[i] = qg_[i].mm(v2).mm(qa_[i].t());
    } else {
      direction_[i] = inv_g_[i].mm(grad).mm(inv_a_[i]);
    }
  }
}

void Kfac::update_gradients(double lr) {
  torch::NoGradGuard no_grad;
  double vg_sum = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    LayerTap& l = *layers_[i];
    const auto [vw, vb] = l.split_gradient_matrix(direction_[i]);
    if (options_.kl_clip > 0) {  // weight then bias, as the reference sums them
      vg_sum += (vw * l.weight.grad() * lr * lr).sum().item<double>();
      if (l.bias.defined()) vg_sum += (vb * l.bias.grad() * lr * lr).sum().item<double>();
    }
    l.set_gradient_matrix(direction_[i]);
  }
  if (options_.kl_clip > 0) {
    const double nu = std::min(1.0, std::sqrt(options_.kl_clip / std::abs(vg_sum)));
    for (auto* l : layers_) l->scale_gradient(nu);
  }
  ++steps_;
}

void Kfac::precondition(double lr) {
  if (factor_step()) compute_factors();
  if (inversion_step()) invert();
  compute_preconditioned();
  update_gradients(lr);
}

std::map<std::string, torch::Tensor> Kfac::state() const {
  std::map<std::string, torch::Tensor> s;
  s["kfac_steps"] = torch::tensor(steps_, torch::kLong);
  const std::vector<std::pair<const char*, const std::vector<torch::Tensor>*>> parts = {
      {"A", &a_},   {"G", &g_},   {"invA", &inv_a_}, {"invG", &inv_g_},         {"QA", &qa_},
      {"dA", &da_}, {"QG", &qg_}, {"dG", &dg_},      {"direction", &direction_}};
  for (const auto& [name, v] : parts)
    for (size_t i = 0; i < v->size(); ++i)
      if ((*v)[i].defined()) s[std::string("kfac_") + name + "_" + std::to_string(i)] = (*v)[i];
  return s;
}

void Kfac::load_state(const std::map<std::string, torch::Tensor>& s) {
  auto steps = s.find("kfac_steps");
  steps_ = steps == s.end() ? 0 : steps->second.item<int64_t>();
  const std::vector<std::pair<const char*, std::vector<torch::Tensor>*>> parts = {
      {"A", &a_},   {"G", &g_},   {"invA", &inv_a_}, {"invG", &inv_g_},         {"QA", &qa_},
      {"dA", &da_}, {"QG", &qg_}, {"dG", &dg_},      {"direction", &direction_}};
  for (const auto& [name, v] : parts)
    for (size_t i = 0; i < v->size(); ++i) {
      auto it = s.find(std::string("kfac_") + name + "_" + std::to_string(i));
      (*v)[i] = it == s.end() ? torch::Tensor() : it->second.clone();
    }
}

}  // namespace testbed
