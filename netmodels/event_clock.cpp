// EventClock: the run's single clock, over ns-3's Simulator singleton with the testbed's own
// event loop (lagging_simulator.h), so that memoization can hold the network's clock.
#include "netmodels/event_clock.h"

#include <ns3/core-module.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "netmodels/lagging_simulator.h"

namespace testbed {

EventClock::EventClock() {
  // The implementation is created on first use: name ours (a previous run may have left a
  // realtime one selected; the testbed always steps simulated time as fast as it can).
  ns3::GlobalValue::Bind("SimulatorImplementationType", ns3::StringValue(LaggingSimulatorImpl::GetTypeId().GetName()));
  impl_ = ns3::PeekPointer(ns3::DynamicCast<LaggingSimulatorImpl>(ns3::Simulator::GetImplementation()));
  if (!impl_) {
    throw std::logic_error(
        "EventClock: ns-3's simulator was used before the clock was made (call Simulator::Destroy first)");
  }
}

EventClock::~EventClock() { ns3::Simulator::Destroy(); }

double EventClock::now() const { return seconds(impl_->engine_now()); }

void EventClock::schedule(double delay_s, std::function<void()> event) {
  if (!(delay_s >= 0)) throw std::invalid_argument("EventClock::schedule: negative delay");
  impl_->schedule_engine(ticks(delay_s), std::move(event));
}

int64_t EventClock::now_ticks() const { return impl_->engine_now(); }

int64_t EventClock::ticks(double seconds) { return ns3::Seconds(seconds).GetTimeStep(); }

double EventClock::seconds(int64_t ticks) { return ns3::TimeStep(ticks).GetSeconds(); }

void EventClock::schedule_ticks(int64_t delay_ticks, std::function<void()> event) {
  if (delay_ticks < 0) throw std::invalid_argument("EventClock::schedule_ticks: negative delay");
  impl_->schedule_engine(delay_ticks, std::move(event));
}

void EventClock::run(const std::atomic<bool>* interrupted) {
  auto run_all = [this] {
    // Through Simulator::Run, which first stops ns-3 tracking every Time made (a set insert
    // and erase per Time, as long as resolution may still change) before running ours.
    ns3::Simulator::Run();
    // The engine is done (not stopped); a held network still finishes what it carries (its
    // last ACKs), as a live one would have.
    if (!impl_->stopped() && impl_->engine_idle() && impl_->network_held()) {
      impl_->resume_network(true);
      ns3::Simulator::Run();
    }
  };
  if (!interrupted) return run_all();
  std::atomic<bool> over{false};
  std::thread watcher([this, interrupted, &over] {
    while (!over.load()) {
      if (interrupted->load()) {
        impl_->request_stop();  // thread-safe: the loop stops after the event in progress
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  try {
    run_all();
  } catch (...) {
    over = true;
    watcher.join();
    throw;
  }
  over = true;
  watcher.join();
}

void EventClock::stop() { impl_->Stop(); }

void EventClock::hold_network() { impl_->hold_network(); }

bool EventClock::network_held() const { return impl_->network_held(); }

void EventClock::resume_network() { impl_->resume_network(); }

void EventClock::shift_network(int64_t ticks) { impl_->shift_network(ticks); }

int64_t EventClock::network_lag_ticks() const { return impl_->network_lag(); }

}  // namespace testbed
