// ns-3 forwarding along topologies/routing.h paths, so packets cross the links the flow and
// analytical backends charge (global routing breaks ties its own way and knows no ECMP per flow).
#pragma once

#include <ns3/internet-module.h>
#include <ns3/network-module.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "topologies/routing.h"
#include "topologies/topology.h"

namespace testbed {

// Puts a routing protocol ahead of every node's others (`nodes` holds vertex i at index i)
// that sends each packet along route(topology, s, d, options), s and d the vertices of its
// source and destination addresses: all packets of a connection, whichever node forwards
// them, follow the one path of its (source, destination) pair. `vertex_of_address` maps
// every address a packet may carry to its vertex. When an interface goes down or up (ns-3
// tells every routing protocol) the routes are recomputed over the links whose two
// interfaces are both up; a destination cut off from a sender keeps the route of the whole
// graph, so its packets are dropped at the cut and TCP retransmits until the outage ends.
// stable_source[h], when given, is host h's source address for the packets it originates
// (ns3_faults.h: an address that survives its links), else the outgoing interface's.
void install_path_routing(const ns3::NodeContainer& nodes, const Topology& topology, const RoutingOptions& options,
                          const std::unordered_map<uint32_t, int>& vertex_of_address,
                          const std::vector<ns3::Ipv4Address>& stable_source);

}  // namespace testbed
