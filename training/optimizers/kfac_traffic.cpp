// K-FAC's rounds of messages and compute inside DDP's optimizer step.
#include "training/optimizers/kfac_traffic.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "training/algorithms/common.h"

namespace testbed {
namespace {

// A broadcast from `root`: the op's nodes start with it (CommKind::Broadcast).
std::vector<int> rooted_at(int root, int nodes) {
  std::vector<int> order{root};
  for (int n = 0; n < nodes; ++n)
    if (n != root) order.push_back(n);
  return order;
}

CommOp message(CommKind kind, const std::string& what, size_t layer, torch::Tensor buffer,
               std::vector<int> nodes = {}) {
  CommOp op = make_op(kind, "kfac." + what + "." + std::to_string(layer), std::move(buffer));
  op.nodes = std::move(nodes);
  op.pipelined = kind == CommKind::Broadcast;  // the reference broadcasts GPU tensors through NCCL
  return op;
}

// The node's copy of a tensor as a message's buffer, or its shape alone.
torch::Tensor payload(Kfac* kfac, const std::function<torch::Tensor&(Kfac&)>& tensor, int64_t elements) {
  return kfac ? tensor(*kfac).reshape({-1}).clone() : shape_only(elements);
}

// FLOPs, as docs/algorithms.md states them: a factor's GEMM 2 rows d^2; a Cholesky inverse
// about d^3 (factorisation d^3 / 3, inverse from it 2 d^3 / 3); a symmetric eigendecomposition
// with vectors about 9 d^3 (Golub and Van Loan, the symmetric QR algorithm); preconditioning
// two GEMMs, 2 d_g d_a (d_g + d_a), and the eigen form four.
double factor_flops(const SecondOrderLayer& l, int batch) {
  const double rows = static_cast<double>(batch) * static_cast<double>(l.positions);
  return 2 * rows * (static_cast<double>(l.d_a) * l.d_a + static_cast<double>(l.d_g) * l.d_g);
}
double cube(int64_t d) { return static_cast<double>(d) * d * d; }
double precondition_flops(const SecondOrderLayer& l) {
  return 2.0 * static_cast<double>(l.d_g) * l.d_a * static_cast<double>(l.d_g + l.d_a);
}
// A layer's inversion (both factors: Cholesky, or with `eigen` two eigendecompositions) and its
// preconditioning, each with its kernels: what a node charges for a layer it handles whole.
ExtraWork inversion_work(const SecondOrderLayer& l, bool eigen) {
  return {.flops = (eigen ? 9 : 1) * (cube(l.d_a) + cube(l.d_g)), .kernels = eigen ? 2 : 4};
}
ExtraWork preconditioning_work(const SecondOrderLayer& l, bool eigen) {
  return {.flops = (eigen ? 2 : 1) * precondition_flops(l), .kernels = eigen ? 4 : 2};
}

}  // namespace

std::vector<KfacRound> kfac_rounds(const KfacOptions& o, int nodes, int step) {
  if (nodes <= 1) return {};
  const bool factors = step % o.fac_update_freq == 0, inversion = step % o.kfac_update_freq == 0;
  std::vector<KfacRound> rounds;
  if (o.distributed_preconditioning) return {KfacRound::Directions};
  if (factors) rounds.push_back(KfacRound::Factors);
  if (o.variant == KfacVariant::Inverse)
    rounds.push_back(KfacRound::Directions);
  else if (inversion)
    rounds.push_back(KfacRound::Eigen);
  return rounds;
}

Round kfac_round(KfacRound kind, bool last, const std::vector<SecondOrderLayer>& layers, const KfacOptions& o,
                 int nodes, int rank, int batch, int step, Kfac* kfac) {
  const bool factors = step % o.fac_update_freq == 0, inversion = step % o.kfac_update_freq == 0;
  const auto owners = kfac_owners(layers.size(), o, nodes);
  const bool eigen = o.variant == KfacVariant::Eigen;
  Round round;
  auto charge = [&](double flops, int64_t kernels) {
    round.work.flops += flops;
    round.work.kernels += kernels;
  };
  switch (kind) {
    case KfacRound::Factors:
      if (kfac) kfac->compute_factors();
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        charge(factor_flops(l, batch), 2);
        round.comm.push_back(
            message(CommKind::AllReduce, "A", i,
                    payload(
                        kfac, [i](Kfac& k) -> torch::Tensor& { return k.factor_a(i); }, l.d_a* l.d_a)));
        round.comm.push_back(
            message(CommKind::AllReduce, "G", i,
                    payload(
                        kfac, [i](Kfac& k) -> torch::Tensor& { return k.factor_g(i); }, l.d_g* l.d_g)));
      }
      break;
    case KfacRound::Directions:
      if (kfac) {
        if (o.distributed_preconditioning && factors) kfac->compute_factors();
        if (inversion) kfac->invert();
        kfac->compute_preconditioned();
      }
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        const bool owns = owners[i].first == rank;
        if (owns && o.distributed_preconditioning && factors) charge(factor_flops(l, batch), 2);
        // An inversion by Cholesky, or (eigen_dp) two eigendecompositions, as the Eigen round's.
        if (owns && inversion) round.work += inversion_work(l, eigen);
        // D-KFAC's reference preconditions every layer on every node (the zero inverses of the
        // layers it does not own included); DP-KFAC only its own.
        if (owns || !o.distributed_preconditioning) round.work += preconditioning_work(l, eigen);
        round.comm.push_back(message(CommKind::Broadcast, "direction", i,
                                     payload(
                                         kfac, [i](Kfac& k) -> torch::Tensor& { return k.direction(i); }, l.d_g* l.d_a),
                                     rooted_at(owners[i].first, nodes)));
      }
      break;
    case KfacRound::Eigen:
      if (kfac) kfac->invert();
      for (size_t i = 0; i < layers.size(); ++i) {
        const auto& l = layers[i];
        const auto [owner_a, owner_g] = owners[i];
        if (owner_a == rank) charge(9 * cube(l.d_a), 1);
        if (owner_g == rank) charge(9 * cube(l.d_g), 1);
        auto send = [&](const char* what, int owner, int64_t elements, torch::Tensor& (Kfac::*part)(size_t)) {
          round.comm.push_back(
              message(CommKind::Broadcast, what, i,
                      payload(
                          kfac, [i, part](Kfac& k) -> torch::Tensor& { return (k.*part)(i); }, elements),
                      rooted_at(owner, nodes)));
        };
        send("QA", owner_a, l.d_a * l.d_a, &Kfac::eigenvectors_a);
        send("dA", owner_a, l.d_a, &Kfac::eigenvalues_a);
        send("QG", owner_g, l.d_g * l.d_g, &Kfac::eigenvectors_g);
        send("dG", owner_g, l.d_g, &Kfac::eigenvalues_g);
      }
      break;
  }
  // D-KFAC's eigen preconditions every layer once its parts are in: charged with the step's last
  // round (DP-KFAC's owners precondition before they broadcast, above).
  if (eigen && !o.distributed_preconditioning && last)
    for (const auto& l : layers) round.work += preconditioning_work(l, true);
  return round;
}

