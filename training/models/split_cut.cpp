// The SVD cut: W1's truncated factors and the record of what crossed.
#include "training/models/split_cut.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

SvdDenseImpl::SvdDenseImpl(const torch::Tensor& weight, const torch::Tensor& bias, int rank)
    : in_(weight.size(1)), out_(weight.size(0)), rank_(rank) {
  if (rank < 1 || rank > std::min(in_, out_))
    throw std::invalid_argument("split rank " + std::to_string(rank) + " is outside 1.." +
                                std::to_string(std::min(in_, out_)) + " for a " + std::to_string(out_) + " x " +
                                std::to_string(in_) + " matrix");
  torch::NoGradGuard no_grad;
  // The reduced SVD: U (out x k), S (k), Vh (k x in), k = min(out, in); torch.linalg.svd's
  // full form, which the reference calls, has the same leading r columns.
  auto [U, S, Vh] = torch::linalg_svd(weight.detach(), /*full_matrices=*/false);
  v = register_module("v", torch::nn::Linear(torch::nn::LinearOptions(in_, rank).bias(false)));
  s = register_module("s", torch::nn::Linear(torch::nn::LinearOptions(rank, rank).bias(false)));
  u = register_module("u", torch::nn::Linear(torch::nn::LinearOptions(rank, out_).bias(true)));
  v->weight.copy_(Vh.slice(0, 0, rank));
  s->weight.copy_(torch::diag(S.slice(0, 0, rank)));
  u->weight.copy_(U.slice(1, 0, rank));
  u->bias.copy_(bias.detach());
}

torch::Tensor SvdDenseImpl::front(const torch::Tensor& x) { return s(v(x)); }
torch::Tensor SvdDenseImpl::back(const torch::Tensor& z) { return u(z); }

void SvdDenseImpl::append_front_costs(std::vector<LayerCost>& costs, const std::string& name, double rows) const {
  costs.push_back(linear_cost(name + ".v", in_, rank_, rows, false, v->weight.requires_grad()));
  costs.push_back(linear_cost(name + ".s", rank_, rank_, rows, false, s->weight.requires_grad()));
}

void SvdDenseImpl::append_back_costs(std::vector<LayerCost>& costs, const std::string& name, double rows) const {
  costs.push_back(linear_cost(name + ".u", rank_, out_, rows, true, u->weight.requires_grad()));
}

torch::Tensor CutValues::cross(const torch::Tensor& x) {
  if (!x.requires_grad()) return x;  // an evaluation pass sends nothing the run records
  activations = x.detach();
  gradient = torch::Tensor();
  x.register_hook([this](const torch::Tensor& g) { gradient = g.detach(); });
  return x;
}

}  // namespace testbed
