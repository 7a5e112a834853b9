// The node-step state machine and the run loop. Every action is an event on the one clock: a
// step starts (real LibTorch compute happens here), its modelled compute ends, its ops go to the
// comm layer, their messages go out and arrive, and the step ends.
#include "sim/core/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "comm/tensors/comm_layout.h"
#include "netmodels/event_clock.h"
#include "sim/core/compute/compute_model.h"
#include "sim/core/compute/overlap_slowdown.h"
#include "sim/core/error_text.h"
#include "sim/dist/process_group.h"
#include "sim/output/resume_file.h"
#include "training/algorithms/common.h"
#include "training/models/checkpoint.h"

namespace testbed {

RunSummary Engine::run(Recorder& recorder) {
  recorder_ = output_ = &recorder;
  summary_.status = RunStatus::Running;
  if (hooks_.resume) start_replay();
  {
    HostTimer timer(times_.run);
    for (int n = 0; n < nodes_; ++n) schedule_start(n);
    try {
      clock_->run(hooks_.interrupted);
    } catch (const std::exception& e) {
      summary_.status = RunStatus::Failed;
      summary_.error = error_sentence(e) + " (at simulated time " + std::to_string(clock_->now()) + " s)";
      if (hooks_.group) hooks_.group->report_failure(summary_.error);  // the others quote it
    }
  }
  // A signal mid-step stops the clock between two events (EventClock::run).
  if (summary_.status == RunStatus::Running && hooks_.interrupted && hooks_.interrupted->load()) {
    summary_.status = RunStatus::Failed;
    summary_.error = "interrupted by a signal";
    if (hooks_.group) hooks_.group->report_failure(summary_.error);
  }
  if (replaying_ && summary_.status == RunStatus::Running) {
    summary_.status = RunStatus::Failed;
    summary_.error = "the replay never reached the checkpoint's step " + std::to_string(hooks_.resume->step);
  }
  recorder_ = output_;
  // Rows that not every node finished (a diverged or stopped run) still go out, NaN-padded.
  for (const auto& [step, pending] : rows_) recorder_->train(pending.row);
  rows_.clear();
  if (summary_.status == RunStatus::Running) {
    bool all_done = true;
    for (const auto& s : state_) all_done = all_done && s.finished;
    summary_.status = all_done ? RunStatus::Completed : RunStatus::Failed;
    if (!all_done)
      summary_.error = "the event queue ran dry before every node finished (a message was never delivered)";
  }
  if (placement_.spread()) finish_spread();
  // The last eval left the averaged model in eval_model_ (rank 0's, in a spread run).
  if (summary_.status == RunStatus::Completed && !scenario_.output.checkpoint.empty() && placement_.rank == 0) {
    save_checkpoint(*eval_model_, scenario_.output.checkpoint);
  }
  // Not clock_->now(): ns-3 timers (delayed ACKs, RTOs, TIME_WAIT) outlive the last message.
  summary_.projected_time_s = last_step_end_;
  summary_.total_bytes = total_bytes_;
  summary_.host_time_s = times_.run;
  const PhaseMemo::Stats& phases = comm_->memo_stats();
  // Where the rule ruled memoization out before step 0 the run kept no phases: none to count.
  summary_.phases_replayed = memo_steps_ ? phases.replayed : 0;
  summary_.phases_simulated = memo_steps_ ? phases.recorded + phases.simulated : 0;
  int done = scenario_.workload.steps;
  for (const auto& s : state_) done = std::min(done, s.step);
  summary_.steps_completed = done;
  recorder_->finish(summary_);
  return summary_;
}

void Engine::stop(RunStatus status, const std::string& error) {
  if (summary_.status != RunStatus::Running) return;
  summary_.status = status;
  summary_.error = error;
  // A signal reaches each process at its own event: the others learn why this one went.
  if (hooks_.group && status == RunStatus::Failed) hooks_.group->report_failure(error);
  clock_->stop();
}

// A node's step (docs/architecture.md, decision 4): start_step runs the local compute; when its modelled
// time has passed, compute_done issues the step's ops; advance then waits, if it must, for
// the ops due before the next step, applies them in issue order, and ends the step.
void Engine::start_step(int node) {
  HostTimer timer(times_.engine);
  if (hooks_.interrupted && hooks_.interrupted->load()) return stop(RunStatus::Failed, "interrupted by a signal");
  auto& s = state_[node];
  PlanOutline plan;
  if (replaying_) {
    plan.comm = replayed_step(node, s.step).comm;
    plan.compute_time = schedule_[node][s.step].compute_time;
    plan.extra_time = schedule_[node][s.step].extra_time;
  } else {
    plan = step_plan(node);
  }
  if (!step_cost_said_ && !plan.comm.empty()) say_step_cost(s.step, plan.comm);
  s.loss = plan.loss;
  s.compute_time = plan.compute_time;
  s.extra_time = plan.extra_time;
  if (!replaying_ && !hooks_.checkpoint_dir.empty()) {
    if (schedule_[node].size() != static_cast<size_t>(s.step))
      throw std::logic_error("op schedule: node " + std::to_string(node) + " starts step " + std::to_string(s.step) +
                             " with " + std::to_string(schedule_[node].size()) + " steps recorded");
    schedule_[node].push_back({s.compute_time, s.extra_time, scheduled_ops(plan.comm), {}});
  }
  s.computing = true;
  s.round = 0;
  s.update_ticks = 0;
  for (const auto& op : plan.comm) {
    if (op.before_forward >= 0)
      throw std::logic_error(algorithm_->name() + "'s op '" + op.tag +
                             "' waits for the next forward: only round ops may");
  }
  // A step whose forward ran at its gates (begin_forward) started that much earlier.
  s.compute_end_ticks = clock_->now_ticks() + EventClock::ticks(s.compute_time) - s.forward_ticks;
  comm_->begin_step(node);
  s.to_issue = schedule_backward_ops(node, std::move(plan.comm));
  s.forward_ticks = 0;
  // A split step (CommKind::Cut): the edge's compute so far is the front's forward; its
  // backward and update wait for the gradient, and are spent once the cut is complete.
  if (std::any_of(s.to_issue.begin(), s.to_issue.end(), [](const CommOp& op) { return op.kind == CommKind::Cut; })) {
    double forward = 0;
    for (double f : compute_->shares().forward) forward += f;
    const int64_t start = clock_->now_ticks();
    s.compute_end_ticks = start + EventClock::ticks((s.compute_time - s.extra_time) * forward);
    s.update_ticks = EventClock::ticks(s.compute_time) - (s.compute_end_ticks - start);
  }
  if (!projection_ && !std::isfinite(plan.loss)) {
    record_step(node);
    return stop(RunStatus::Diverged,
                "node " + std::to_string(node) + " has a non-finite loss at step " + std::to_string(s.step));
  }
  // Computes that end at one tick end in node order, whatever order the steps started in:
  // the same fleet state then always enters its collectives the same way (memoization).
  auto [batch, fresh] = compute_batches_.try_emplace(s.compute_end_ticks);
  batch->second.nodes.push_back(node);
  if (fresh) {
    batch->second.event_order = issue_events_++;
    clock_->schedule_ticks(s.compute_end_ticks - clock_->now_ticks(), [this, end = s.compute_end_ticks] {
      auto nodes = std::move(compute_batches_.at(end).nodes);
      compute_batches_.erase(end);
      std::sort(nodes.begin(), nodes.end());
      for (int n : nodes) compute_done(n);
    });
  }
  for (const auto& op : s.to_issue) plan_issue(node, op, s.compute_end_ticks, true);
}

void Engine::plan_issue(int node, const CommOp& op, int64_t at_ticks, bool in_batch) {
  if (!memo_steps_) return;
  comm_->plan(node, op, at_ticks, in_batch ? compute_batches_.at(at_ticks).event_order : issue_events_++);
}

void Engine::schedule_start(int node) {
  if (placement_.spread() && placement_.local(node)) ready_.push_back(node);
  clock_->schedule(0, [this, node] { start_step(node); });
}

// A node's step with ops that wait for a gradient (docs/compute.md): its passes run in order
// (each layer's forward, then each layer's backward in reverse, then the update), each op
// leaves when the backward pass of its tensor's layer ends, compute_done comes at the end of
// backward, and the update runs once the ops due before the next step are complete.
std::vector<CommOp> Engine::schedule_backward_ops(int node, std::vector<CommOp> ops) {
  const bool any = std::any_of(ops.begin(), ops.end(), streamed);
  if (!any) return ops;
  if (!algorithm_->issues_during_backward())
    throw std::logic_error(algorithm_->name() + " issued an op during backward without saying it would");
  auto& s = state_[node];
  const StepShares& shares = compute_->shares();
  const int64_t start = clock_->now_ticks() - s.forward_ticks;  // when its first pass began (begin_forward)
  // The update gets what backward leaves of the step's ticks, so that the passes add up to the
  // step exactly, as without ops during backward.
  const double passes = s.compute_time - s.extra_time;
  s.compute_end_ticks = start + EventClock::ticks(passes * shares.backward_end() + s.extra_time);
  s.update_ticks = EventClock::ticks(s.compute_time) - (s.compute_end_ticks - start);
  // When each op leaves: with its tensor's pass, or at backward's end.
  std::vector<int64_t> leaves;
  for (const auto& op : ops) {
    const int tensor = op.after_forward >= 0 ? op.after_forward : op.after_gradient;
    if (tensor >= static_cast<int>(gradient_layer_.size()))
      throw std::logic_error(algorithm_->name() + "'s op '" + op.tag + "' waits for tensor " + std::to_string(tensor) +
                             " of " + std::to_string(gradient_layer_.size()));
    // A forward op of a step whose forward already ran at its gates (begin_forward) leaves now.
    leaves.push_back(op.after_forward >= 0
                         ? std::max(clock_->now_ticks(),
                                    start + EventClock::ticks(passes * shares.forward_before(gradient_layer_[tensor])))
                     : op.after_gradient < 0
                         ? s.compute_end_ticks
                         : start + EventClock::ticks(passes * shares.backward_done(gradient_layer_[tensor])));
  }
  // Horovod's cycles fuse what the passes submit, on the passes' own time; the slowdown then
  // stretches the passes beside the buffers that actually go.
  if (horovod_) fuse_by_cycle(node, start, ops, leaves);
  // compute.overlap_slowdown: the passes that run while the stream would carry these ops, each
  // for its alone time after it leaves, take 1 + slowdown as long (docs/compute.md#overlap-slowdown).
  if (overlap_slowdown_ > 0) {
    std::vector<int64_t> busy;
    for (size_t i = 0; i < ops.size(); ++i)  // an op due at backward's end holds no pass's stream
      busy.push_back(leaves[i] >= s.compute_end_ticks
                         ? 0
                         : EventClock::ticks(comm_->alone_time(ops[i], ops[i].nodes.empty() ? fleet_ : ops[i].nodes)));
    const SlowedPasses slowed = slow_overlapped_passes(leaves, busy, s.compute_end_ticks, overlap_slowdown_);
    s.compute_time += EventClock::seconds(slowed.compute_end - s.compute_end_ticks);
    s.compute_end_ticks = slowed.compute_end;
    leaves = slowed.leaves;
  }
  std::vector<CommOp> at_end;
  for (size_t i = 0; i < ops.size(); ++i) {
    CommOp& op = ops[i];
    const int64_t at = leaves[i];
    // Ops due when backward ends leave from compute_done, in order with the step's other ops.
    if (at >= s.compute_end_ticks) {
      at_end.push_back(std::move(op));
      continue;
    }
    plan_issue(node, op, at, false);
    clock_->schedule_ticks(at - clock_->now_ticks(), [this, node, op = std::move(op)]() mutable {
      HostTimer timer(times_.engine);
      issue(node, std::move(op));
    });
  }
  return at_end;
}

// Horovod's background thread (collective.library horovod): every cycle_time it takes the
// all-reduces submitted since the last cycle, in order, and runs them as fused buffers of at
// most fusion_mb (a tensor larger than that alone). The cycles run from the step's first pass.
// A fused op leaves at its cycle's tick; one due after backward ends leaves when it ends.
void Engine::fuse_by_cycle(int node, int64_t start, std::vector<CommOp>& ops, std::vector<int64_t>& leaves) {
  const int64_t cycle = std::max<int64_t>(1, EventClock::ticks(scenario_.collective.cycle_time.s));
  const double threshold = scenario_.collective.fusion_mb * 1024 * 1024;
  // What Horovod's hooks submit during the passes: gradients as backward makes them, and
  // all-reduces a forward pre-hook starts (Eva's input vectors, as its reference code does).
  auto fusable = [](const CommOp& op) {
    return op.kind == CommKind::AllReduce && (op.after_gradient >= 0 || op.after_forward >= 0) && op.delay == 0 &&
           op.before_forward < 0;
  };
  auto tick = [&](int64_t at) { return start + (at - start + cycle - 1) / cycle * cycle; };
  std::vector<CommOp> out;
  std::vector<int64_t> out_leaves;
  std::vector<CommOp> group;  // the fusion buffer being filled
  double group_bytes = 0;
  int64_t group_tick = -1;
  auto flush = [&] {
    if (group.empty()) return;
    if (group.size() == 1) {
      out.push_back(std::move(group[0]));
    } else {
      CommOp fused = group[0];
      fused.tag = "fused." + group[0].tag;
      // A projection's buffers are shape-only (never read): concatenating them would allocate
      // the whole buffer for nothing.
      std::vector<torch::Tensor> buffers;
      int64_t elements = 0;
      for (const CommOp& part : group) buffers.push_back(part.buffer), elements += part.buffer.numel();
      fused.buffer = projection_ ? shape_only(elements) : torch::cat(buffers);
      fused_parts_[{node, state_[node].step, fused.tag}] = std::move(group);
      out.push_back(std::move(fused));
    }
    out_leaves.push_back(group_tick);
    group.clear();
    group_bytes = 0;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!fusable(ops[i])) {
      flush();
      out.push_back(std::move(ops[i]));
      out_leaves.push_back(leaves[i]);
      continue;
    }
    const int64_t at = tick(leaves[i]);
    const double bytes = static_cast<double>(ops[i].buffer.numel()) * ops[i].bytes_per_element;
    const bool fits = !group.empty() && at == group_tick && ops[i].nodes == group[0].nodes &&
                      ops[i].bytes_per_element == group[0].bytes_per_element && group_bytes + bytes <= threshold;
    if (!fits) flush();
    if (group.empty()) group_tick = at;
    group.push_back(std::move(ops[i]));
    group_bytes += bytes;
  }
  flush();
  ops = std::move(out);
  leaves = std::move(out_leaves);
}