ExtraWork kfac_local_work(const std::vector<SecondOrderLayer>& layers, const KfacOptions& o, int batch, int step) {
  const bool factors = step % o.fac_update_freq == 0, inversion = step % o.kfac_update_freq == 0;
  const bool eigen = o.variant == KfacVariant::Eigen;
  ExtraWork work;
  for (const auto& l : layers) {
    if (factors) {
      work.flops += factor_flops(l, batch);
      work.kernels += 2;
    }
    if (inversion) work += inversion_work(l, eigen);
    work += preconditioning_work(l, eigen);
  }
  return work;
}

bool apply_kfac_op(Kfac& kfac, CommOp& op, int nodes) {
  if (op.tag.rfind("kfac.", 0) != 0) return false;
  const size_t dot = op.tag.rfind('.');
  const std::string what = op.tag.substr(5, dot - 5);
  const size_t i = std::stoul(op.tag.substr(dot + 1));
  auto into = [&](torch::Tensor& t, double divide) { t.view({-1}).copy_(op.buffer / divide); };
  if (what == "A")
    into(kfac.factor_a(i), nodes);
  else if (what == "G")
    into(kfac.factor_g(i), nodes);
  else if (what == "direction")
    into(kfac.direction(i), 1);
  else if (what == "QA")
    into(kfac.eigenvectors_a(i), 1);
  else if (what == "dA")
    into(kfac.eigenvalues_a(i), 1);
  else if (what == "QG")
    into(kfac.eigenvectors_g(i), 1);
  else if (what == "dG")
    into(kfac.eigenvalues_g(i), 1);
  else
    throw std::logic_error("kfac: unknown message '" + op.tag + "'");
  return true;
}

}  // namespace testbed
