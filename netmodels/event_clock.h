// The run's single clock: ns-3's discrete-event Simulator behind a narrow interface.
#pragma once

#include <functional>

namespace testbed {

// ns-3's Simulator is a process-wide singleton, so at most one EventClock may
// exist at a time. Networks must be destroyed before the clock that drives them.
class EventClock {
 public:
  EventClock();
  ~EventClock();  // Simulator::Destroy
  EventClock(const EventClock&) = delete;
  EventClock& operator=(const EventClock&) = delete;

  double now() const;  // simulated seconds
  void schedule(double delay_s, std::function<void()> event);
  void run();                    // until no events remain or stop() is called
  void stop();                   // from inside an event: return from run() after it
};

}  // namespace testbed
