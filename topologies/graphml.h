// Import of Internet Topology Zoo GraphML files (spec.kind "graphml") as topologies.
#pragma once

#include "topologies/builders.h"

namespace testbed {

// Reads spec.file and places spec.hosts training hosts on the nodes named by spec.placement
// (node ids or labels; default: the first nodes in file order). Placed nodes become vertices
// 0..hosts-1 in placement order, the other nodes switches. Link bandwidth comes from
// LinkSpeedRaw, LinkSpeed + LinkSpeedUnits, or the link type/label (OC-192, 10GE, ...), else
// spec.link.bandwidth with a warning on stderr; latency from the great-circle distance at 2/3 c
// when both ends have Latitude/Longitude, else spec.link.latency. Errors inside the file throw
// std::invalid_argument("PATH:LINE: message"); placement errors name the file.
Topology load_graphml(const TopologySpec& spec);

// One-way propagation delay over the great circle between two points (degrees), at 2/3 c.
double great_circle_latency_s(double lat1, double lon1, double lat2, double lon2);

}  // namespace testbed
