// Runs a collective plan's message DAG on a network with sizes only (no values): the
// network-side cost of a collective, for benchmarks and for checking backends against bounds.
#pragma once

#include <vector>

#include "netmodels/collectives.h"
#include "netmodels/event_clock.h"
#include "netmodels/network.h"

namespace testbed {

// Starts every rank at the clock's current time, sends each message once its dependencies
// have reached its sender, and runs the clock until all are delivered. Returns the elapsed
// simulated seconds. `hosts[r]` is rank r's network host.
double simulate_plan(EventClock& clock, Network& network, const CollectivePlan& plan, const std::vector<int>& hosts);

}  // namespace testbed
