// The ring all-reduce's messages walked step by step in clock ticks, on lanes.
#include "comm/ring_lanes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "comm/plans/plan_builder.h"

namespace testbed {
namespace {

// ring_all_reduce's chunking (plan_builder::ring_all_reduce_among and ring_steps): chunk c of
// p, which rank r sends in step k when c = (r - k) mod p, cut into min(slices, its length)
// near-equal pieces (one, possibly empty, when the chunk is). Calls piece(j, bytes) for each.
template <typename Piece>
void for_each_piece(int p, int c, int64_t elements, double element_bytes, int slices, Piece piece) {
  using plan_builder::part_begin;
  const int64_t begin = part_begin(c, p, elements);
  const int64_t len = part_begin(c + 1, p, elements) - begin;
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(slices, len));
  for (int64_t j = 0; j < pieces; ++j) {
    const int64_t count = part_begin(j + 1, pieces, len) - part_begin(j, pieces, len);
    piece(j, static_cast<uint64_t>(std::ceil(static_cast<double>(count) * element_bytes)));
  }
}

}  // namespace

RingOnLanes ring_all_reduce_on_lanes(const std::vector<Lane>& lanes, const std::vector<int64_t>& enter_tick,
                                     int64_t elements, double element_bytes, int slices, const LaneCosts& costs) {
  const int p = static_cast<int>(lanes.size());
  if (p < 2 || static_cast<int>(enter_tick.size()) != p)
    throw std::invalid_argument("ring_all_reduce_on_lanes: one lane and one entry per rank, two ranks at least");
  plan_builder::check_sizes("ring_all_reduce_on_lanes", p, elements, element_bytes);
  if (slices < 1) throw std::invalid_argument("ring_all_reduce_on_lanes: slices must be at least 1");
  if (!costs.message_s.empty() && static_cast<int>(costs.message_s.size()) != p)
    throw std::invalid_argument("ring_all_reduce_on_lanes: one message latency per lane, or none");
  // Each chunk's pieces, as indices into the few distinct sizes they come in (near-equal parts
  // of near-equal chunks), and each lane's transmission ticks for each size: the walk below is
  // then integer maxima and sums, a few nanoseconds a message.
  const size_t width = static_cast<size_t>(slices);
  std::vector<uint64_t> sizes;
  std::vector<uint8_t> piece_size(p * width, 0);
  std::vector<int> pieces(p, 0);
  for (int c = 0; c < p; ++c) {
    for_each_piece(p, c, elements, element_bytes, slices, [&](int64_t j, uint64_t bytes) {
      auto it = std::find(sizes.begin(), sizes.end(), bytes);
      if (it == sizes.end()) it = sizes.insert(sizes.end(), bytes);
      piece_size[c * width + j] = static_cast<uint8_t>(it - sizes.begin());
      ++pieces[c];
    });
  }
  if (sizes.size() > 255)
    throw std::logic_error("ring_all_reduce_on_lanes: more piece sizes than near-equal parts give");
  const size_t m = sizes.size();
  std::vector<int64_t> duration(p * m), lag(p * m);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < m; ++i) {
      duration[r * m + i] =
          transmission_ticks(static_cast<double>(sizes[i]) * 8.0 * lanes[r].overhead, lanes[r].rate_bps);
      lag[r * m + i] = EventClock::ticks(lanes[r].lag.seconds(sizes[i]));
    }

  // The library's costs in the ticks the plan runner's waits take (EventClock::ticks).
  const int64_t launch = costs.launch_s > 0 ? EventClock::ticks(costs.launch_s) : 0;
  std::vector<int64_t> handling(p, 0);  // per lane: at its sender, and at its receiver
  for (size_t r = 0; r < costs.message_s.size(); ++r)
    if (costs.message_s[r] > 0) handling[r] = EventClock::ticks(costs.message_s[r]);

  RingOnLanes out;
  std::vector<int64_t> free(p), lane_arrived(p);
  for (int r = 0; r < p; ++r) free[r] = lanes[r].free_tick, lane_arrived[r] = lanes[r].arrived_tick;
  // Arrival ticks of step k - 1's pieces at each rank (from r - 1), and step k's. A rank's
  // arrivals come in send order (one connection), so its last is in the last step.
  std::vector<int64_t> arrived(p * width, 0), arriving(p * width, 0);
  for (int k = 0; k < 2 * (p - 1); ++k) {
    int c = (p - k % p) % p;  // the chunk rank 0 sends in step k; rank r sends c + r
    for (int r = 0; r < p; ++r, c = c + 1 == p ? 0 : c + 1) {
      const int to = r + 1 == p ? 0 : r + 1;
      const int64_t sending = handling[r], receiving = handling[r == 0 ? p - 1 : r - 1];
      const int64_t entered = enter_tick[r] + launch;
      const int64_t* took = &duration[r * m];
      const int64_t* lags = &lag[r * m];
      const uint8_t* size = &piece_size[c * width];
      const int64_t* before = &arrived[r * width];
      int64_t* after = &arriving[to * width];
      int64_t lane_free = free[r];
      for (int j = 0; j < pieces[c]; ++j) {
        const int64_t sent = (k == 0 ? entered : std::max(entered, before[j] + receiving)) + sending;
        const int64_t start = std::max(sent, lane_free);
        int64_t last_bit = start;
        if (sizes[size[j]] > 0) last_bit = lane_free = start + took[size[j]];  // an empty one takes no turn
        // No earlier than the lane's previous message (Lane::arrived_tick).
        after[j] = lane_arrived[r] = std::max(last_bit + lags[size[j]], lane_arrived[r]);
      }
      free[r] = lane_free;
    }
    std::swap(arrived, arriving);
  }
  out.done_tick = enter_tick;
  int64_t first_send = std::numeric_limits<int64_t>::max(), last_arrival = 0;
  for (int r = 0; r < p; ++r) {
    first_send = std::min(first_send, enter_tick[r] + launch + handling[r]);  // step 0 leaves first, the rest later
    const int64_t receiving = handling[r == 0 ? p - 1 : r - 1];
    for (int j = 0; j < pieces[(r + 2) % p]; ++j)  // the last step brings r chunk (r - 1) - (2p - 3) = r + 2
      out.done_tick[r] = std::max(out.done_tick[r], arrived[r * width + j] + receiving);
    last_arrival = std::max(last_arrival, out.done_tick[r]);
  }
  out.lane_bytes = ring_all_reduce_bytes_per_rank(p, elements, element_bytes, slices);
  out.messages = ring_all_reduce_messages(p, elements, slices);
  out.free_tick = free;
  out.arrival_tick = lane_arrived;
  out.first_send_tick = first_send;
  out.last_arrival_tick = last_arrival;
  return out;
}

