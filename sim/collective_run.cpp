// Collective execution over the event clock; values follow the plan's Reduce/Copy ops.
#include "sim/collective_run.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace testbed {

CollectiveRun::CollectiveRun(std::shared_ptr<const CollectivePlan> plan, std::vector<int> hosts,
                             Network& network, uint64_t& next_message_id, CollectiveHooks hooks,
                             MessageTransport transport)
    : plan_(std::move(plan)),
      hosts_(std::move(hosts)),
      network_(network),
      next_message_id_(next_message_id),
      hooks_(std::move(hooks)),
      transport_(transport) {
  size_t m = plan_->messages.size();
  int p = plan_->ranks;
  buffers_.resize(p);
  arrived_.resize(p);
  lost_.resize(m);
  payloads_.resize(m);
  unmet_.resize(m);
  sent_.assign(m, false);
  dependents_.resize(m);
  outgoing_.resize(p);
  early_.resize(p);
  applied_.assign(p, 0);
  done_.assign(p, false);
  for (size_t i = 0; i < m; ++i) {
    const auto& msg = plan_->messages[i];
    unmet_[i] = static_cast<int>(msg.after.size());
    for (int dep : msg.after) dependents_[dep].push_back(static_cast<int>(i));
    outgoing_[msg.src].push_back(static_cast<int>(i));
  }
}

void CollectiveRun::enter(int rank, torch::Tensor buffer, torch::Tensor arrived) {
  buffers_[rank] = std::move(buffer);
  arrived_[rank] = std::move(arrived);
  for (int message : early_[rank]) apply(message);
  early_[rank].clear();
  try_send(rank);
  check_done(rank);
}

void CollectiveRun::try_send(int rank) {
  if (!buffers_[rank].defined()) return;
  for (int message : outgoing_[rank]) {
    if (!sent_[message] && unmet_[message] == 0) send(message);
  }
}

void CollectiveRun::send(int message) {
  const auto& msg = plan_->messages[message];
  sent_[message] = true;
  payloads_[message] = buffers_[msg.src].slice(0, msg.offset, msg.offset + msg.count).clone();
  Message wire{next_message_id_++, hosts_[msg.src], hosts_[msg.dst], msg.bytes};
  wire.datagrams = transport_.datagrams;
  wire.element_bytes = transport_.element_bytes;
  network_.send(wire, [this, message](const Delivery& d) { arrive(message, d); });
}

void CollectiveRun::arrive(int message, const Delivery& delivery) {
  ++delivered_;
  hooks_.delivered(delivery);
  lost_[message] = delivery.lost;
  int dst = plan_->messages[message].dst;
  if (!buffers_[dst].defined()) {
    early_[dst].push_back(message);
  } else {
    apply(message);
  }
  for (int next : dependents_[message]) --unmet_[next];
  try_send(dst);
  check_done(dst);
}

void CollectiveRun::apply(int message) {
  const auto& msg = plan_->messages[message];
  auto target = buffers_[msg.dst].slice(0, msg.dst_offset, msg.dst_offset + msg.count);
  const auto& lost = lost_[message];
  if (lost.empty()) {
    if (msg.op == ChunkOp::Reduce) {
      target.add_(payloads_[message]);
    } else {
      target.copy_(payloads_[message]);
    }
  } else {
    // Only what arrived lands; the rest of the target keeps its value and is marked lost.
    if (!arrived_[msg.dst].defined())
      throw std::logic_error("collective: message to rank " + std::to_string(msg.dst) +
                             " lost elements but the rank has no arrived mask");
    auto mask = arrived_[msg.dst].slice(0, msg.dst_offset, msg.dst_offset + msg.count);
    int64_t from = 0;
    auto land = [&](int64_t begin, int64_t end) {
      if (begin >= end) return;
      auto t = target.slice(0, begin, end);
      auto v = payloads_[message].slice(0, begin, end);
      if (msg.op == ChunkOp::Reduce) {
        t.add_(v);
      } else {
        t.copy_(v);
      }
    };
    for (const auto& r : lost) {
      // Ranges may name padding past the last element (an odd fp4 message): clamp.
      const int64_t begin = std::clamp<int64_t>(r.begin, 0, msg.count);
      const int64_t end = std::clamp<int64_t>(r.end, begin, msg.count);
      land(from, begin);
      mask.slice(0, begin, end).fill_(false);
      from = std::max(from, end);
    }
    land(from, msg.count);
  }
  payloads_[message] = torch::Tensor();
  lost_[message].clear();
  ++applied_[msg.dst];
}

void CollectiveRun::check_done(int rank) {
  if (done_[rank] || !buffers_[rank].defined()) return;
  if (applied_[rank] < plan_->inbox[rank].size()) return;
  done_[rank] = true;
  ++ranks_done_;
  hooks_.rank_done(rank);
}

}  // namespace testbed
