// K-FAC's messages inside DDP's optimizer step, after the gradient all-reduce and before the
// update, as lzhangbv/kfac_pytorch sends them, each phase awaiting all its messages:
// D-KFAC (`kfac`, inverse): every layer's running A and G all-reduced (averaged, fp32 d x d) on
// factor steps, then each layer's preconditioned gradient (d_g x d_a) broadcast by its owner;
// `kfac` eigen: factors as above, then on inversion steps each factor's eigenvectors and
// eigenvalues broadcast by its owner, every node preconditioning every layer; DP-KFAC: no
// factor travels, the owner broadcasts the preconditioned gradient.
#pragma once

#include <vector>

#include "training/algorithm.h"
#include "training/models/model_shapes.h"
#include "training/optimizers/kfac.h"

namespace testbed {

enum class KfacRound { Factors, Directions, Eigen };

// The rounds of `step` in a fleet of `nodes` (none for one node: it preconditions alone).
std::vector<KfacRound> kfac_rounds(const KfacOptions& options, int nodes, int step);

// One round for node `rank`: first its computation on `kfac` (the factors, the inversions,
// the directions, as the round needs them), then its ops and the compute charged for it (the
// step's preconditioning in its last round). `kfac` null: shapes only (a projection).
// `batch`: samples a node's step trains on.
Round kfac_round(KfacRound kind, bool last, const std::vector<SecondOrderLayer>& layers, const KfacOptions& options,
                 int nodes, int rank, int batch, int step, Kfac* kfac);

// One node's K-FAC step on its own (under the algorithms that train locally, where it sends
// nothing): every layer's factors on factor steps, their inversions (or eigendecompositions)
// on inversion steps, and every layer's direction, with the FLOPs kfac_round charges.
ExtraWork kfac_local_work(const std::vector<SecondOrderLayer>& layers, const KfacOptions& options, int batch, int step);

// Whether `op` is a K-FAC message; if it is, what arrived replaces the node's copy (all-reduced
// factors averaged over `nodes`).
bool apply_kfac_op(Kfac& kfac, CommOp& op, int nodes);

}  // namespace testbed
