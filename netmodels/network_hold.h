// What a backend may offer beyond messages, so that the comm layer can time traffic without it:
// its held world, which memoization keys on and shifts (comm/phase_memo.h), and a ring's links
// held for lanes (comm/ring_lanes.h). Network::hold() asks for it; flow and ns3 offer it.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "netmodels/network.h"

namespace testbed {

// What memoization asks of a backend (comm/phase_memo.h), in clock ticks (EventClock):
// the state of a network that holds its clock while idle (every message delivered).
struct HeldState {
  // Everything that decides the network's future from held_at on, as long as nothing is sent:
  // each connection's state and what it still has on its way (ACKs), relative to held_at.
  std::string state;
  int64_t held_at = 0;    // the tick the held world stands for: its last delivery, or later if shifted
  uint64_t messages = 0;  // messages sent so far: a phase's own were the only ones if it grew by theirs
};

// A held network caught up to now (settle) with nothing at all on its way: what the old
// quiescent phases keyed on, where the ACK tail has drained before the next phase begins.
struct QuietState {
  std::string state;                     // the pairs' connections' states, idle times aside
  std::vector<int64_t> idle_ticks;       // per pair: ticks since it last sent data, when that matters
  std::vector<int64_t> last_sent_ticks;  // per pair: when it last sent data (-1: never)
  int64_t quiet_since_ticks = -1;        // when the pairs' connections last saw a packet
};

// A connection that a ring (comm/ring_lanes.h) may time without the network:
// no other pair's route shares a link with it, and no other traffic crosses its links while
// the ring holds them, so its messages go one after another, each alone at its bottleneck.
// What follows a message's last bit across its route's bottleneck until it is delivered: the
// route's propagation delay, and store-and-forward of its last packet at each hop after the
// bottleneck (received whole before it is sent on). That packet carries the message's last
// segment as if the message were cut into segments on its own, ((bytes - 1) mod segment) + 1
// payload bytes, plus its headers; an empty message sends none and pays the latency alone.
struct ArrivalLag {
  double latency_s = 0;        // the route's propagation delay
  double seconds_per_bit = 0;  // 1 / rate summed over the hops after the bottleneck
  int64_t segment_bytes = 1;   // payload a packet carries (mtu - 52)
  double header_bytes = 0;     // wire bytes a packet adds (52 + 2)
  // Seconds from the last bit to delivery (EventClock::ticks makes them clock ticks).
  double seconds(uint64_t bytes) const {
    if (bytes == 0) return latency_s;
    const double last_packet =
        static_cast<double>((bytes - 1) % static_cast<uint64_t>(segment_bytes) + 1) + header_bytes;
    return latency_s + last_packet * 8.0 * seconds_per_bit;
  }
};

struct Lane {
  double rate_bps = 0;    // what a flow alone on the route gets (at most its rate limit)
  ArrivalLag lag;         // from a message's last bit to its delivery
  double overhead = 1;    // wire bytes per payload byte (headers): bits = bytes * 8 * overhead
  int64_t free_tick = 0;  // when the pair's previous message's last bit crosses
  // When the pair's previous message arrives: a later one arrives no earlier, its packets
  // following the earlier one's on every hop (a small message cannot overtake a large one's
  // last packet being stored and forwarded).
  int64_t arrived_tick = 0;
};

// Clock ticks (nanoseconds) `bits` take at `rate_bps`, to the nearest: how the flow backend
// times a flow's last bit from its last re-solve, and so how a lane times each message.
inline int64_t transmission_ticks(double bits, double rate_bps) { return std::llround(bits / rate_bps * 1e9); }

class NetworkHold {
 public:
  virtual ~NetworkHold() = default;

  // Memoization. A backend that holds its clock while idle (ns3) describes its held
  // world; nullopt when it is not held or cannot promise that its future is a function of the
  // description (loss, time-varying links, timers it cannot see).
  virtual std::optional<HeldState> held_state(const std::vector<HostPair>& pairs) const {
    (void)pairs;
    return std::nullopt;
  }
  // Whether held_state can ever describe this network: false, decided when it is built, where
  // something other than the traffic moves it (loss, faults, delayed ACKs, a variant keyed on
  // time) or a trace reads its own clock. Memoization is then off for the run.
  virtual bool can_replay() const { return false; }
  // A replay stood in for the network: its held world now stands for the same world `ticks`
  // later (it catches up from there at its next use).
  virtual void shift_held(int64_t ticks) { (void)ticks; }
  // Catches a held network up to now and holds it there (exact: nothing was sent meanwhile).
  virtual void settle() {}
  // After settle(), with nothing on its way anywhere: the pairs' state.
  virtual std::optional<QuietState> quiet_state(const std::vector<HostPair>& pairs) const {
    (void)pairs;
    return std::nullopt;
  }
  // shift_held for a quiet network, whose connections' last data then stands where the replayed
  // phase left it: the pairs' at these ticks (-1: unchanged), every other one where it was.
  virtual void shift_quiet(int64_t ticks, const std::vector<HostPair>& pairs,
                           const std::vector<int64_t>& last_sent_ticks) {
    (void)ticks;
    (void)pairs;
    (void)last_sent_ticks;
  }
  // Lanes: a backend that can promise Lane's conditions for `pairs` (one per ring position:
  // rank r's host to rank r + 1's) fills `lanes` and holds their links from now until
  // release_lanes; false otherwise (shared links, live traffic, or no such promise). While
  // held, a message of another pair crossing those links is a std::logic_error: the caller
  // chose lanes for traffic that has the network to itself. limits[i]: pair i's messages'
  // Message::rate_limit (empty: none), which its lane's rate holds to.
  virtual bool hold_lanes(const std::vector<HostPair>& pairs, const std::vector<RateLimit>& limits,
                          std::vector<Lane>& lanes) {
    (void)pairs;
    (void)limits;
    (void)lanes;
    return false;
  }
  // The ring timed on the held lanes: pair i carried bytes[i], its last bit crosses at
  // free_ticks[i] and its last message arrives at arrival_ticks[i]. A later message of that
  // pair waits for the first and is delivered no earlier than the second; one of another pair
  // crossing those links before then is a std::logic_error.
  virtual void release_lanes(const std::vector<HostPair>& pairs, const std::vector<int64_t>& free_ticks,
                             const std::vector<int64_t>& arrival_ticks, const std::vector<uint64_t>& bytes) {
    (void)pairs;
    (void)free_ticks;
    (void)arrival_ticks;
    (void)bytes;
  }
};

}  // namespace testbed
