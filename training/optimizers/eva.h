// Eva (Zhang, Shi and Li, "Eva: Practical Second-order Optimization with Kronecker-vectorized
// Approximation", ICLR 2023; reference lzhangbv/eva, kfac/eva.py): per layer two running
// vectors, the mean input a and the mean output gradient g, and the Sherman-Morrison inverse of
// (g a^T as one vector u = g (x) a) u u^T + damping I applied to the gradient, then KL clipping.
#pragma once

#include <cstdint>
#include <vector>

#include "training/models/layer_tap.h"
#include "training/optimizers/preconditioner.h"

namespace testbed {

struct EvaOptions {
  double damping = 0.03;  // the reference class's default (its CIFAR scripts pass 0.03 too)
  // > 0: KL clipping, nu = min(1, sqrt(kl_clip / sum(v . grad) lr^2)); 0: re-scaling to the
  // gradient's norm, nu = sqrt(|grad|^2 / |v|^2) (the reference's two modes).
  double kl_clip = 0.001;
  double factor_decay = 0.95;  // the running average's weight on the *new* vector (the reference's)
  int kfac_batch_size = 16;    // the leading samples of each batch the vectors are taken from
};

// A layer's vectors from one pass (its tap's kept samples): a is the mean input row (a Conv2d's
// mean patch of the batch-mean input, channel-major then kh, kw), with a trailing 1 for a bias;
// g the mean output-gradient row (a Conv2d's mean over batch and positions).
torch::Tensor eva_vector_a(const LayerTap& layer);
torch::Tensor eva_vector_g(const LayerTap& layer);

class Eva : public Preconditioner {
 public:
  // Sets each layer's tap to keep the leading kfac_batch_size samples.
  Eva(std::vector<LayerTap*> layers, EvaOptions options);
  void observe() override;
  void precondition(double lr) override;
  std::map<std::string, torch::Tensor> state() const override;
  void load_state(const std::map<std::string, torch::Tensor>& state) override;

  // Layer i's running vectors (forward order; undefined before the first pass). Written in
  // place when the nodes' means arrive.
  torch::Tensor& vector_a(size_t i) { return a_.at(i); }
  torch::Tensor& vector_g(size_t i) { return g_.at(i); }
  const torch::Tensor& vector_a(size_t i) const { return a_.at(i); }
  const torch::Tensor& vector_g(size_t i) const { return g_.at(i); }

 private:
  std::vector<LayerTap*> layers_;
  EvaOptions options_;
  std::vector<torch::Tensor> a_, g_;
};

}  // namespace testbed
