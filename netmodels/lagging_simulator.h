// ns-3's event loop with two kinds of events: the engine's, on the run's clock, and the
// network's, on a clock that may stand still (held) and then run on behind the engine's (lag).
#pragma once

#include <ns3/simulator-impl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

namespace testbed {

// Events run in (engine tick, tick it was scheduled at, uid) order, one uid sequence for both
// kinds. Uids grow with the time they were scheduled at, so while the network is never held this
// is ns-3's own (tick, uid) order. A network event at network time t is due at engine tick
// t + lag. The scheduling tick keeps the order when the network catches up: what a held event
// schedules as it runs late still comes before an engine event scheduled later than it would
// have run (two events scheduled at one tick, one of them late, are still ordered by uid).
//
// Holding the network (memoization, docs/network.md) stops its clock: its events wait and its
// Now() stands still, while the engine's events go on. Resuming it first runs, at once, the
// events it would have run by now, in their order: exact, as long as nothing crossed between
// the two kinds in between (its owner resumes it before any send, and holds it only with no
// delivery due). Shifting a held network adds to its lag: its held world now stands for the
// same world that much later.
//
// Everything ns-3 schedules is a network event; only the EventClock schedules engine events.
class LaggingSimulatorImpl final : public ns3::SimulatorImpl {
 public:
  static ns3::TypeId GetTypeId();
  LaggingSimulatorImpl();
  ~LaggingSimulatorImpl() override;

  void schedule_engine(int64_t delay_ticks, std::function<void()> event);
  int64_t engine_now() const { return engine_now_; }
  bool engine_idle() const { return engine_.empty(); }

  void hold_network();
  bool network_held() const { return held_; }
  // From an event: runs what is due (engine tick up to now, in order), then lets it run live.
  // `after_engine`: the engine is done, so a held world that stands for a later time than the
  // last engine event simply goes on from there.
  void resume_network(bool after_engine = false);
  // Whether the last Run() ended on stop(), not for want of events.
  bool stopped() const { return stopped_; }
  // Only while held: the held world stands for the world `ticks` later (ticks >= 0).
  void shift_network(int64_t ticks);
  int64_t network_lag() const { return lag_; }
  // Thread-safe: stop after the event in progress.
  void request_stop() { stop_requested_ = true; }

  // ns3::SimulatorImpl
  void Destroy() override;
  bool IsFinished() const override;
  void Stop() override;
  void Stop(const ns3::Time& delay) override;
  ns3::EventId Schedule(const ns3::Time& delay, ns3::EventImpl* event) override;
  void ScheduleWithContext(uint32_t context, const ns3::Time& delay, ns3::EventImpl* event) override;
  ns3::EventId ScheduleNow(ns3::EventImpl* event) override;
  ns3::EventId ScheduleDestroy(ns3::EventImpl* event) override;
  void Remove(const ns3::EventId& id) override;
  void Cancel(const ns3::EventId& id) override;
  bool IsExpired(const ns3::EventId& id) const override;
  void Run() override;
  ns3::Time Now() const override;
  ns3::Time GetDelayLeft(const ns3::EventId& id) const override;
  ns3::Time GetMaximumSimulationTime() const override;
  void SetScheduler(ns3::ObjectFactory schedulerFactory) override;
  uint32_t GetSystemId() const override { return 0; }
  uint32_t GetContext() const override { return context_; }
  uint64_t GetEventCount() const override { return event_count_; }

 private:
  void DoDispose() override;

  struct NetworkEvent {
    uint64_t ts, sched, uid;  // network time: due, and when it was scheduled
    uint32_t context;
    ns3::EventImpl* impl;
  };
  struct EngineEvent {
    int64_t tick, sched;
    uint64_t uid;
    uint32_t context;
    size_t slot;  // into engine_functions_
  };
  // An event's place in the one order, in engine ticks.
  struct Key {
    int64_t due, sched;
    uint64_t uid;
    bool operator<(const Key& o) const {
      if (due != o.due) return due < o.due;
      return sched != o.sched ? sched < o.sched : uid < o.uid;
    }
  };
  // A network event's place among network events: in network time (one lag shifts them all).
  static Key network_key(const NetworkEvent& e) {
    return {static_cast<int64_t>(e.ts), static_cast<int64_t>(e.sched), e.uid};
  }
  Key key_of(const NetworkEvent& e) const {
    Key k = network_key(e);
    k.due += lag_;
    k.sched += lag_;
    return k;
  }
  static Key key_of(const EngineEvent& e) { return {e.tick, e.sched, e.uid}; }
  // Min-heaps: std::push_heap keeps the largest first, so these compare "later than".
  struct NetworkLater {
    bool operator()(const NetworkEvent& a, const NetworkEvent& b) const { return network_key(b) < network_key(a); }
  };
  struct EngineLater {
    bool operator()(const EngineEvent& a, const EngineEvent& b) const { return key_of(b) < key_of(a); }
  };
  // ns-3's IsExpired compares with the last network event run (network events run in uid order
  // among themselves); at a later network time, nothing of that time has run yet.
  void follow_network_time(uint64_t ts);

  void insert_network(uint64_t ts, uint32_t context, ns3::EventImpl* impl, uint64_t uid);
  void take_cross_thread_events();
  // Whether the network's next event comes before the engine's (both present, network live).
  bool network_first() const;
  void run_network_event();
  void run_engine_event();

  std::vector<NetworkEvent> network_;
  std::vector<EngineEvent> engine_;
  std::vector<std::function<void()>> engine_functions_;
  std::vector<size_t> free_slots_;
  std::unordered_set<uint64_t> removed_;  // uids of network events Remove()d, still in the heap

  uint64_t uid_;
  uint64_t current_ts_ = 0;                              // the network's time (ns-3's Now())
  uint64_t current_uid_;                                 // what ns-3's IsExpired compares with
  uint64_t last_network_ts_ = 0, last_network_uid_ = 0;  // the last network event run
  Key running_{0, 0, 0};                                 // the event in progress, of either kind
  uint32_t context_;
  int64_t engine_now_ = 0;
  int64_t lag_ = 0;
  bool held_ = false;
  bool stop_ = false;
  bool stopped_ = false;
  std::atomic<bool> stop_requested_{false};
  uint64_t event_count_ = 0;
  std::list<ns3::EventId> destroy_events_;

  // ScheduleWithContext from another thread (ns-3's one thread-safe way in).
  struct CrossThread {
    uint32_t context;
    uint64_t delay;
    ns3::EventImpl* impl;
  };
  std::mutex cross_thread_mutex_;
  std::vector<CrossThread> cross_thread_;
  std::atomic<bool> cross_thread_pending_{false};
  std::thread::id main_thread_;
};

}  // namespace testbed
