// A collective's message DAG on the clock: a message leaves when its sender is in and its
// last dependency has landed there.
#include "comm/plan_runner.h"

#include <stdexcept>

namespace testbed {

PlanRunner::PlanRunner(std::shared_ptr<const CollectivePlan> plan, std::vector<int> hosts, Network& network,
                       uint64_t& next_message_id, MessageTransport transport, Hooks hooks)
    : plan_(std::move(plan)),
      hosts_(std::move(hosts)),
      network_(network),
      next_message_id_(next_message_id),
      transport_(transport),
      hooks_(std::move(hooks)) {
  if (static_cast<int>(hosts_.size()) != plan_->ranks)
    throw std::invalid_argument("plan runner: one host per rank is needed");
  const size_t m = plan_->messages.size();
  const auto ranks = static_cast<size_t>(plan_->ranks);
  entered_.assign(ranks, false);
  unmet_.resize(m);
  sent_.assign(m, false);
  // Counted, then filled in message order, so that each list keeps the order of the loops that
  // pushed into one vector a key before.
  dependents_.begin.assign(m + 1, 0);
  outgoing_.begin.assign(ranks + 1, 0);
  for (size_t i = 0; i < m; ++i) {
    const auto& msg = plan_->messages[i];
    unmet_[i] = static_cast<int>(msg.after.size());
    for (int dep : msg.after) ++dependents_.begin[dep + 1];
    ++outgoing_.begin[msg.src + 1];
  }
  for (size_t k = 0; k < m; ++k) dependents_.begin[k + 1] += dependents_.begin[k];
  for (size_t r = 0; r < ranks; ++r) outgoing_.begin[r + 1] += outgoing_.begin[r];
  dependents_.items.resize(dependents_.begin[m]);
  outgoing_.items.resize(outgoing_.begin[ranks]);
  std::vector<int> next_dependent(dependents_.begin.begin(), dependents_.begin.end() - 1);
  std::vector<int> next_outgoing(outgoing_.begin.begin(), outgoing_.begin.end() - 1);
  for (size_t i = 0; i < m; ++i) {
    const auto& msg = plan_->messages[i];
    for (int dep : msg.after) dependents_.items[next_dependent[dep]++] = static_cast<int>(i);
    outgoing_.items[next_outgoing[msg.src]++] = static_cast<int>(i);
  }
}

void PlanRunner::later(double seconds, std::function<void()> then) {
  if (!hooks_.later)
    throw std::logic_error("plan runner: " + std::to_string(seconds) + " s to wait but no clock was given");
  hooks_.later(seconds, std::move(then));
}

void PlanRunner::enter(int rank) {
  // A rank with nothing to send has nothing its launch could delay; and its collective may be
  // over (and this runner gone) before a launch scheduled for it would fire.
  const double launch = transport_.library.launch_s;
  if (launch <= 0 || outgoing_[rank].empty()) return launched(rank);
  later(launch, [this, rank] { launched(rank); });
}

void PlanRunner::launched(int rank) {
  entered_[rank] = true;
  try_send(rank);
}

void PlanRunner::enter_all() {
  auto all = [this] {
    entered_.assign(plan_->ranks, true);
    for (size_t i = 0; i < plan_->messages.size(); ++i) {
      if (!sent_[i] && unmet_[i] == 0) send(static_cast<int>(i));
    }
  };
  const double launch = transport_.library.launch_s;
  if (launch <= 0) return all();
  later(launch, all);
}

void PlanRunner::try_send(int rank) {
  if (!entered_[rank]) return;
  for (int message : outgoing_[rank]) {
    if (!sent_[message] && unmet_[message] == 0) send(message);
  }
}

const TransportCosts& PlanRunner::costs(int message) const {
  const auto& msg = plan_->messages[message];
  return transport_.library.between(hosts_[msg.src], hosts_[msg.dst]);
}

void PlanRunner::send(int message) {
  sent_[message] = true;
  // Its content is fixed now, when its dependencies are in: what lands at its sender while a
  // hold or the library's latency passes belongs to other messages.
  if (hooks_.sending) hooks_.sending(message);
  const double hold = (plan_->hold_s.empty() ? 0 : plan_->hold_s[message]) + costs(message).message_s;
  if (hold <= 0) return transmit(message);
  later(hold, [this, message] { transmit(message); });
}

void PlanRunner::transmit(int message) {
  const auto& msg = plan_->messages[message];
  Message wire{next_message_id_++, hosts_[msg.src], hosts_[msg.dst], msg.bytes};
  wire.datagrams = transport_.datagrams;
  wire.element_bytes = transport_.element_bytes;
  wire.rate_limit = costs(message).rate;
  network_.send(wire, [this, message](const Delivery& d) { arrive(message, d); });
}

void PlanRunner::arrive(int message, const Delivery& delivery) {
  const double handover = costs(message).message_s;
  if (handover <= 0) return handed_over(message, delivery);
  later(handover, [this, message, delivery] { handed_over(message, delivery); });
}

void PlanRunner::handed_over(int message, const Delivery& delivery) {
  ++delivered_;
  if (hooks_.delivered) hooks_.delivered(message, delivery);
  // Only the dependents this arrival completes can leave now, and they leave in plan order
  // (dependents_ is ascending): what scanning the receiver's outgoing messages would send,
  // without that scan's 2(p - 1) checks per arrival on a ring.
  for (int next : dependents_[message]) {
    if (--unmet_[next] == 0 && entered_[plan_->messages[next].src] && !sent_[next]) send(next);
  }
  if (hooks_.settled) hooks_.settled(plan_->messages[message].dst);
}

double simulate_plan(EventClock& clock, Network& network, const CollectivePlan& plan, const std::vector<int>& hosts,
                     const LibraryCosts& library) {
  const double start = clock.now();
  double last = start;
  uint64_t next_id = 0;
  PlanRunner::Hooks hooks;
  // With library costs a message counts once handed over, after its last byte (t_recv).
  hooks.delivered = [&last, &clock, &library](int, const Delivery& d) {
    last = std::max(last, library.any() ? clock.now() : d.t_recv);
  };
  hooks.later = [&clock](double seconds, std::function<void()> then) { clock.schedule(seconds, std::move(then)); };
  MessageTransport transport;
  transport.library = library;
  PlanRunner runner(std::make_shared<const CollectivePlan>(plan), hosts, network, next_id, transport, std::move(hooks));
  clock.schedule(0, [&] { runner.enter_all(); });
  clock.run();
  if (!runner.all_delivered())
    throw std::runtime_error("simulate_plan: the clock stopped before every message arrived");
  return last - start;
}

}  // namespace testbed