void Engine::compute_done(int node) {
  HostTimer timer(times_.engine);
  auto& s = state_[node];
  s.computing = false;
  for (auto& op : s.to_issue) issue(node, std::move(op));
  s.to_issue.clear();
  advance(node);
}

void Engine::issue(int node, CommOp op) {
  auto& s = state_[node];
  const int steps = scenario_.workload.steps;
  InFlight f;
  f.issued_step = s.step;
  // Everything still in flight when training ends is applied then.
  f.due_step = op.delay >= steps ? steps : std::min(steps, s.step + 1 + op.delay);
  const std::vector<int> participants = op.nodes.empty() ? fleet_ : op.nodes;
  const auto rank_it = std::find(participants.begin(), participants.end(), node);
  if (rank_it == participants.end())
    throw std::logic_error(algorithm_->name() + ": node " + std::to_string(node) + " issued '" + op.tag +
                           "' without being one of its nodes");
  const int rank = static_cast<int>(rank_it - participants.begin());
  Communicator::Collective& c = comm_->collective(node, s.step, op, participants);
  f.blocks = op.kind == CommKind::AllGather || op.kind == CommKind::ReduceScatter
                 ? static_cast<int>(participants.size())
             : op.kind == CommKind::Broadcast || op.kind == CommKind::Cut || c.lane_ring
                 ? 1  // lanes: a projection, no buffer
                 : 1 + static_cast<int>(c.plan->inbox[rank].size());
  if (op.kind == CommKind::NeighbourExchange) {
    for (int m : c.plan->inbox[rank]) op.peers.push_back(participants[c.plan->messages[m].src]);
  }
  if (projection_) {
    f.work = op.buffer;  // shape-only: no value moves (CollectiveHooks::values)
  } else if (!placement_.spread()) {
    f.work = comm_work_buffer(op, rank, f.blocks);
  } else {
    f.work = spread_work_buffer(node, op, rank, f.blocks, c);
  }
  if (c.transport.datagrams && !projection_) f.arrived = torch::ones({f.work.numel()}, torch::kBool);
  // Sizes never depend on values (decision 5), so the step's bytes are known as it issues
  // the op, even when the op outlives the step (overlap) and its messages leave later.
  pending_row(s.step).row.bytes[node] += c.bytes_per_rank[rank];
  total_bytes_ += c.bytes_per_rank[rank];
  f.op = std::move(op);
  f.rank = rank;
  // Ops issued during forward and backward run one after another, as collectives on one
  // communication stream do (NCCL's, a Gloo process group's): each waits for the node's previous one.
  if (streamed(f.op)) {
    f.entered = std::none_of(s.in_flight.begin(), s.in_flight.end(),
                             [](const InFlight& g) { return streamed(g.op) && !g.complete; });
  }
  // Ops the next forward waits for run one after another too: reach_gate enters the next.
  if (f.op.before_forward >= 0) {
    f.entered = std::none_of(s.in_flight.begin(), s.in_flight.end(),
                             [](const InFlight& g) { return g.op.before_forward >= 0; });
  }
  const bool enter = f.entered;
  const std::string tag = f.op.tag;
  const bool cut = f.op.kind == CommKind::Cut;
  torch::Tensor work = f.work, arrived = f.arrived;
  s.in_flight.push_back(std::move(f));
  if (enter)
    comm_->enter({s.step, tag}, rank, work, arrived);  // may complete at once (one participant): after the push
  // The cloud is in whenever an edge is: its copy holds the gradient it computed (block 1).
  if (cut) {
    total_bytes_ += c.bytes_per_rank[1];
    comm_->enter({s.step, tag}, 1, projection_ ? work : work.clone(), {});
  }
}

