// A step's or round's plan as its owner's process sends it to the others: the loss, the
// modelled seconds and every op's shape, never its values (they travel with the messages).
#pragma once

#include <vector>

#include <torch/types.h>

#include "training/algorithm.h"

namespace testbed {

struct PlanOutline {
  double loss = 0;
  double compute_time = 0;  // a step's seconds, or a round's extra seconds
  double extra_time = 0;    // of a step's seconds, the algorithm's extra work
  std::vector<CommOp> comm;
};

// float64, one dimension. Ops keep kind, tag, size, wire format, delay, nodes, after_gradient,
// before_forward, after_forward and pipelined.
torch::Tensor encode_plan(const PlanOutline& plan);
// The plan with ops whose buffers have the size and no storage of their own (a remote
// replica's: this process never reads its values).
PlanOutline decode_plan(const torch::Tensor& wire);

}  // namespace testbed
