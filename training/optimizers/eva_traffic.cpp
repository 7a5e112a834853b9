// Eva's statistics all-reduces as ops of the step.
#include "training/optimizers/eva_traffic.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "training/algorithms/common.h"

namespace testbed {
namespace {
const std::string kA = "eva.a.", kG = "eva.g.";
}  // namespace

std::vector<CommOp> eva_statistics_ops(const std::vector<SecondOrderLayer>& layers, const Eva* eva) {
  std::vector<CommOp> ops;
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    CommOp a = make_op(CommKind::AllReduce, kA + std::to_string(i), eva ? eva->vector_a(i).clone() : shape_only(l.d_a));
    a.after_forward = l.weight_tensor;
    CommOp g = make_op(CommKind::AllReduce, kG + std::to_string(i), eva ? eva->vector_g(i).clone() : shape_only(l.d_g));
    g.after_gradient = l.weight_tensor;
    ops.push_back(std::move(a));
    ops.push_back(std::move(g));
  }
  return ops;
}

bool apply_eva_statistics(Eva& eva, CommOp& op, int nodes) {
  const bool is_a = op.tag.rfind(kA, 0) == 0, is_g = op.tag.rfind(kG, 0) == 0;
  if (!is_a && !is_g) return false;
  const size_t layer = std::stoul(op.tag.substr(kA.size()));
  (is_a ? eva.vector_a(layer) : eva.vector_g(layer)).copy_(op.buffer.div_(nodes));
  return true;
}

}  // namespace testbed
