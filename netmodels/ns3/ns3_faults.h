// Link and node outages in the ns-3 backend: interfaces go down and up at scheduled times.
#pragma once

#include <ns3/internet-module.h>
#include <ns3/network-module.h>

#include <vector>

#include "netmodels/ns3/ns3_options.h"
#include "topologies/topology.h"

namespace testbed {

// Gives each host h < hosts an address of its own, on its loopback interface, that stays
// reachable whichever of its links are up: a connection to or from a link's address would
// break with that link even where another path exists. ns-3's TCP takes a connection's
// source address from its first route's outgoing interface (TcpSocketBase::SetupEndpoint
// overrides a bound address), so the path routing (ns3_routing.h) gives these as the
// source of every packet a host originates.
std::vector<ns3::Ipv4Address> stable_host_addresses(const ns3::NodeContainer& nodes, int hosts);

// Schedules every fault of `faults` on the built network: at its start both interfaces of
// the link (a node: all of its interfaces) go down and the path routing (ns3_routing.h)
// recomputes its routes, so traffic moves to another path when one exists (under ecmp, to
// one of the equal-cost paths left, chosen by the same hash); at its end they come back. `nodes` holds
// vertex i at index i. Also sets how long TCP keeps retransmitting (see the .cpp); call it
// before any socket exists.
void install_faults(const ns3::NodeContainer& nodes, const Topology& topology, const std::vector<Fault>& faults);

}  // namespace testbed
