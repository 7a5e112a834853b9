// EventClock: the run's single clock, a thin wrapper over ns-3's Simulator singleton.
#include "netmodels/event_clock.h"

#include <ns3/core-module.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace testbed {

EventClock::EventClock() {
  // A previous run may have left a realtime implementation selected; the
  // testbed always steps simulated time as fast as it can.
  ns3::GlobalValue::Bind("SimulatorImplementationType",
                         ns3::StringValue("ns3::DefaultSimulatorImpl"));
}

EventClock::~EventClock() { ns3::Simulator::Destroy(); }

double EventClock::now() const { return ns3::Simulator::Now().GetSeconds(); }

void EventClock::schedule(double delay_s, std::function<void()> event) {
  // ns-3 only asserts on a negative delay, and not in release builds.
  if (!(delay_s >= 0)) throw std::invalid_argument("EventClock::schedule: negative delay");
  ns3::Simulator::Schedule(ns3::Seconds(delay_s), [event = std::move(event)]() { event(); });
}

int64_t EventClock::now_ticks() const { return ns3::Simulator::Now().GetTimeStep(); }

int64_t EventClock::ticks(double seconds) { return ns3::Seconds(seconds).GetTimeStep(); }

double EventClock::seconds(int64_t ticks) { return ns3::TimeStep(ticks).GetSeconds(); }

void EventClock::schedule_ticks(int64_t delay_ticks, std::function<void()> event) {
  if (delay_ticks < 0) throw std::invalid_argument("EventClock::schedule_ticks: negative delay");
  ns3::Simulator::Schedule(ns3::TimeStep(delay_ticks), [event = std::move(event)]() { event(); });
}

void EventClock::run(const std::atomic<bool>* interrupted) {
  if (!interrupted) return ns3::Simulator::Run();
  std::atomic<bool> over{false};
  std::thread watcher([interrupted, &over] {
    while (!over.load()) {
      if (interrupted->load()) {
        // ns-3's one thread-safe way in from another thread: the event runs on the clock's
        // thread after the event in progress, and stops it there.
        ns3::Simulator::ScheduleWithContext(ns3::Simulator::NO_CONTEXT, ns3::Time(0), [] { ns3::Simulator::Stop(); });
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  try {
    ns3::Simulator::Run();
  } catch (...) {
    over = true;
    watcher.join();
    throw;
  }
  over = true;
  watcher.join();
}

void EventClock::stop() { ns3::Simulator::Stop(); }

}  // namespace testbed
