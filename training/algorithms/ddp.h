// Data-parallel SGD: every step, gradients are averaged across all nodes before the update.
#pragma once

#include "training/algorithm.h"

namespace testbed {

class Ddp : public Algorithm {
 public:
  Ddp(int nodes, int batch_size) : nodes_(nodes), batch_size_(batch_size) {}
  std::string name() const override { return "ddp"; }
  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override;
  void apply(int node, int issued_step, Replica& replica, CommOp& op) override;

 private:
  int nodes_;
  int batch_size_;
};

}  // namespace testbed
