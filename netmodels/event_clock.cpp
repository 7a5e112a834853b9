// EventClock: the run's single clock, over ns-3's Simulator singleton with the testbed's own
// event loop (lagging_simulator.h), so that memoization can hold the network's clock.
#include "netmodels/event_clock.h"

#include <ns3/core-module.h>

#include <chrono>
#include <cmath>
#include <cstdint>
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

// ns3::Seconds(seconds).GetTimeStep(), bit for bit, without its slow step: ns-3 turns the double
// into 64.64 fixed point through long double (int64x64_t(long double): the whole part converted
// to a 128-bit integer, the fraction times 2^64 plus 0.5, truncated), a software conversion that
// cost ~10 % of a 1024-GPU projection. The same fixed-point value comes from the double's bits
// here (exact); ns-3 then scales it to nanoseconds and rounds as before (Time::From). Times of
// 2^63 s or more, NaN and infinities take ns-3's own path.
int64_t EventClock::ticks(double seconds) {
  const double v = std::fabs(seconds);
  if (!(v < 9.2e18)) return ns3::Seconds(seconds).GetTimeStep();
  const double whole = std::trunc(v);
  const double fraction = v - whole;  // exact: the bits below the binary point
  // fraction * 2^64 + 0.5, truncated, as the long double arithmetic gives it: fraction = m 2^e
  // with m < 2^53; at e + 64 >= 0 the product is an integer (and + 0.5 rounds back to it, to
  // even, where it is 2^63 or more), below that it is m / 2^k, rounded half up.
  uint64_t low = 0;
  if (fraction > 0) {
    int e = 0;
    const double mantissa = std::frexp(fraction, &e);  // fraction = mantissa 2^e, mantissa in [0.5, 1)
    const auto m = static_cast<uint64_t>(std::ldexp(mantissa, 53));
    const int shift = e - 53 + 64;  // fraction 2^64 = m 2^shift
    if (shift >= 0) {
      low = m << shift;
    } else if (shift > -64) {
      const int k = -shift;
      low = (m >> k) + ((m >> (k - 1)) & 1);  // floor(m / 2^k + 1/2)
    }
  }
  ns3::int64x64_t fixed(static_cast<int64_t>(whole), low);
  if (seconds < 0) fixed = -fixed;
  return ns3::Time::From(fixed, ns3::Time::S).GetTimeStep();
}

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
