// LaggingSimulatorImpl: ns-3's event loop with a network clock that can be held and shifted.
#include "netmodels/lagging_simulator.h"

#include <ns3/event-impl.h>
#include <ns3/simulator.h>

#include <algorithm>
#include <stdexcept>

namespace testbed {

NS_OBJECT_ENSURE_REGISTERED(LaggingSimulatorImpl);

ns3::TypeId LaggingSimulatorImpl::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("testbed::LaggingSimulatorImpl")
                               .SetParent<ns3::SimulatorImpl>()
                               .SetGroupName("Testbed")
                               .AddConstructor<LaggingSimulatorImpl>();
  return tid;
}

LaggingSimulatorImpl::LaggingSimulatorImpl()
    : uid_(ns3::EventId::UID::VALID),
      current_uid_(ns3::EventId::UID::INVALID),
      context_(ns3::Simulator::NO_CONTEXT),
      main_thread_(std::this_thread::get_id()) {}

LaggingSimulatorImpl::~LaggingSimulatorImpl() = default;

void LaggingSimulatorImpl::DoDispose() {
  {  // never run now: released, not refused (a throw here would end the process)
    std::lock_guard<std::mutex> lock(cross_thread_mutex_);
    for (const CrossThread& e : cross_thread_) e.impl->Unref();
    cross_thread_.clear();
  }
  for (const NetworkEvent& e : network_) e.impl->Unref();
  network_.clear();
  engine_.clear();
  engine_functions_.clear();
  ns3::SimulatorImpl::DoDispose();
}

void LaggingSimulatorImpl::Destroy() {
  while (!destroy_events_.empty()) {
    ns3::Ptr<ns3::EventImpl> event = destroy_events_.front().PeekEventImpl();
    destroy_events_.pop_front();
    if (!event->IsCancelled()) event->Invoke();
  }
}

void LaggingSimulatorImpl::SetScheduler(ns3::ObjectFactory schedulerFactory) {
  // Its own heaps order events: by (time, time scheduled at, uid), which is ns-3's (time, uid)
  // order while nothing is held.
  (void)schedulerFactory;
}

void LaggingSimulatorImpl::insert_network(uint64_t ts, uint32_t context, ns3::EventImpl* impl, uint64_t uid) {
  network_.push_back({ts, current_ts_, uid, context, impl});
  std::push_heap(network_.begin(), network_.end(), NetworkLater{});
}

void LaggingSimulatorImpl::schedule_engine(int64_t delay_ticks, std::function<void()> event) {
  if (delay_ticks < 0) throw std::invalid_argument("LaggingSimulatorImpl: negative delay");
  size_t slot;
  if (free_slots_.empty()) {
    slot = engine_functions_.size();
    engine_functions_.push_back(std::move(event));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    engine_functions_[slot] = std::move(event);
  }
  engine_.push_back({engine_now_ + delay_ticks, engine_now_, uid_++, context_, slot});
  std::push_heap(engine_.begin(), engine_.end(), EngineLater{});
}

ns3::EventId LaggingSimulatorImpl::Schedule(const ns3::Time& delay, ns3::EventImpl* event) {
  if (held_) throw std::logic_error("LaggingSimulatorImpl: a network event scheduled while the network is held");
  if (delay.IsStrictlyNegative()) throw std::logic_error("LaggingSimulatorImpl: negative delay");
  const uint64_t ts = current_ts_ + static_cast<uint64_t>(delay.GetTimeStep());
  const uint64_t uid = uid_++;
  insert_network(ts, context_, event, uid);
  return ns3::EventId(event, ts, context_, uid);
}

void LaggingSimulatorImpl::ScheduleWithContext(uint32_t context, const ns3::Time& delay, ns3::EventImpl* event) {
  if (std::this_thread::get_id() == main_thread_) {
    if (held_) throw std::logic_error("LaggingSimulatorImpl: a network event scheduled while the network is held");
    insert_network(current_ts_ + static_cast<uint64_t>(delay.GetTimeStep()), context, event, uid_++);
    return;
  }
  std::lock_guard<std::mutex> lock(cross_thread_mutex_);
  cross_thread_.push_back({context, static_cast<uint64_t>(delay.GetTimeStep()), event});
  cross_thread_pending_ = true;
}

void LaggingSimulatorImpl::take_cross_thread_events() {
  if (!cross_thread_pending_) return;
  std::vector<CrossThread> events;
  {
    std::lock_guard<std::mutex> lock(cross_thread_mutex_);
    events.swap(cross_thread_);
    cross_thread_pending_ = false;
  }
  // As from the main thread: a held world has no "now" for another thread's event to count from.
  if (held_ && !events.empty()) {
    for (const CrossThread& e : events) e.impl->Unref();
    throw std::logic_error(
        "LaggingSimulatorImpl: a network event scheduled from another thread while the network is held");
  }
  for (const CrossThread& e : events) insert_network(current_ts_ + e.delay, e.context, e.impl, uid_++);
}

ns3::EventId LaggingSimulatorImpl::ScheduleNow(ns3::EventImpl* event) { return Schedule(ns3::Time(0), event); }

ns3::EventId LaggingSimulatorImpl::ScheduleDestroy(ns3::EventImpl* event) {
  ns3::EventId id(ns3::Ptr<ns3::EventImpl>(event, false), current_ts_, 0xffffffff, ns3::EventId::UID::DESTROY);
  destroy_events_.push_back(id);
  ++uid_;
  return id;
}

ns3::Time LaggingSimulatorImpl::Now() const { return ns3::TimeStep(static_cast<int64_t>(current_ts_)); }

