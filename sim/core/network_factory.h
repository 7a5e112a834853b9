// The scenario's network backend (ns3, flow or analytical) on a clock and a topology.
#pragma once

#include <memory>
#include <string>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "sim/config/scenario.h"
#include "topologies/routing.h"
#include "topologies/topology.h"

namespace testbed {

// What a run asks the ns3 backend to record besides its results (`testbed run --pcap/--flowmon`).
struct NetworkCaptures {
  std::string pcap_dir;      // a pcap file per link device in this folder (empty: none)
  std::string flowmon_file;  // ns-3 FlowMonitor statistics as XML, written when the network ends (empty: none)
  bool any() const { return !pcap_dir.empty() || !flowmon_file.empty(); }
  double fatal_error_at_s = -1;  // tests: an ns-3 fatal error at this simulated time (Ns3Options)
};

// network.routing with its ECMP salt, the seed's "routing" stream: what every backend routes by.
RoutingOptions routing_options(const Scenario& scenario);

// Build at most one per clock; destroy it before the clock (ns-3's rules, docs/architecture.md decision 1).
// Captures need the ns3 backend (std::invalid_argument otherwise).
std::unique_ptr<Network> make_network(const Scenario& scenario, EventClock& clock, const Topology& topology,
                                      const NetworkCaptures& captures = {});

}  // namespace testbed
