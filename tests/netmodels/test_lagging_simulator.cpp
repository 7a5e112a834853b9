// The run's event loop (netmodels/lagging_simulator.h): engine and network events in one
// (tick, uid) order; a held network's events wait, run at once on resume, and run later by
// the lag once shifted. Expected ticks are worked by hand from the schedules below.
#include <gtest/gtest.h>

#include <ns3/simulator.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "netmodels/event_clock.h"

namespace testbed {
namespace lagging_simulator {  // its own names: network_tests compiles as one unity file
namespace {

constexpr int64_t kMs = 1'000'000;  // ticks

struct Seen {
  std::string what;
  int64_t engine, network;  // the clock's ticks and ns-3's Now() when it ran
};

// Network events (scheduled through ns-3) at 10 and 20 ms; engine events as each test says.
void schedule_network(EventClock& clock, std::vector<Seen>& seen) {
  for (int ms : {10, 20}) {
    ns3::Simulator::Schedule(ns3::MilliSeconds(ms), [&clock, &seen, ms] {
      seen.push_back({"net" + std::to_string(ms), clock.now_ticks(), ns3::Simulator::Now().GetTimeStep()});
    });
  }
}

TEST(LaggingSimulator, EngineAndNetworkEventsRunInScheduleOrderWithinATick) {
  EventClock clock;
  std::vector<std::string> order;
  clock.schedule_ticks(10 * kMs, [&] { order.push_back("engine-a"); });
  ns3::Simulator::Schedule(ns3::MilliSeconds(10), [&] { order.push_back("net"); });
  clock.schedule_ticks(10 * kMs, [&] { order.push_back("engine-b"); });
  clock.run();
  EXPECT_EQ(order, (std::vector<std::string>{"engine-a", "net", "engine-b"}));
}

// Held at 5 ms, resumed by an engine event at 15 ms: the 10 ms event runs inside the resume
// (the engine at 15 ms, ns-3 at 10), the 20 ms one at 20 ms as if never held.
TEST(LaggingSimulator, AResumedNetworkCatchesUpInOrder) {
  EventClock clock;
  std::vector<Seen> seen;
  schedule_network(clock, seen);
  clock.schedule_ticks(5 * kMs, [&] { clock.hold_network(); });
  clock.schedule_ticks(12 * kMs, [&] { seen.push_back({"engine12", clock.now_ticks(), -1}); });
  clock.schedule_ticks(15 * kMs, [&] {
    EXPECT_TRUE(clock.network_held());
    clock.resume_network();
    seen.push_back({"resumed", clock.now_ticks(), ns3::Simulator::Now().GetTimeStep()});
  });
  clock.run();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].what, "engine12");
  EXPECT_EQ(seen[1].what, "net10");
  EXPECT_EQ(seen[1].network, 10 * kMs);
  EXPECT_EQ(seen[2].what, "resumed");
  EXPECT_EQ(seen[2].engine, 15 * kMs);
  EXPECT_EQ(seen[2].network, 15 * kMs);
  EXPECT_EQ(seen[3].what, "net20");
  EXPECT_EQ(seen[3].engine, 20 * kMs);
  EXPECT_EQ(seen[3].network, 20 * kMs);
}

// Held at 5 ms and shifted by 7 ms: the held world now stands for the world 7 ms later, so its
// events come 7 ms late on the engine's clock (17 and 27 ms) at unchanged ns-3 times. Resumed at
// 15 ms, nothing is due yet. Slip caught: a resume that ignores the lag (both would run at 15).
TEST(LaggingSimulator, AShiftedNetworkRunsLaterByItsLag) {
  EventClock clock;
  std::vector<Seen> seen;
  schedule_network(clock, seen);
  clock.schedule_ticks(5 * kMs, [&] {
    clock.hold_network();
    clock.shift_network(7 * kMs);
  });
  clock.schedule_ticks(15 * kMs, [&] {
    clock.resume_network();
    EXPECT_EQ(ns3::Simulator::Now().GetTimeStep(), 8 * kMs);  // the engine's 15 ms less the lag
  });
  clock.run();
  EXPECT_EQ(clock.network_lag_ticks(), 7 * kMs);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].engine, 17 * kMs);
  EXPECT_EQ(seen[0].network, 10 * kMs);
  EXPECT_EQ(seen[1].engine, 27 * kMs);
  EXPECT_EQ(seen[1].network, 20 * kMs);
}

