// The step a node trains: the algorithm's local step (or, in a projection, its step from shapes),
// and the compute model's time for it. What the engine then does with its ops is in engine.cpp.
#include "sim/core/engine/engine.h"

#include "sim/core/compute/compute_model.h"
#include "training/optimizers/kfac_traffic.h"

namespace testbed {

PlanOutline Engine::train_step(int node) {
  const int step = state_[node].step;
  StepPlan step_plan;
  double host_seconds = 0;
  if (projection_) {
    step_plan = algorithm_->projected_step(node, step);  // shapes only: the compute model times it
  } else {
    HostTimer compute_timer(host_seconds);
    step_plan = algorithm_->local_step(node, step, *replicas_[node], data_);
  }
  times_.local_compute += host_seconds;
  if (!local_second_order_.empty())
    step_plan.work += kfac_local_work(local_second_order_, local_kfac_, scenario_.workload.batch_size, step);
  PlanOutline plan;
  plan.loss = step_plan.loss;
  plan.extra_time = compute_->extra_seconds(node, step, step_plan.work);
  plan.compute_time = compute_->step_seconds(node, step, host_seconds) + plan.extra_time;
  plan.comm = std::move(step_plan.comm);
  return plan;
}

}  // namespace testbed
