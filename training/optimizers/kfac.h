// K-FAC as lzhangbv/kfac_pytorch runs it (the DP-KFAC paper's code): per Linear and Conv2d
// layer, Kronecker factors A (inputs) and G (output gradients) in running averages started from
// the identity, inverted (`inverse`: Cholesky of A + sqrt(damping) pi I and G + sqrt(damping)/pi I,
// the damping added into the running factors in place, as the reference does) or
// eigendecomposed (`eigen`), G^-1 grad A^-1 as the update direction, and KL clipping. A layer
// belongs to node m mod N (its owner), who inverts it; the distributed step's messages are
// the caller's (training/optimizers/kfac_traffic.h).
#pragma once

#include <cstdint>
#include <vector>

#include "training/models/layer_tap.h"
#include "training/optimizers/optimizer_kind.h"
#include "training/optimizers/preconditioner.h"

namespace testbed {

struct KfacOptions {
  KfacVariant variant = KfacVariant::Inverse;
  // DP-KFAC (kfac_preconditioner_inv_dp.py; with `eigen`, kfac_preconditioner_eigen_dp.py, the
  // reference's default): a layer's factors come from its owner's own batch only and never
  // travel; the owner sends the preconditioned gradient.
  bool distributed_preconditioning = false;
  double damping = 0.001;      // the reference's default (its CIFAR script passes 0.003)
  double kl_clip = 0.001;      // 0: no clipping (the reference's None)
  double factor_decay = 0.95;  // the running average's weight on the *new* factor
  int fac_update_freq = 1;     // steps between factor updates
  int kfac_update_freq = 1;    // steps between inversions
};

// One pass's factors from a tap holding the whole batch (the reference's ComputeA and ComputeG,
// batch-averaged loss): Linear A = a^T a / B with a column of ones for a bias (a sequence's
// positions averaged first), G = B g^T g; Conv2d A from the KFC patches divided by the output
// positions S, A = a^T a / B over all B S patches, G = (B S g)^T (B S g) / (B S) over positions.
torch::Tensor kfac_factor_a(const LayerTap& layer);
torch::Tensor kfac_factor_g(const LayerTap& layer);

// Each layer's owners (of A, of G) in a fleet of `nodes`: layer m's is node m mod N; D-KFAC's
// `eigen` deals A and G out one after the other when the fleet outnumbers the layers (the
// reference's distribute_layer_factors default); DP-KFAC keeps a layer on one node.
std::vector<std::pair<int, int>> kfac_owners(size_t layers, const KfacOptions& options, int nodes);

class Kfac : public Preconditioner {
 public:
  // `nodes` and `rank`: the fleet the layers are dealt over and this node's place in it (1, 0:
  // one process, every layer its own).
  Kfac(std::vector<LayerTap*> layers, KfacOptions options, int nodes = 1, int rank = 0);
  void observe() override {}
  // One process's whole step: factors, inversion, preconditioning, clipping.
  void precondition(double lr) override;
  std::map<std::string, torch::Tensor> state() const override;
  void load_state(const std::map<std::string, torch::Tensor>& state) override;

  // The step's phases, in order, for a caller that sends messages between them.
  bool factor_step() const { return steps_ % options_.fac_update_freq == 0; }
  bool inversion_step() const { return steps_ % options_.kfac_update_freq == 0; }
  void compute_factors();            // the running factors (under DP-KFAC: the owner's only)
  void invert();                     // the layers this node owns (eigen: each factor's owner)
  void compute_preconditioned();     // inverse: every layer (DP-KFAC: owned ones); eigen: every layer
  void update_gradients(double lr);  // the directions into the gradients, KL-clipped; the step ends

  size_t layers() const { return layers_.size(); }
  const LayerTap& layer(size_t i) const { return *layers_[i]; }
  // The owners of layer i's A and G (equal unless `eigen` deals factors out one by one, which
  // it does when the fleet outnumbers the layers, as the reference's distribute_layer_factors).
  int owner_a(size_t i) const { return owner_a_[i]; }
  int owner_g(size_t i) const { return owner_g_[i]; }
  int rank() const { return rank_; }
  // Layer i's running factors, direction (d_g x d_a, bias last), and eigen's parts.
  torch::Tensor& factor_a(size_t i) { return a_[i]; }
  torch::Tensor& factor_g(size_t i) { return g_[i]; }
  torch::Tensor& direction(size_t i) { return direction_[i]; }
  torch::Tensor& eigenvectors_a(size_t i) { return qa_[i]; }
  torch::Tensor& eigenvalues_a(size_t i) { return da_[i]; }
  torch::Tensor& eigenvectors_g(size_t i) { return qg_[i]; }
  torch::Tensor& eigenvalues_g(size_t i) { return dg_[i]; }

 private:
  std::vector<LayerTap*> layers_;
  KfacOptions options_;
  int rank_;
  std::vector<int> owner_a_, owner_g_;
  int64_t steps_ = 0;
  std::vector<torch::Tensor> a_, g_, inv_a_, inv_g_, qa_, da_, qg_, dg_, direction_;
};

}  // namespace testbed
