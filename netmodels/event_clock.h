// The run's single clock: ns-3's discrete-event Simulator behind a narrow interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace testbed {

class LaggingSimulatorImpl;

// ns-3's Simulator is a process-wide singleton, so at most one EventClock may
// exist at a time. Networks must be destroyed before the clock that drives them.
class EventClock {
 public:
  EventClock();
  ~EventClock();  // Simulator::Destroy
  EventClock(const EventClock&) = delete;
  EventClock& operator=(const EventClock&) = delete;

  double now() const;  // simulated seconds
  // ns-3's integer time (nanosecond ticks): exact, so memoization compares times with it.
  int64_t now_ticks() const;
  static int64_t ticks(double seconds);  // what schedule(seconds) adds to now_ticks()
  static double seconds(int64_t ticks);  // a tick count in seconds, as now() reads it
  void schedule_ticks(int64_t delay_ticks, std::function<void()> event);
  void schedule(double delay_s, std::function<void()> event);
  // Until no events remain or stop() is called; or, when `interrupted` is given, until it turns
  // true (a signal handler's flag): a watcher thread checks it every 20 ms of host time and
  // stops the clock after the event in progress, however many events a step holds.
  void run(const std::atomic<bool>* interrupted = nullptr);
  void stop();  // from inside an event: return from run() after it

  // The network's clock (ns-3's own events), for memoization (netmodels/lagging_simulator.h):
  // held, it stands still while the engine goes on; resumed, it first runs what it would have
  // run by now; shifted while held, its world stands for the same world `ticks` later. The
  // network's ns-3 time is the engine's minus the lag (network_lag_ticks).
  void hold_network();
  bool network_held() const;
  void resume_network();
  void shift_network(int64_t ticks);
  int64_t network_lag_ticks() const;

 private:
  LaggingSimulatorImpl* impl_;  // owned by ns-3's Simulator until Destroy
};

}  // namespace testbed