LaneCosts lane_costs(const LibraryCosts& library, const std::vector<HostPair>& pairs) {
  LaneCosts costs{library.launch_s, {}};
  bool any = false;
  for (const auto& [src, dst] : pairs) {
    costs.message_s.push_back(library.between(src, dst).message_s);
    any = any || costs.message_s.back() > 0;
  }
  if (!any) costs.message_s.clear();
  return costs;
}

std::vector<RateLimit> lane_rate_limits(const LibraryCosts& library, const std::vector<HostPair>& pairs) {
  std::vector<RateLimit> limits;
  bool any = false;
  for (const auto& [src, dst] : pairs) {
    limits.push_back(library.between(src, dst).rate);
    any = any || limits.back().any();
  }
  if (!any) limits.clear();
  return limits;
}

// Each chunk's pieces' bytes. In steps 0 .. 2p - 3 rank r sends chunks r, r - 1, ..., every
// chunk twice but r + 1 and r + 2 (mod p), which only the two steps past the end would reach.
static std::vector<uint64_t> chunk_bytes(int p, int64_t elements, double element_bytes, int slices) {
  std::vector<uint64_t> bytes(p, 0);
  for (int c = 0; c < p; ++c)
    for_each_piece(p, c, elements, element_bytes, slices, [&](int64_t, uint64_t b) { bytes[c] += b; });
  return bytes;
}

std::vector<uint64_t> ring_all_reduce_bytes_per_rank(int ranks, int64_t elements, double element_bytes, int slices) {
  std::vector<uint64_t> bytes(ranks, 0);
  if (ranks < 2) return bytes;
  const std::vector<uint64_t> chunk = chunk_bytes(ranks, elements, element_bytes, slices);
  uint64_t all = 0;
  for (uint64_t b : chunk) all += b;
  for (int r = 0; r < ranks; ++r) bytes[r] = 2 * all - chunk[(r + 1) % ranks] - chunk[(r + 2) % ranks];
  return bytes;
}

uint64_t ring_all_reduce_messages(int ranks, int64_t elements, int slices) {
  if (ranks < 2) return 0;
  uint64_t pieces = 0;  // over the p chunks; each step sends every chunk once
  for (int c = 0; c < ranks; ++c) for_each_piece(ranks, c, elements, 1, slices, [&](int64_t, uint64_t) { ++pieces; });
  return 2 * static_cast<uint64_t>(ranks - 1) * pieces;
}

RingLaneRunner::RingLaneRunner(EventClock& clock, NetworkHold& network, std::vector<HostPair> pairs,
                               std::vector<Lane> lanes, int64_t elements, double element_bytes, int slices,
                               std::function<void(int rank)> rank_done, LibraryCosts library)
    : clock_(clock),
      network_(network),
      pairs_(std::move(pairs)),
      lanes_(std::move(lanes)),
      elements_(elements),
      element_bytes_(element_bytes),
      slices_(slices),
      rank_done_(std::move(rank_done)),
      costs_(lane_costs(library, pairs_)),
      enter_tick_(pairs_.size(), -1) {
  if (lanes_.size() != pairs_.size()) throw std::invalid_argument("ring lane runner: one lane per pair is needed");
}

void RingLaneRunner::enter(int rank) {
  if (enter_tick_.at(rank) >= 0)
    throw std::logic_error("ring lane runner: rank " + std::to_string(rank) + " entered twice");
  const int64_t now = clock_.now_ticks();
  enter_tick_[rank] = now;
  if (++entered_ < static_cast<int>(pairs_.size())) return;
  result_ = ring_all_reduce_on_lanes(lanes_, enter_tick_, elements_, element_bytes_, slices_, costs_);
  network_.release_lanes(pairs_, result_.free_tick, result_.arrival_tick, result_.lane_bytes);
  // Ranks done at one tick finish in rank order.
  std::vector<int> order(pairs_.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  std::stable_sort(order.begin(), order.end(),
                   [this](int a, int b) { return result_.done_tick[a] < result_.done_tick[b]; });
  for (int r : order) {
    clock_.schedule_ticks(result_.done_tick[r] - now, [this, r] {
      ++done_;
      rank_done_(r);
    });
  }
}

}  // namespace testbed