void Engine::enter_next_queued(int node) {
  for (auto& f : state_[node].in_flight) {
    if (f.entered || !streamed(f.op)) continue;
    f.entered = true;
    comm_->enter({f.issued_step, f.op.tag}, f.rank, f.work, f.arrived);
    return;
  }
}

void Engine::op_complete(int node, int issued_step, const std::string& tag) {
  auto& s = state_[node];
  bool on_stream = false;
  for (auto& f : s.in_flight) {
    if (f.issued_step == issued_step && f.op.tag == tag) {
      f.complete = true;
      on_stream = streamed(f.op);
    }
  }
  // Outside the delivery callback, as the step's end below.
  if (on_stream) {
    clock_->schedule(0, [this, node] {
      HostTimer timer(times_.engine);
      enter_next_queued(node);
    });
  }
  if (s.at_gate) {
    s.at_gate = false;
    clock_->schedule(0, [this, node] {
      HostTimer timer(times_.engine);
      reach_gate(node);
    });
  }
  // A fresh event, so the step ends outside the network's delivery callback. Once: other
  // ops may complete before that event runs, and advance() waits again if it must.
  if (s.waiting) {
    s.waiting = false;
    clock_->schedule(0, [this, node] {
      HostTimer timer(times_.engine);
      advance(node);
    });
  }
}

