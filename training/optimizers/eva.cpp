// Eva's vectors, running averages and Sherman-Morrison preconditioning.
#include "training/optimizers/eva.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

// The mean over every dimension but the last (a Linear layer's rows: samples, and positions of
// a sequence).
torch::Tensor mean_rows(const torch::Tensor& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) dims.push_back(d);
  return dims.empty() ? x.clone() : x.mean(torch::IntArrayRef(dims));
}

}  // namespace

torch::Tensor eva_vector_a(const LayerTap& l) {
  torch::Tensor a;
  if (l.conv()) {
    // The batch mean first, then its patches (im2col: channel-major, then kh, kw), averaged.
    namespace F = torch::nn::functional;
    const auto mean = l.input.mean(0, /*keepdim=*/true);
    a = F::unfold(mean, F::UnfoldFuncOptions(l.kernel).padding(l.padding).stride(l.stride))
            .mean(std::vector<int64_t>{0, 2});
  } else {
    a = mean_rows(l.input);
  }
  if (l.bias.defined()) a = torch::cat({a, torch::ones({1}, a.options())});
  return a;
}

torch::Tensor eva_vector_g(const LayerTap& l) {
  return l.conv() ? l.output_grad.mean(std::vector<int64_t>{0, 2, 3}) : mean_rows(l.output_grad);
}

Eva::Eva(std::vector<LayerTap*> layers, EvaOptions options) : layers_(std::move(layers)), options_(options) {
  if (layers_.empty()) throw std::invalid_argument("eva needs a model with Linear or Conv2d layers");
  for (auto* l : layers_) l->keep = options_.kfac_batch_size;
  a_.resize(layers_.size());
  g_.resize(layers_.size());
}

void Eva::observe() {
  torch::NoGradGuard no_grad;
  const double d = options_.factor_decay;
  auto fold = [d](torch::Tensor& running, const torch::Tensor& fresh) {
    if (!running.defined()) {
      running = fresh.clone();  // the first pass's vector itself, not an average with anything
    } else {
      running.mul_(1 - d).add_(fresh, d);
    }
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const LayerTap& l = *layers_[i];
    if (!l.input.defined() || !l.output_grad.defined())
      throw std::logic_error("eva: layer '" + l.name + "' saw no training pass");
    fold(a_[i], eva_vector_a(l));
    fold(g_[i], eva_vector_g(l));
  }
}

void Eva::precondition(double lr) {
  torch::NoGradGuard no_grad;
  const double damping = options_.damping;
  double vg_sum = 0, v_sum = 0, g_sum = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    LayerTap& l = *layers_[i];
    const auto ma = a_[i].view({-1, 1}), mg = g_[i].view({-1, 1});
    const auto grad = l.gradient_matrix();
    const double a = ma.t().mm(ma).item<double>();
    const double g = mg.t().mm(mg).item<double>();
    const double ag = mg.t().mm(grad).mm(ma).item<double>();
    // (u u^T + damping I)^-1 vec(grad) with u = g (x) a, by Sherman-Morrison.
    auto v = mg.mm(ma.t()).mul_(-ag / (a * g + damping));
    v.add_(grad);
    v.div_(damping);
    if (options_.kl_clip > 0) {
      vg_sum += (v * grad).sum().item<double>() * lr * lr;
    } else {
      v_sum += (v * v).sum().item<double>();
      g_sum += (grad * grad).sum().item<double>();
    }
    l.set_gradient_matrix(v);
  }
  const double nu = options_.kl_clip > 0 ? (vg_sum > 0 ? std::min(1.0, std::sqrt(options_.kl_clip / vg_sum)) : 1.0)
                                         : std::sqrt(g_sum / v_sum);
  for (auto* l : layers_) l->scale_gradient(nu);
}

std::map<std::string, torch::Tensor> Eva::state() const {
  std::map<std::string, torch::Tensor> s;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (a_[i].defined()) s["eva_a_" + std::to_string(i)] = a_[i];
    if (g_[i].defined()) s["eva_g_" + std::to_string(i)] = g_[i];
  }
  return s;
}

void Eva::load_state(const std::map<std::string, torch::Tensor>& s) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto a = s.find("eva_a_" + std::to_string(i)), g = s.find("eva_g_" + std::to_string(i));
    a_[i] = a == s.end() ? torch::Tensor() : a->second.clone();
    g_[i] = g == s.end() ? torch::Tensor() : g->second.clone();
  }
}

}  // namespace testbed
