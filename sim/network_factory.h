// The scenario's network backend (ns3, flow or analytical) on a clock and a topology.
#pragma once

#include <memory>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "sim/scenario.h"
#include "topologies/topology.h"

namespace testbed {

// Build at most one per clock; destroy it before the clock (ns-3's rules, DESIGN decision 1).
std::unique_ptr<Network> make_network(const Scenario& scenario, EventClock& clock, const Topology& topology);

}  // namespace testbed