void Engine::advance(int node) {
  auto& s = state_[node];
  const int next = s.step + 1;
  // Ops the next step's forward waits for are not waited for here (begin_forward).
  auto due = [next](const InFlight& f) { return f.due_step <= next && f.op.before_forward < 0; };
  for (const auto& f : s.in_flight) {
    if (due(f) && !f.complete) {
      s.waiting = true;  // exposed communication: op_complete brings the node back
      return;
    }
  }
  s.waiting = false;
  apply_ops(node, due);
  if (s.update_ticks > 0 && algorithm_->updates_before_rounds()) {
    clock_->schedule_ticks(s.update_ticks, [this, node] {
      HostTimer timer(times_.engine);
      advance(node);
    });
    s.update_ticks = 0;
    return;
  }
  if (algorithm_->has_rounds() && start_round(node)) return;
  if (std::any_of(s.in_flight.begin(), s.in_flight.end(), [](const InFlight& f) { return f.op.before_forward >= 0; }))
    return begin_forward(node);
  if (s.update_ticks > 0) {  // the update of a step whose ops left during backward
    clock_->schedule_ticks(s.update_ticks, [this, node] {
      HostTimer timer(times_.engine);
      end_step(node);
    });
    s.update_ticks = 0;
    return;
  }
  end_step(node);
}

