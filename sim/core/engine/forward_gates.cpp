// The forward gates (CommOp::before_forward, DeAR's all-gathers): the next step's forward runs
// layer by layer, each gate's layer waiting for its op, and the step just ended updates at them.
#include "sim/core/engine/engine.h"

#include <algorithm>

#include "sim/core/compute/compute_model.h"

namespace testbed {

// The step ends when its round has issued the ops (DeAR: once its reduce-scatters are
// complete); the next step's forward starts at once and meets each op at its layer. The update
// of the step just ended runs at the gates, each gate's share in proportion to its op's size
// (DeAR updates a group's parameters just before its forward). After the run's last step
// there is no forward: the step waits at its gates and ends after the last.
void Engine::begin_forward(int node) {
  auto& s = state_[node];
  const int next = s.step + 1;
  s.gates_end_step = next == scenario_.workload.steps;
  s.next_passes = s.gates_end_step ? 0 : compute_->step_seconds(node, next, 0);
  s.gate = 0;
  s.at_gate = false;
  s.gate_update_ticks = s.update_ticks;
  s.update_ticks = 0;
  if (!s.gates_end_step) {
    record_step(node);
    s.step = next;
  }
  clock_->schedule_ticks(forward_ticks_to_gate(node, 0), [this, node] {
    HostTimer timer(times_.engine);
    reach_gate(node);
  });
}

Engine::InFlight& Engine::gate_op(int node, size_t gate) {
  size_t i = 0;
  for (auto& f : state_[node].in_flight) {
    if (f.op.before_forward < 0) continue;
    if (i++ == gate) return f;
  }
  throw std::logic_error("node " + std::to_string(node) + " has no gate " + std::to_string(gate));
}

// Ticks from the forward's start to the gate's layer: the passes before it, rounded once per
// gate so that the gaps between gates add up.
int64_t Engine::forward_ticks_to_gate(int node, size_t gate) {
  const auto& s = state_[node];
  const int tensor = gate_op(node, gate).op.before_forward;
  if (tensor >= static_cast<int>(gradient_layer_.size()))
    throw std::logic_error(algorithm_->name() + "'s forward waits at tensor " + std::to_string(tensor) + " of " +
                           std::to_string(gradient_layer_.size()));
  return EventClock::ticks(s.next_passes * compute_->shares().forward_before(gradient_layer_[tensor]));
}

void Engine::reach_gate(int node) {
  auto& s = state_[node];
  if (!gate_op(node, s.gate).complete) {
    s.at_gate = true;  // op_complete brings the forward back
    return;
  }
  size_t gates = 0;
  double elements = 0, total = 0;
  for (const auto& f : s.in_flight) {
    if (f.op.before_forward < 0) continue;
    total += static_cast<double>(f.op.buffer.numel());
    if (gates++ <= s.gate) elements = total;
  }
  // The gate's share of the update, rounded on the running total so that the shares add up.
  const double previous = elements - static_cast<double>(gate_op(node, s.gate).op.buffer.numel());
  const auto share = [&](double upto) { return std::llround(static_cast<double>(s.gate_update_ticks) * upto / total); };
  const int64_t update = share(elements) - share(previous);
  if (s.gate + 1 == gates) {
    clock_->schedule_ticks(update, [this, node] {
      HostTimer timer(times_.engine);
      finish_forward(node);
    });
    return;
  }
  InFlight& following = gate_op(node, s.gate + 1);
  following.entered = true;
  const int64_t forward = forward_ticks_to_gate(node, s.gate + 1) - forward_ticks_to_gate(node, s.gate);
  if (forward < 0) throw std::logic_error(algorithm_->name() + "'s forward gates are out of layer order");
  ++s.gate;
  comm_->enter({following.issued_step, following.op.tag}, following.rank, following.work, following.arrived);
  clock_->schedule_ticks(update + forward, [this, node] {
    HostTimer timer(times_.engine);
    reach_gate(node);
  });
}

void Engine::finish_forward(int node) {
  auto& s = state_[node];
  const auto gated = [](const InFlight& f) { return f.op.before_forward >= 0; };
  s.forward_ticks = s.gates_end_step ? 0 : forward_ticks_to_gate(node, s.gate);
  apply_ops(node, gated);
  s.gate_update_ticks = 0;
  if (s.gates_end_step) return end_step(node);
  if (eval_step(s.step) && !projection_) snapshot_for_eval(node, s.step);
  schedule_start(node);  // start_step times itself
}

}  // namespace testbed
