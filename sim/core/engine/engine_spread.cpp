// A run spread over processes (docs/scale-out.md): where a step's plan comes from (trained
// here, trained ahead while a peer was awaited, or a peer's), and the buffers a collective
// needs from other processes. Every process runs every event; only these cross.
#include "sim/core/engine/engine.h"

#include <algorithm>
#include <cstdlib>

#include <torch/torch.h>

#include "comm/tensors/comm_layout.h"
#include "sim/core/error_text.h"
#include "sim/dist/process_group.h"

namespace testbed {

PlanOutline Engine::step_plan(int node) {
  if (!placement_.spread()) return train_step(node);
  if (!placement_.local(node)) {
    train_ready_nodes();
    return receive_plan(node);
  }
  std::erase(ready_, node);
  auto ahead = trained_ahead_.find(node);
  if (ahead == trained_ahead_.end()) {
    PlanOutline plan = train_step(node);
    send_plan(node, plan);
    return plan;
  }
  PlanOutline plan = std::move(ahead->second);
  trained_ahead_.erase(ahead);
  return plan;
}

// Every process runs the same events, so a peer waits for this node's plan at the same event
// where this process trains it: training the due nodes first keeps the processes in parallel.
// A due node's replica is final (its step was scheduled), and training it early changes no bit.
void Engine::train_ready_nodes() {
  for (int node : ready_) {
    PlanOutline plan = train_step(node);
    send_plan(node, plan);
    trained_ahead_.emplace(node, std::move(plan));
  }
  ready_.clear();
}

// A plan this short (in doubles, with its length first) travels as one message, whose receive
// is posted as soon as the previous plan of its node arrived; a longer one follows its head.
// Tests shorten it (TESTBED_PLAN_HEAD, the same in every process) so that every plan takes the
// long way.
int64_t plan_head() {
  static const int64_t doubles = [] {
    const char* text = std::getenv("TESTBED_PLAN_HEAD");
    return text ? std::max<int64_t>(2, std::atoll(text)) : int64_t{128};
  }();
  return doubles;
}

void Engine::send_plan(int node, const PlanOutline& plan) {
  const uint64_t sequence = plans_exchanged_[node]++ * nodes_ + node;
  const torch::Tensor wire = encode_plan(plan);
  const int64_t head_size = plan_head();
  auto head = torch::zeros({head_size}, torch::kFloat64);
  head[0] = static_cast<double>(wire.numel());
  const bool inline_plan = wire.numel() < head_size;
  if (inline_plan) head.narrow(0, 1, wire.numel()).copy_(wire);
  for (int peer = 0; peer < placement_.world; ++peer) {
    if (peer == placement_.rank) continue;
    hooks_.group->send(head, peer, wire_tag(TagKind::PlanHead, sequence));
    // The peer posts a body's receive when it reads the head: kept to the end (rare, small).
    if (!inline_plan) hooks_.group->send(wire, peer, wire_tag(TagKind::PlanBody, sequence), false);
  }
}

void Engine::post_plan_head(int node) {
  auto& [ticket, head] = plan_heads_[node];
  head = torch::empty({plan_head()}, torch::kFloat64);
  ticket = hooks_.group->post_receive(head, placement_.owner(node),
                                      wire_tag(TagKind::PlanHead, plans_exchanged_[node] * nodes_ + node));
}

PlanOutline Engine::receive_plan(int node) {
  if (plan_heads_[node].first < 0) post_plan_head(node);  // the node's first plan
  const uint64_t sequence = plans_exchanged_[node]++ * nodes_ + node;
  const std::string what = "plan of node " + std::to_string(node) + " at step " + std::to_string(state_[node].step);
  auto [ticket, head] = plan_heads_[node];
  hooks_.group->wait_receive(ticket, what);
  const auto size = static_cast<int64_t>(head[0].item<double>());
  torch::Tensor wire = head.narrow(0, 1, std::min(size, plan_head() - 1));
  if (size >= plan_head()) {
    wire = torch::empty({size}, torch::kFloat64);
    hooks_.group->receive(wire, placement_.owner(node), wire_tag(TagKind::PlanBody, sequence), what);
  }
  PlanOutline plan = decode_plan(wire);
  post_plan_head(node);  // the next one's, so that it travels while this process goes on
  return plan;
}

// A spread run's collectives move every participant's values in every process that has one:
// a local rank's buffer goes to those processes as it is issued, another process's arrives
// into the rank's block of its work buffer while the op waits to enter (CollectiveHooks::await).
torch::Tensor Engine::spread_work_buffer(int node, const CommOp& op, int rank, int blocks,
                                         Communicator::Collective& c) {
  if (replicas_[node]) {
    // A copy, one for every peer: Gloo reads the tensor when the peer takes it, and the
    // reduction here is in place.
    const torch::Tensor sent = c.processes.size() > 1 ? op.buffer.clone() : torch::Tensor();
    for (int p : c.processes)
      if (p != placement_.rank) hooks_.group->send(sent, p, wire_tag(TagKind::Payload, c.input_tag + rank));
    return comm_work_buffer(op, rank, blocks);
  }
  if (!c.processes.count(placement_.rank)) return torch::empty({0});  // nobody here reads it
  torch::Tensor own;
  torch::Tensor work = comm_work_buffer_awaiting(op.kind, rank, blocks, op.buffer.numel(), own);
  c.input_tickets[rank] =
      hooks_.group->post_receive(own, placement_.owner(node), wire_tag(TagKind::Payload, c.input_tag + rank));
  return work;
}

// Input tags: the collectives open in the same order in every process.
void Engine::spread_collective(const Communicator::Key& key, Communicator::Collective& slot, CollectiveHooks& hooks,
                               const std::vector<int>& participants) {
  slot.input_tag = payload_tags_;
  payload_tags_ += participants.size();
  slot.input_tickets.assign(participants.size(), -1);
  for (int n : participants) slot.processes.insert(placement_.owner(n));
  hooks.values = slot.processes.count(placement_.rank) > 0;
  hooks.await = [this, key, participants, tag = key.second](int rank) {
    int64_t& ticket = comm_->collectives().at(key).input_tickets[rank];
    if (ticket < 0) return;
    hooks_.group->wait_receive(ticket, "buffer of '" + tag + "' (step " + std::to_string(key.first) + ") from node " +
                                           std::to_string(participants[rank]));
    ticket = -1;
  };
}

void Engine::finish_spread() {
  hooks_.group->cancel_receives();  // the plans after each node's last
  if (summary_.status == RunStatus::Completed) {
    try {
      hooks_.group->finish_sends();  // a peer may still wait for this process's last values
    } catch (const std::exception& e) {
      summary_.status = RunStatus::Failed;
      summary_.error = error_sentence(e);
    }
  }
  times_.transfers = hooks_.group->transfer_seconds();
  times_.receives = hooks_.group->receives();
}

}  // namespace testbed