void Engine::apply_ops(int node, const std::function<bool(const InFlight&)>& which) {
  auto& s = state_[node];
  {
    HostTimer compute_timer(times_.local_compute);
    for (auto& f : s.in_flight) {
      if (!which(f)) continue;
      const auto fused = fused_parts_.find({node, f.issued_step, f.op.tag});
      // A replay's ops carry no values; another process applies its own replicas'.
      if (replaying_ || !replicas_[node]) {
        if (fused != fused_parts_.end()) fused_parts_.erase(fused);
        continue;
      }
      comm_unpack(f.op, f.work, f.blocks, f.rank, f.arrived);
      if (fused == fused_parts_.end()) {
        algorithm_->apply(node, f.issued_step, *replicas_[node], f.op);
        continue;
      }
      // A fusion buffer (fuse_by_cycle): each part gets its own slice of the reduced buffer.
      int64_t offset = 0;
      for (CommOp& part : fused->second) {
        const int64_t n = part.buffer.numel();
        part.buffer = f.op.buffer.narrow(0, offset, n).clone();
        offset += n;
        algorithm_->apply(node, f.issued_step, *replicas_[node], part);
      }
      fused_parts_.erase(fused);
    }
  }
  std::erase_if(s.in_flight, which);
}

void Engine::end_step(int node) {
  auto& s = state_[node];
  const int next = s.step + 1;
  record_step(node);
  s.step = next;
  if (eval_step(next) && !projection_) snapshot_for_eval(node, next);
  if (next == scenario_.workload.steps) {
    s.finished = true;
    // Background flows run to their own end and FlowMonitor checks for lost packets every
    // second without end: with either, the events never run dry, so the run ends here.
    if (!hooks_.captures.flowmon_file.empty() || !scenario_.network.background.empty()) {
      bool all_done = true;
      for (const auto& other : state_) all_done = all_done && other.finished;
      if (all_done) clock_->stop();
    }
    return;
  }
  schedule_start(node);
}