// A held network event runs late, inside the resume, and what it schedules gets a later uid than
// an engine event scheduled meanwhile; it still comes first where it was scheduled earlier. The
// network event at 10 ms schedules another for 20 ms; an engine event at 15 ms schedules one for
// 20 ms too, which resumes the network: never held, the network's 20 ms event (scheduled at
// 10 ms) runs before the engine's (scheduled at 15 ms), and so it does held. Slip caught:
// ordering a tick's events by uid alone (the engine's would come first).
TEST(LaggingSimulator, WhatAHeldEventSchedulesKeepsItsPlaceAmongTheEngines) {
  for (bool hold : {false, true}) {
    EventClock clock;
    std::vector<std::string> order;
    ns3::Simulator::Schedule(ns3::MilliSeconds(10), [&] {
      ns3::Simulator::Schedule(ns3::MilliSeconds(10), [&] { order.push_back("net20"); });
    });
    if (hold) clock.schedule_ticks(5 * kMs, [&] { clock.hold_network(); });
    clock.schedule_ticks(15 * kMs, [&] {
      clock.schedule_ticks(5 * kMs, [&] {
        clock.resume_network();
        order.push_back("engine20");
      });
    });
    clock.run();
    EXPECT_EQ(order, (std::vector<std::string>{"net20", "engine20"})) << (hold ? "held" : "never held");
  }
}

// A network still held when the engine has nothing left finishes what it carries, as a live
// one would; a network event scheduled while held is a bug in its owner.
TEST(LaggingSimulator, AHeldNetworkFinishesAfterTheEngineAndRefusesNewEvents) {
  EventClock clock;
  std::vector<Seen> seen;
  schedule_network(clock, seen);
  clock.schedule_ticks(1 * kMs, [&] {
    clock.hold_network();
    EXPECT_THROW(ns3::Simulator::Schedule(ns3::MilliSeconds(1), [] {}), std::logic_error);
  });
  clock.run();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].engine, 20 * kMs);
  EXPECT_EQ(clock.now_ticks(), 20 * kMs);
}

// ns-3's one thread-safe way in, ScheduleWithContext from another thread, counts its delay from
// the network's now, which a held world does not have: refused like a main-thread event, not
// slipped into the held world. Slip caught: inserting it at the held clock (it would run at
// ns-3's 1 ms + 1 ms, though the engine is at 3 ms).
TEST(LaggingSimulator, AHeldNetworkRefusesAnotherThreadsEvent) {
  EventClock clock;
  bool ran = false;
  clock.schedule_ticks(1 * kMs, [&] { clock.hold_network(); });
  clock.schedule_ticks(2 * kMs, [&] {
    std::thread other([&] { ns3::Simulator::ScheduleWithContext(0, ns3::MilliSeconds(1), [&] { ran = true; }); });
    other.join();
  });
  clock.schedule_ticks(3 * kMs, [] {});
  EXPECT_THROW(clock.run(), std::logic_error);
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace lagging_simulator
}  // namespace testbed

namespace testbed {
namespace {

// EventClock::ticks is ns3::Seconds(s).GetTimeStep() without ns-3's long double conversion.
// By hand: 2^-10 s is 976 562.5 ns exactly, which ns-3 rounds half away from zero (976 563, and
// -976 563); 0.5 s is 5e8 ticks. Then against ns-3 itself over doubles of every magnitude from
// 2^-80 to 2^40 s, both signs, and the fractions that meet its rounding's corners (at or above
// one half, where + 0.5 rounds to even in long double; below 2^-11, where the fraction times
// 2^64 has bits under the binary point). Slips caught: rounding the fraction's tail down
// instead of half up, the fraction's bits shifted by one, a negative time's whole part taken
// toward minus infinity.
TEST(EventClock, TicksEqualNs3sSecondsBitForBit) {
  EXPECT_EQ(EventClock::ticks(1.0 / 1024), 976563);
  EXPECT_EQ(EventClock::ticks(-1.0 / 1024), -976563);
  EXPECT_EQ(EventClock::ticks(0.5), 500000000);
  EXPECT_EQ(EventClock::ticks(0.0), 0);
  std::mt19937_64 random(7);
  std::vector<double> values = {1e-9,
                                1.5e-9,
                                2.5e-9,
                                0.5 + 1e-12,
                                0.9999999999999999,
                                1.0 - 1e-17,
                                std::ldexp(1.0, -64),
                                std::ldexp(1.0, -65),
                                std::ldexp(3.0, -66),
                                123.456789,
                                0.1,
                                0.2,
                                0.3,
                                86400.0 + 1e-10,
                                std::nextafter(0.5, 0.0),
                                std::nextafter(0.5, 1.0)};
  for (int i = 0; i < 200000; ++i) {
    const int exponent = static_cast<int>(random() % 121) - 80;
    const double mantissa = 1.0 + static_cast<double>(random() >> 11) * std::ldexp(1.0, -53);
    values.push_back(std::ldexp(mantissa, exponent));
  }
  for (double v : values)
    for (double s : {v, -v}) ASSERT_EQ(EventClock::ticks(s), ns3::Seconds(s).GetTimeStep()) << std::hexfloat << s;
}

}  // namespace
}  // namespace testbed