ns3::Time LaggingSimulatorImpl::GetDelayLeft(const ns3::EventId& id) const {
  if (IsExpired(id)) return ns3::TimeStep(0);
  return ns3::TimeStep(static_cast<int64_t>(id.GetTs() - current_ts_));
}

void LaggingSimulatorImpl::Remove(const ns3::EventId& id) {
  if (id.GetUid() == ns3::EventId::UID::DESTROY) {
    for (auto it = destroy_events_.begin(); it != destroy_events_.end(); ++it) {
      if (*it == id) {
        destroy_events_.erase(it);
        break;
      }
    }
    return;
  }
  if (IsExpired(id)) return;
  // Left in the heap and skipped there: it no longer moves time, like an event ns-3 removed.
  id.PeekEventImpl()->Cancel();
  removed_.insert(id.GetUid());
}

void LaggingSimulatorImpl::Cancel(const ns3::EventId& id) {
  if (!IsExpired(id)) id.PeekEventImpl()->Cancel();
}

bool LaggingSimulatorImpl::IsExpired(const ns3::EventId& id) const {
  if (id.GetUid() == ns3::EventId::UID::DESTROY) {
    if (id.PeekEventImpl() == nullptr || id.PeekEventImpl()->IsCancelled()) return true;
    return std::find(destroy_events_.begin(), destroy_events_.end(), id) == destroy_events_.end();
  }
  return id.PeekEventImpl() == nullptr || id.GetTs() < current_ts_ ||
         (id.GetTs() == current_ts_ && id.GetUid() <= current_uid_) || id.PeekEventImpl()->IsCancelled();
}

ns3::Time LaggingSimulatorImpl::GetMaximumSimulationTime() const { return ns3::TimeStep(0x7fffffffffffffffLL); }

bool LaggingSimulatorImpl::IsFinished() const { return stop_ || (engine_.empty() && (held_ || network_.empty())); }

void LaggingSimulatorImpl::Stop() { stop_ = true; }

void LaggingSimulatorImpl::Stop(const ns3::Time& delay) {
  schedule_engine(delay.GetTimeStep(), [this] { stop_ = true; });
}

bool LaggingSimulatorImpl::network_first() const { return key_of(network_.front()) < key_of(engine_.front()); }

void LaggingSimulatorImpl::follow_network_time(uint64_t ts) {
  current_ts_ = ts;
  current_uid_ = ts == last_network_ts_ ? last_network_uid_ : static_cast<uint64_t>(ns3::EventId::UID::INVALID);
}

void LaggingSimulatorImpl::run_network_event() {
  std::pop_heap(network_.begin(), network_.end(), NetworkLater{});
  const NetworkEvent e = network_.back();
  network_.pop_back();
  if (!removed_.empty() && removed_.erase(e.uid)) {
    e.impl->Unref();
    return;
  }
  ++event_count_;
  current_ts_ = e.ts;
  current_uid_ = e.uid;
  last_network_ts_ = e.ts;
  last_network_uid_ = e.uid;
  running_ = key_of(e);
  context_ = e.context;
  engine_now_ = static_cast<int64_t>(e.ts) + lag_;
  e.impl->Invoke();
  e.impl->Unref();
}

void LaggingSimulatorImpl::run_engine_event() {
  std::pop_heap(engine_.begin(), engine_.end(), EngineLater{});
  const EngineEvent e = engine_.back();
  engine_.pop_back();
  ++event_count_;
  engine_now_ = e.tick;
  running_ = key_of(e);
  // The network's clock follows the engine's, unless held.
  if (!held_) follow_network_time(static_cast<uint64_t>(e.tick - lag_));
  context_ = e.context;
  std::function<void()> event = std::move(engine_functions_[e.slot]);
  engine_functions_[e.slot] = nullptr;
  free_slots_.push_back(e.slot);
  event();
}

void LaggingSimulatorImpl::Run() {
  main_thread_ = std::this_thread::get_id();
  stop_ = false;
  while (!stop_ && !stop_requested_) {
    take_cross_thread_events();
    const bool network = !held_ && !network_.empty();
    if (network && (engine_.empty() || network_first())) {
      run_network_event();
    } else if (!engine_.empty()) {
      run_engine_event();
    } else {
      break;
    }
  }
  // One atomic read-and-clear: a request landing after it stays pending for the next Run (the
  // drain of a held network, where there is one) instead of being lost between a read and a reset.
  stopped_ = stop_requested_.exchange(false) || stop_;
}

void LaggingSimulatorImpl::hold_network() { held_ = true; }

void LaggingSimulatorImpl::resume_network(bool after_engine) {
  if (!held_) return;
  if (after_engine) engine_now_ = std::max(engine_now_, static_cast<int64_t>(current_ts_) + lag_);
  if (engine_now_ - lag_ < static_cast<int64_t>(current_ts_))
    throw std::logic_error("LaggingSimulatorImpl: the network resumed before the time its held world stands for");
  held_ = false;
  // Called from an engine event: what would have come before it in one queue runs now, in order.
  const int64_t now = engine_now_;
  const Key running = running_;
  const uint32_t context = context_;
  while (!network_.empty() && key_of(network_.front()) < running) run_network_event();
  engine_now_ = now;
  running_ = running;
  follow_network_time(static_cast<uint64_t>(now - lag_));
  context_ = context;
}

void LaggingSimulatorImpl::shift_network(int64_t ticks) {
  if (!held_) throw std::logic_error("LaggingSimulatorImpl: shifting a network that is not held");
  if (ticks < 0) throw std::logic_error("LaggingSimulatorImpl: a held network cannot go back in time");
  lag_ += ticks;
}

}  // namespace testbed