bool Engine::start_round(int node) {
  auto& s = state_[node];
  Round round;
  double seconds = 0;
  if (replaying_) {
    const auto& rounds = schedule_[node][s.step].rounds;
    if (s.round >= rounds.size()) return false;
    round.comm = replayed_ops(rounds[s.round].ops);
    seconds = rounds[s.round].extra_time;
  } else if (placement_.spread() && !placement_.local(node)) {
    train_ready_nodes();
    PlanOutline outline = receive_plan(node);
    if (outline.comm.empty()) return false;
    round.comm = std::move(outline.comm);
    seconds = outline.compute_time;
  } else if (projection_) {
    round = algorithm_->projected_round(node, s.step, s.round);
    seconds = round.comm.empty() ? 0 : compute_->extra_seconds(node, s.step, round.work);
    if (round.comm.empty()) return false;
  } else {
    double host_seconds = 0;
    {
      HostTimer compute_timer(host_seconds);
      round = algorithm_->next_round(node, s.step, *replicas_[node]);
    }
    times_.local_compute += host_seconds;
    seconds = round.comm.empty() ? 0 : compute_->extra_seconds(node, s.step, round.work, host_seconds);
    if (placement_.spread()) send_plan(node, {0, seconds, 0, round.comm});
    if (round.comm.empty()) return false;
    if (!hooks_.checkpoint_dir.empty()) schedule_[node][s.step].rounds.push_back({seconds, scheduled_ops(round.comm)});
  }
  for (const auto& op : round.comm) {
    // A round's op may overlap later steps (delay, as a step's may: Streaming DiLoCo across
    // replica groups), but leaves once the round's work is done, never during a pass.
    if (streamed(op) || (op.delay != 0 && op.before_forward >= 0))
      throw std::logic_error(algorithm_->name() + "'s round op '" + op.tag + "' must leave when its round starts");
    if (op.before_forward >= 0 && !algorithm_->forward_waits_for_ops())
      throw std::logic_error(algorithm_->name() + "'s round op '" + op.tag +
                             "' gates the forward without saying it would");
  }
  ++s.round;
  s.compute_time += seconds;
  clock_->schedule_ticks(EventClock::ticks(seconds), [this, node, ops = std::move(round.comm)]() mutable {
    HostTimer timer(times_.engine);
    for (auto& op : ops) issue(node, std::move(op));
    advance(node);
  });
  return true;
}

