// The optimizers a replica can run, and K-FAC's two ways to precondition, as plain enums: the
// scenario names them (sim/config/choices.h) without reaching LibTorch.
#pragma once

namespace testbed {

// AdamW, Adam and SGD are torch::optim's; Eva, K-FAC and DP-KFAC are SGD on preconditioned
// gradients (training/optimizers/eva.h, kfac.h).
enum class OptimizerKind { AdamW, Adam, Sgd, Eva, Kfac, DpKfac };

inline bool second_order(OptimizerKind kind) {
  return kind == OptimizerKind::Eva || kind == OptimizerKind::Kfac || kind == OptimizerKind::DpKfac;
}

// K-FAC's factors inverted (Cholesky) or eigendecomposed (training/optimizers/kfac.h).
enum class KfacVariant { Inverse, Eigen };

}  // namespace testbed
