// Eva's messages beside a gradient all-reduce every step (DDP): as the reference sends them,
// each layer's running vectors all-reduced and averaged, a as the layer's forward starts (its
// forward pre-hook) and g as its backward ends (its backward hook), fp32, one collective each
// (its torch.distributed backend's allreduce_async_; Horovod would fuse them), all awaited
// before the preconditioner runs.
#pragma once

#include <vector>

#include "training/algorithm.h"
#include "training/models/model_shapes.h"
#include "training/optimizers/eva.h"

namespace testbed {

// The step's ops, layer by layer: a then g. `eva` null: shapes only (a projection).
std::vector<CommOp> eva_statistics_ops(const std::vector<SecondOrderLayer>& layers, const Eva* eva);

// Whether `op` is one of them; if it is, the nodes' mean replaces the running vector it carried.
bool apply_eva_statistics(Eva& eva, CommOp& op, int nodes);

}  // namespace testbed