// ns-3's host cost a data packet, its ACK and hops included: 69-100 us measured on GPU hosts
// and fat-trees of 64 and 256 ranks (docs/results.md, ns-3 against flow, host cost).
constexpr double kNs3HostSecondsPerPacket = 80e-6;

void Engine::say_step_cost(int step, const std::vector<CommOp>& ops) {
  step_cost_said_ = true;
  if (scenario_.network.backend != Backend::Ns3 || !hooks_.warn) return;
  double bytes = 0;  // every participant's payload, from the plans the collectives will take
  for (const auto& op : ops) {
    for (uint64_t b : bytes_sent_per_rank(*comm_->plan_for(op, op.nodes.empty() ? fleet_ : op.nodes)))
      bytes += static_cast<double>(b);
  }
  const double packets = std::ceil(bytes / (scenario_.network.mtu - 52));
  const double host_s = packets * kNs3HostSecondsPerPacket;
  if (host_s < 120) return;
  char text[512];
  std::snprintf(
      text, sizeof text,
      "testbed: warning: step %d sends about %.2f million packets of %d bytes on ns-3, about %.0f host minutes at "
      "~80 us a packet (docs/results.md); network.backend: flow projects the same cluster in seconds a "
      "step (docs/network.md#backends)",
      step, packets / 1e6, scenario_.network.mtu, host_s / 60);
  hooks_.warn(text);
}

// The memo policy (memo_policy.h) sees each node as it stands when the step's first
// collective is entered.
PhaseEntry Engine::phase_entry(int node, int step) const {
  PhaseEntry entry;
  entry.memoize = memo_steps_;
  entry.node = node;
  entry.step = step;
  for (const auto& s : state_) entry.nodes.push_back({s.step, s.computing, s.in_flight.empty(), nullptr});
  entry.now_ticks = clock_->now_ticks();
  entry.steps = scenario_.workload.steps;
  // The passes before a node's first send: the whole step, or, when ops leave during
  // backward, at least its forward (a tick off for the rounding of passes from the step).
  double forward = 0;
  for (double f : compute_->shares().forward) forward += f;
  const bool during_backward = algorithm_->issues_during_backward();
  entry.ticks_to_first_send = [this, forward, during_backward](int n, int st) {
    const double passes = compute_->step_seconds(n, st, 0);
    return during_backward ? std::max<int64_t>(0, EventClock::ticks(passes * forward) - 1) : EventClock::ticks(passes);
  };
  return entry;
}

}  // namespace testbed
