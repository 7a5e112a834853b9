// Collective execution over the event clock; values follow the plan's Reduce/Copy ops.
#include "comm/tensors/collective_run.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace testbed {

CollectiveRun::CollectiveRun(std::shared_ptr<const CollectivePlan> plan, std::vector<int> hosts, Network& network,
                             uint64_t& next_message_id, CollectiveHooks hooks, MessageTransport transport)
    : plan_(plan),
      hooks_(std::move(hooks)),
      runner_(
          plan, std::move(hosts), network, next_message_id, transport,
          {[this](int m) {  // the chunk as it is when it leaves
             const auto& msg = plan_->messages[m];
             if (!hooks_.values) return;
             payloads_[m] = buffer(msg.src).slice(0, msg.offset, msg.offset + msg.count).clone();
           },
           [this](int m, const Delivery& d) { arrive(m, d); }, [this](int rank) { check_done(rank); }, hooks_.later}) {
  const size_t m = plan_->messages.size();
  const int p = plan_->ranks;
  buffers_.resize(p);
  arrived_.resize(p);
  lost_.resize(m);
  payloads_.resize(m);
  early_.resize(p);
  applied_.assign(p, 0);
  done_.assign(p, false);
  awaited_.assign(p, false);
}

void CollectiveRun::enter(int rank, torch::Tensor buffer, torch::Tensor arrived) {
  buffers_[rank] = std::move(buffer);
  arrived_[rank] = std::move(arrived);
  for (int message : early_[rank]) apply(message);
  early_[rank].clear();
  runner_.enter(rank);
  check_done(rank);
}

// Lands the message's values, or keeps them until its rank enters.
void CollectiveRun::arrive(int message, const Delivery& delivery) {
  hooks_.delivered(delivery);
  lost_[message] = delivery.lost;
  const int dst = plan_->messages[message].dst;
  if (!buffers_[dst].defined()) {
    early_[dst].push_back(message);
  } else {
    apply(message);
  }
}

void CollectiveRun::apply(int message) {
  const auto& msg = plan_->messages[message];
  if (!hooks_.values) {
    lost_[message].clear();
    ++applied_[msg.dst];
    return;
  }
  auto target = buffer(msg.dst).slice(0, msg.dst_offset, msg.dst_offset + msg.count);
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

torch::Tensor& CollectiveRun::buffer(int rank) {
  if (!awaited_[rank]) {
    awaited_[rank] = true;
    if (hooks_.await) hooks_.await(rank);
  }
  return buffers_[rank];
}

void CollectiveRun::check_done(int rank) {
  if (done_[rank] || !buffers_[rank].defined()) return;
  if (applied_[rank] < plan_->inbox[rank].size()) return;
  done_[rank] = true;
  ++ranks_done_;
  hooks_.rank_done(rank);
}

}  // namespace testbed
