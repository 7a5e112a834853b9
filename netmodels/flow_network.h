// Flow-level backend: messages are flows that share every directed link they cross max-min
// fairly; rates are recomputed whenever a flow starts or ends. Contention without packets.
#pragma once

#include <memory>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "topologies/routing.h"
#include "topologies/topology.h"

namespace testbed {

// `mtu` sets the per-packet header overhead, so that an idle link carries payload at the
// rate the packet-level backend's TCP does: (mtu - 52) payload bytes per mtu + 2 on the
// wire (IPv4 + TCP with timestamps, and the point-to-point header). A message is delivered
// when its last byte has crossed its bottleneck (the first hop of its route saturated at its
// last re-solve: on an idle route of equal links, the first), then its last packet has been
// stored and forwarded by each later hop (its wire bytes over each such hop's rate: ns-3's
// nodes receive a packet whole before sending it on), plus the route's propagation latency
// (ArrivalLag in network_hold.h), and no earlier than its pair's previous message (a
// connection's packets cross every hop in order). Without the store-and-forward term a latency-bound ring on a
// fat-tree (62.5 kB steps at 100 Gb/s, 2 to 6 hops) came out 12 % faster than ns-3.
// Loss, queues and TCP's window dynamics are not modelled. Each (src, dst) pair's messages
// follow route(topology, src, dst, routing), one after another in send order (one connection
// a pair, as the packet-level backend's TCP): a message's first bit waits for the previous
// one's last to cross its bottleneck.
//
// How a link's capacity is shared among the flows crossing it:
//  MaxMin: plain max-min fairness, every flow's weight 1.
//  Rtt: weighted max-min with each flow's weight 1 / RTT, since TCP's throughput goes as
//    1 / RTT (Mathis et al. 1997: MSS / (RTT sqrt(2p/3)); Reno flows sharing one bottleneck
//    split it about in inverse ratio of their RTTs). A flow's RTT is its route's base round
//    trip with empty queues, summed over the hops h of the route:
//      RTT = sum_h [ 2 latency_h + (mtu + 2) 8 / rate_h(forward) + (52 + 2) 8 / rate_h(back) ]
//    i.e. propagation both ways plus store-and-forward serialisation of one MTU-sized data
//    packet and of its bare ACK (IPv4 + TCP + timestamps, each with the point-to-point
//    header), so zero-latency links still give a finite RTT. Queueing delay and slow start
//    are left out: this is the RTT bias of long-lived flows, not TCP's transient. Against
//    ns-3 on a parking lot (tests/netmodels/test_flow_network.cpp) it moves the short flows from 31 %
//    late to 12 % early; the rest is TCP's transient, which no sharing rule supplies.
enum class FlowSharing { MaxMin, Rtt };

// Which flows a start or a departure re-solves. Component: the flows connected to it through
// shared links, the only ones whose max-min rates can change (the allocation decomposes over
// connected components), so a flow's cost does not grow with the flows elsewhere. Global:
// every flow on the network, each time; the same allocation up to rounding, kept as the
// reference the component solve is tested against.
enum class FlowSolve { Component, Global };

std::unique_ptr<Network> make_flow_network(EventClock& clock, const Topology& topology, int mtu = 9000,
                                           FlowSharing sharing = FlowSharing::MaxMin,
                                           const RoutingOptions& routing = {}, FlowSolve solve = FlowSolve::Component);

}  // namespace testbed
