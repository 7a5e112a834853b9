// Ring all-reduces timed on lanes against every message sent as a flow, against the lane rate
// worked by hand, and the lanes' refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/plan_runner.h"
#include "comm/plans/collectives.h"
#include "comm/ring_lanes.h"
#include "netmodels/event_clock.h"
#include "netmodels/flow_network.h"
#include "topologies/builders.h"

namespace testbed {
namespace ring_lanes_test {  // its own names: network_tests compiles as one unity file
namespace {

struct RingCase {
  std::string name;
  TopologySpec topology;
  std::vector<int> hosts;  // rank r's host
  int64_t elements = 0;
  double element_bytes = 4;
  int slices = 1;
  std::vector<int64_t> enter;         // ticks each rank enters the first ring
  std::vector<int64_t> enter_second;  // ticks after its first ring is done each enters the second
  int64_t extra_after = 0;            // ticks after rank 0 is done with the second ring: a message on its lane
  uint64_t extra_bytes = 0;
  LibraryCosts library;  // a collective library's own time (comm/library_costs.h)
};

// What one run gives: each rank's done tick in both rings, the extra message's arrival, and the
// links' bytes.
struct Outcome {
  std::vector<int64_t> first, second;
  int64_t extra = -1;
  LinkBytes links;
};

std::vector<HostPair> ring_pairs(const std::vector<int>& hosts) {
  std::vector<HostPair> pairs;
  for (size_t r = 0; r < hosts.size(); ++r) pairs.emplace_back(hosts[r], hosts[(r + 1) % hosts.size()]);
  return pairs;
}

// Two rings, each rank entering the second a while after the first is done at it (one stream a
// rank, as the engine's backward ops), then one plain message on rank 0's lane.
Outcome run(const RingCase& c, bool lanes) {
  const int p = static_cast<int>(c.hosts.size());
  const Topology topology = build_topology(c.topology);
  EventClock clock;
  auto network = make_flow_network(clock, topology);
  Outcome out;
  out.first.assign(p, -1);
  out.second.assign(p, -1);
  uint64_t next_id = 1u << 30;
  auto extra = [&] {
    clock.schedule_ticks(c.extra_after, [&] {
      network->send(Message{next_id++, c.hosts[0], c.hosts[1], c.extra_bytes},
                    [&](const Delivery&) { out.extra = clock.now_ticks(); });
    });
  };
  const auto plan = std::make_shared<const CollectivePlan>(ring_all_reduce(p, c.elements, c.element_bytes, c.slices));
  // The per-message path: a rank is done when its inbox has arrived.
  struct PlanRing {
    std::unique_ptr<PlanRunner> runner;
    std::vector<size_t> arrived;
  };
  PlanRing plans[2];
  std::unique_ptr<RingLaneRunner> runners[2];
  std::function<void(int, int)> done;  // (ring, rank)
  auto enter = [&](int ring, int rank) {
    if (!lanes) return plans[ring].runner->enter(rank);
    if (!runners[ring]) {
      std::vector<Lane> held;
      if (!network->hold()->hold_lanes(ring_pairs(c.hosts), lane_rate_limits(c.library, ring_pairs(c.hosts)), held))
        throw std::runtime_error(c.name + ": lanes refused");
      runners[ring] = std::make_unique<RingLaneRunner>(
          clock, *network->hold(), ring_pairs(c.hosts), held, c.elements, c.element_bytes, c.slices,
          [&done, ring](int r) { done(ring, r); }, c.library);
    }
    runners[ring]->enter(rank);
  };
  done = [&](int ring, int rank) {
    (ring == 0 ? out.first : out.second)[rank] = clock.now_ticks();
    if (ring == 0) clock.schedule_ticks(c.enter_second[rank], [&enter, rank] { enter(1, rank); });
    if (ring == 1 && rank == 0) extra();
  };
  if (!lanes) {
    uint64_t id = 0;
    for (int ring = 0; ring < 2; ++ring) {
      plans[ring].arrived.assign(p, 0);
      PlanRunner::Hooks hooks;
      hooks.delivered = [&, ring](int m, const Delivery&) {
        const int dst = plan->messages[m].dst;
        if (++plans[ring].arrived[dst] == plan->inbox[dst].size()) done(ring, dst);
      };
      hooks.later = [&clock](double seconds, std::function<void()> then) { clock.schedule(seconds, std::move(then)); };
      MessageTransport transport;
      transport.library = c.library;
      plans[ring].runner = std::make_unique<PlanRunner>(plan, c.hosts, *network, id, transport, hooks);
    }
  }
  for (int r = 0; r < p; ++r) clock.schedule_ticks(c.enter[r], [&enter, r] { enter(0, r); });
  clock.run();
  out.links = network->link_bytes();
  network.reset();
  return out;
}

std::vector<RingCase> generated_cases() {
  std::mt19937_64 draw(47);
  auto ticks = [&](int p, int64_t most) {
    std::vector<int64_t> t(p);
    for (auto& x : t) x = static_cast<int64_t>(draw() % static_cast<uint64_t>(most + 1));
    return t;
  };
  std::vector<RingCase> cases;
  auto add = [&](const std::string& name, TopologySpec spec, std::vector<int> hosts, int64_t elements, double eb,
                 int slices) {
    RingCase c;
    c.name = name;
    c.topology = spec;
    c.hosts = hosts;
    c.elements = elements;
    c.element_bytes = eb;
    c.slices = slices;
    const int p = static_cast<int>(hosts.size());
    c.enter = ticks(p, 200'000);
    c.enter_second = ticks(p, 50'000);
    c.extra_after = static_cast<int64_t>(draw() % 20'000);
    c.extra_bytes = 1 + draw() % 100'000;
    cases.push_back(c);
  };
  TopologySpec ring;
  ring.kind = TopologyKind::Ring;
  ring.hosts = 7;
  ring.link = {1e9, 50e-6, 0};
  std::vector<int> seven{0, 1, 2, 3, 4, 5, 6};
  add("ring of 7, 1 000 003 fp32, 1 slice", ring, seven, 1'000'003, 4, 1);
  add("ring of 7, 5 elements (empty chunks), 3 slices", ring, seven, 5, 4, 3);
  add("ring of 7, fp4, 4 slices", ring, seven, 300'001, 0.5, 4);
  // Chunks of 2 and 3 values under 3 slices: chunks cut into 2 or 3 pieces, so a rank's last
  // step brings a different count of pieces than the chunk before it.
  add("ring of 7, 20 elements, 3 slices", ring, seven, 20, 4, 3);
  TopologySpec gpus;
  gpus.kind = TopologyKind::GpuHosts;
  gpus.hosts = 16;
  gpus.gpus_per_host = 4;
  gpus.link = {10e9, 5e-6, 0};
  gpus.gpu_link = {128e9, 1e-6, 0};
  std::vector<int> sixteen(16);
  for (int r = 0; r < 16; ++r) sixteen[r] = r;
  add("16 GPUs on 4 hosts, bf16, 1 slice", gpus, sixteen, 4'000'000, 2, 1);
  add("16 GPUs on 4 hosts, fp32, 2 slices", gpus, sixteen, 999'999, 4, 2);
  // Fewer elements than ranks: empty chunks, whose messages would overtake a 4-byte one's last
  // packet across the hosts' hops were a pair's arrivals not kept in order.
  add("16 GPUs on 4 hosts, 9 fp32 elements", gpus, sixteen, 9, 4, 1);
  TopologySpec fat;
  fat.kind = TopologyKind::FatTree;
  fat.fat_tree_k = 4;
  fat.hosts = 16;
  fat.link = {100e9, 1e-6, 0};
  add("fat-tree k 4, 16 hosts, fp32", fat, sixteen, 2'500'007, 4, 1);
  std::vector<int> two{3, 12};
  add("fat-tree k 4, two hosts in other pods", fat, two, 1'000'000, 4, 1);
  // A library's costs: a launch per rank and a latency at each end of every message, with
  // sizes and slices whose pieces arrive before, and after, a rank's launch has passed.
  add("ring of 7, library costs, 2 slices", ring, seven, 1'000'003, 4, 2);
  cases.back().library = {30e-6, 7.5e-6};
  add("16 GPUs on 4 hosts, library costs", gpus, sixteen, 3'000'001, 2, 1);
  cases.back().library = {0, 20e-6};
  add("fat-tree k 4, launch only", fat, sixteen, 2'500'007, 4, 3);
  cases.back().library = {120e-6, 0};
  // A library below line rate, and one whose GPUs of a host talk through another transport
  // than the hosts do (local costs on the lanes inside a host, network ones on the two that
  // leave it): a share, a cap, both, and per-lane latencies.
  add("ring of 7, half the line rate", ring, seven, 1'000'003, 4, 2);
  cases.back().library.network.rate = {0.5, 0};
  add("fat-tree k 4, a rate cap and latency", fat, sixteen, 2'500'007, 4, 1);
  cases.back().library.network = {12e-6, {1, 30e9}};
  add("16 GPUs on 4 hosts, local and network transports", gpus, sixteen, 3'000'001, 2, 2);
  cases.back().library.launch_s = 3e-6;
  cases.back().library.network = {18e-6, {0.5, 0}};
  cases.back().library.local = {2e-6, {0.49, 40e9}};
  cases.back().library.machine_of_host =
      std::make_shared<std::vector<int>>(std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  return cases;
}

// The fast path is the per-message path to the tick: every rank's completion in two rings
// back to back (the second starting on lanes the first has not let go of), a message queued
// behind the second on one lane, and every link's bytes. Slips caught: a piece waiting for the
// wrong piece of the step before (j off by one: ticks differ with slices), a lane starting a
// message before its previous one's last bit (max with the lane's free tick dropped), the
// latency added before the tick rounding, a released lane not holding back the plain message,
// the first ring's free ticks not carried into the second, a rank's completion read from the
// pieces of chunk r + 1 instead of r + 2 (the 20-element case: 2 failures).
TEST(RingLanes, EqualEveryMessageAsAFlowToTheTick) {
  for (const RingCase& c : generated_cases()) {
    const Outcome flows = run(c, false);
    const Outcome lanes = run(c, true);
    EXPECT_EQ(lanes.first, flows.first) << c.name;
    EXPECT_EQ(lanes.second, flows.second) << c.name;
    EXPECT_EQ(lanes.extra, flows.extra) << c.name;
    EXPECT_GT(lanes.extra, 0) << c.name;
    EXPECT_EQ(lanes.links, flows.links) << c.name;
  }
}

// Worked by hand: 8 hosts on a ring of 1 Gb/s, 50 us links, all entering at 0, 8 000 fp32
// values (chunks of 4 000 bytes). Every lane is one link; each of the 2 (p - 1) = 14 steps
// takes a chunk's wire bits at 1 Gb/s (payload of 8 948 bytes in 9 002 on the wire) plus 50 us,
// each last bit rounded to a tick (at most half a nanosecond a step).
TEST(RingLanes, AnEvenRingTakesEachStepAtTheLaneRate) {
  TopologySpec spec;
  spec.kind = TopologyKind::Ring;
  spec.hosts = 8;
  spec.link = {1e9, 50e-6, 0};
  const Topology topology = build_topology(spec);
  EventClock clock;
  auto network = make_flow_network(clock, topology);
  std::vector<int> hosts{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<Lane> lanes;
  ASSERT_TRUE(network->hold()->hold_lanes(ring_pairs(hosts), {}, lanes));
  const RingOnLanes ring = ring_all_reduce_on_lanes(lanes, std::vector<int64_t>(8, 0), 8000, 4, 1);
  const double step_s = 4000 * 8 * 9002.0 / 8948.0 / 1e9 + 50e-6;
  for (int r = 0; r < 8; ++r) {
    EXPECT_NEAR(static_cast<double>(ring.done_tick[r]), 14 * step_s * 1e9, 14 * 0.5 + 1e-6) << "rank " << r;
    EXPECT_EQ(ring.lane_bytes[r], 14u * 4000u);
  }
  EXPECT_EQ(ring.messages, 14u * 8u);
  EXPECT_EQ(ring.first_send_tick, 0);
  // With a library's launch L and message latency m: the first pieces leave at L + m, each
  // later one 2 m after the one before arrived, and the last counts m after it lands, so every
  // rank is done at L + 14 (step + 2 m). Slip caught: the receiver's m left out of the last
  // arrival (every rank done m early).
  const LaneCosts library{40e-6, std::vector<double>(8, 10e-6)};
  const RingOnLanes costly = ring_all_reduce_on_lanes(lanes, std::vector<int64_t>(8, 0), 8000, 4, 1, library);
  for (int r = 0; r < 8; ++r)
    EXPECT_NEAR(static_cast<double>(costly.done_tick[r]), (40e-6 + 14 * (step_s + 20e-6)) * 1e9, 14 * 0.5 + 1e-6)
        << "rank " << r;
  EXPECT_EQ(costly.first_send_tick, 50'000);
  network->hold()->release_lanes(ring_pairs(hosts), ring.free_tick, ring.arrival_tick, ring.lane_bytes);
  network.reset();
}

// Bytes and messages without the plan. By hand, 3 ranks and 4 fp32 values: chunks of 1, 1 and
// 2 values; in steps 0..3 rank r sends chunks r, r-1, r-2, r-3, so rank 0 sends 4+8+4+4 = 20
// bytes, rank 1 20 and rank 2 8+4+4+8 = 24; 2 (p - 1) p = 12 messages. Then against the plan
// over sizes with empty chunks, 4-bit values and slices. Slip caught: the two chunks a rank
// does not send twice taken as r and r + 1 instead of r + 1 and r + 2.
TEST(RingLanes, BytesAndMessagesWithoutThePlan) {
  EXPECT_EQ(ring_all_reduce_bytes_per_rank(3, 4, 4, 1), (std::vector<uint64_t>{20, 20, 24}));
  EXPECT_EQ(ring_all_reduce_messages(3, 4, 1), 12u);
  for (int p : {2, 3, 5, 16})
    for (int64_t elements : {int64_t{0}, int64_t{3}, int64_t{1001}})
      for (double eb : {4.0, 0.5})
        for (int slices : {1, 3}) {
          const CollectivePlan plan = ring_all_reduce(p, elements, eb, slices);
          EXPECT_EQ(ring_all_reduce_bytes_per_rank(p, elements, eb, slices), bytes_sent_per_rank(plan));
          EXPECT_EQ(ring_all_reduce_messages(p, elements, slices), plan.messages.size());
        }
}

// Lanes only where a ring has its links to itself, and held links refuse other traffic. On a
// line of 4 hosts, pairs 0->2 and 1->3 both cross the link 1->2, and a pair to itself is no
// lane. On a ring of 4, a live flow on a link refuses the ring's lanes; and while they are
// held, a message 0->2 (through 0->1, lane 0's link) is a logic error.
TEST(RingLanes, LanesOnlyForLinksOfTheirOwn) {
  TopologySpec spec;
  spec.kind = TopologyKind::Line;
  spec.hosts = 4;
  spec.link = {1e9, 50e-6, 0};
  std::vector<Lane> lanes;
  {
    const Topology line = build_topology(spec);
    EventClock clock;
    auto network = make_flow_network(clock, line);
    EXPECT_FALSE(network->hold()->hold_lanes({{0, 2}, {1, 3}}, {}, lanes));
    EXPECT_FALSE(network->hold()->hold_lanes({{0, 0}, {1, 2}}, {}, lanes));
    EXPECT_TRUE(network->hold()->hold_lanes({{0, 1}, {2, 3}}, {}, lanes))
        << "refusing nothing would pass the two above";
    network.reset();
  }
  spec.kind = TopologyKind::Ring;
  const Topology topology = build_topology(spec);
  EventClock clock;
  auto network = make_flow_network(clock, topology);
  bool checked = false;
  clock.schedule(0, [&] {
    network->send(Message{1, 3, 0, 1'000'000}, [](const Delivery&) {});
    EXPECT_FALSE(network->hold()->hold_lanes(ring_pairs({0, 1, 2, 3}), {}, lanes)) << "3->0 carries a flow";
  });
  clock.schedule(1.0, [&] {
    ASSERT_TRUE(network->hold()->hold_lanes(ring_pairs({0, 1, 2, 3}), {}, lanes));
    EXPECT_EQ(lanes.size(), 4u);
    EXPECT_THROW(network->send(Message{2, 0, 2, 1000}, [](const Delivery&) {}), std::logic_error);
    checked = true;
  });
  clock.run();
  EXPECT_TRUE(checked);
  network.reset();
}

}  // namespace
}  // namespace ring_lanes_test
}  // namespace testbed
