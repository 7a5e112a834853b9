// A ring all-reduce timed in closed form on lanes (netmodels/network_hold.h): no plan of 2 (p - 1) p messages
// and no event per message, for rings whose connections have the network to themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/library_costs.h"
#include "netmodels/event_clock.h"
#include "netmodels/network_hold.h"

namespace testbed {

// What ring_all_reduce(p, elements, element_bytes, slices) (collectives.h) does on the flow
// backend when lane r (rank r's host to rank r + 1's) carries only the ring's messages, each
// alone at the lane's rate. Message (k, r, j), piece j of what rank r sends in step k, leaves
// when r has entered and piece j of step k - 1 has reached r; on its lane it starts when it
// leaves or when the lane's previous message's last bit has crossed, whichever is later (one
// connection a pair, in send order); its last bit crosses transmission_ticks(bits, rate)
// (network_hold.h) after it starts, and it arrives the lane's latency later. Every time is in clock
// ticks and every rounding is the flow backend's, so the result is the per-message path's to
// the tick. A library's costs (library_costs.h) move the sends as the plan runner does: a rank
// may send launch after it entered, a message leaves its lane's message latency after it may,
// and a piece counts at its receiver that lane's message latency after it arrived. (A library's
// rate limit is the lane's: NetworkHold::hold_lanes holds its rate to it.)
struct LaneCosts {
  double launch_s = 0;
  std::vector<double> message_s;  // per lane (empty: none), its pair's transport's
};
// The costs each lane of `pairs` meets under `library` (LibraryCosts::between).
LaneCosts lane_costs(const LibraryCosts& library, const std::vector<HostPair>& pairs);
// Each pair's rate limit under `library`, for NetworkHold::hold_lanes (empty when none has one).
std::vector<RateLimit> lane_rate_limits(const LibraryCosts& library, const std::vector<HostPair>& pairs);

struct RingOnLanes {
  std::vector<int64_t> done_tick;     // per rank: its last message arrived (the result is there)
  std::vector<int64_t> free_tick;     // per lane: its last bit crossed (NetworkHold::release_lanes)
  std::vector<int64_t> arrival_tick;  // per lane: its last message arrived
  std::vector<uint64_t> lane_bytes;   // per lane: payload bytes it carried
  int64_t first_send_tick = 0, last_arrival_tick = 0;
  uint64_t messages = 0;
};
RingOnLanes ring_all_reduce_on_lanes(const std::vector<Lane>& lanes, const std::vector<int64_t>& enter_tick,
                                     int64_t elements, double element_bytes, int slices, const LaneCosts& costs = {});

// Payload bytes each rank sends in ring_all_reduce(ranks, elements, element_bytes, slices),
// without building it.
std::vector<uint64_t> ring_all_reduce_bytes_per_rank(int ranks, int64_t elements, double element_bytes, int slices);

// Messages in ring_all_reduce(ranks, elements, element_bytes, slices), without building it.
uint64_t ring_all_reduce_messages(int ranks, int64_t elements, int slices);

// One ring all-reduce on held lanes (NetworkHold::hold_lanes, pair r from rank r's host to rank
// r + 1's) as the engine runs a plan: ranks enter at their own times; once the last has, the
// ring is timed at once (ring_all_reduce_on_lanes), the lanes released, and each rank's
// rank_done called at its tick. Nothing can finish earlier: every rank's result needs every
// rank's buffer.
class RingLaneRunner {
 public:
  RingLaneRunner(EventClock& clock, NetworkHold& network, std::vector<HostPair> pairs, std::vector<Lane> lanes,
                 int64_t elements, double element_bytes, int slices, std::function<void(int rank)> rank_done,
                 LibraryCosts library = {});
  void enter(int rank);  // the rank is ready now
  bool all_entered() const { return entered_ == static_cast<int>(pairs_.size()); }
  bool finished() const { return done_ == static_cast<int>(pairs_.size()); }
  const RingOnLanes& result() const { return result_; }  // once all_entered()

 private:
  EventClock& clock_;
  NetworkHold& network_;
  std::vector<HostPair> pairs_;
  std::vector<Lane> lanes_;
  int64_t elements_;
  double element_bytes_;
  int slices_;
  std::function<void(int)> rank_done_;
  LaneCosts costs_;
  std::vector<int64_t> enter_tick_;
  int entered_ = 0, done_ = 0;
  RingOnLanes result_;
};

}  // namespace testbed
