// A step's rows: /train's row once every node has finished the step, and the evaluation of the
// averaged replicas at the steps workload.eval_every names.
#include "sim/core/engine/engine.h"

#include <cmath>

#include <torch/torch.h>

#include "sim/core/evaluation/evaluation.h"
#include "training/metrics.h"

namespace testbed {

bool Engine::eval_step(int steps_done) const {
  return steps_done % scenario_.workload.eval_every == 0 || steps_done == scenario_.workload.steps;
}

Engine::PendingRow& Engine::pending_row(int step) {
  auto& pending = rows_[step];
  if (pending.row.loss.empty()) {
    pending.row.step = step;
    pending.row.loss.assign(nodes_, std::nan(""));
    pending.row.time.assign(nodes_, std::nan(""));
    pending.row.compute_time.assign(nodes_, 0.0);
    pending.row.bytes.assign(nodes_, 0);
  }
  return pending;
}

void Engine::record_step(int node) {
  const auto& s = state_[node];
  auto& pending = pending_row(s.step);
  pending.row.loss[node] = s.loss;
  pending.row.time[node] = clock_->now();
  last_step_end_ = std::max(last_step_end_, clock_->now());
  pending.row.compute_time[node] = s.compute_time;
  ++pending.filled;
  // Rows leave in step order, once every node has finished that step.
  while (!rows_.empty() && rows_.begin()->second.filled == nodes_) {
    const auto& row = rows_.begin()->second.row;
    const int steps_done = row.step + 1;
    {
      HostTimer timer(times_.recording);
      recorder_->train(row);
    }
    if (hooks_.progress && !replaying_) {
      double mean_loss = 0;
      for (double l : row.loss) mean_loss += l / nodes_;
      hooks_.progress({row.step + 1, scenario_.workload.steps, mean_loss, clock_->now()});
    }
    rows_.erase(rows_.begin());
    // Every node has finished `steps_done` steps: the moment a checkpoint is taken (or, when
    // resuming, the moment the replay has rebuilt and the saved values go back in).
    const int every = scenario_.output.resume_every;
    if (every > 0 && steps_done % every == 0 && steps_done < scenario_.workload.steps) at_checkpoint(steps_done);
  }
}

void Engine::snapshot_for_eval(int node, int steps_done) {
  auto& snaps = snapshots_[steps_done];
  if (snaps.empty()) snaps.resize(nodes_);
  // A replay's parameters are not the run's: a placeholder holds the place (the eval row is
  // in the file already, and a snapshot still waiting at the checkpoint is loaded from it).
  // So does another process's replica (the evaluation gathers what it needs from there).
  snaps[node] =
      replaying_ || !replicas_[node] ? torch::empty({0}) : flatten_parameters(replicas_[node]->model());  // cat: a copy
  for (const auto& t : snaps) {
    if (!t.defined()) return;
  }
  auto ready = std::move(snaps);
  snapshots_.erase(steps_done);
  if (!replaying_) run_eval(steps_done, ready);
}

void Engine::run_eval(int steps_done, const std::vector<torch::Tensor>& snapshots) {
  EvalRow row;
  {
    HostTimer timer(times_.eval);
    row = placement_.spread()
              ? evaluator_->evaluate_spread(steps_done, snapshots, *hooks_.group, placement_, eval_tags_)
              : evaluator_->evaluate_step(steps_done, snapshots);
  }
  {
    HostTimer timer(times_.recording);
    recorder_->eval(row);
  }
  evaluator_->summarise(row, summary_);
}

}  // namespace testbed
