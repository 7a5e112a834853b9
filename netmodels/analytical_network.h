// The alpha-beta backend: every message takes its route's latency plus its bytes at the
// route's bottleneck bandwidth, with no contention, headers or loss — the bound every other
// backend is checked against, and the fastest way to sweep.
#pragma once

#include <memory>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "topologies/routing.h"
#include "topologies/topology.h"

namespace testbed {

// Deliveries are events on `clock` (the run's one clock, as for every backend). Each (src,
// dst) pair's messages follow route(topology, src, dst, routing), as in the other backends.
std::unique_ptr<Network> make_analytical_network(EventClock& clock, const Topology& topology,
                                                 const RoutingOptions& routing = {});

}  // namespace testbed
