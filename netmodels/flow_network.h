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
// when its last byte has crossed its bottleneck plus the route's propagation latency.
// Loss, queues and TCP's window dynamics are not modelled. Each (src, dst) pair's messages
// follow route(topology, src, dst, routing).
std::unique_ptr<Network> make_flow_network(EventClock& clock, const Topology& topology, int mtu = 9000,
                                           const RoutingOptions& routing = {});

}  // namespace testbed
