// Packet-level backend: every topology link is an ns-3 point-to-point link, messages ride TCP (or UDP datagrams).
#pragma once

#include <memory>
#include <string>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "netmodels/ns3/ns3_options.h"
#include "topologies/topology.h"

namespace testbed {

// The ns-3 release this backend runs on (Debian's libns3).
std::string ns3_version();

// True when nothing about the links changes with time or chance: no loss, jitter or bandwidth
// trace on any link, no fault and no background traffic. A transfer's time
// then depends on the traffic only, so results may be memoized.
bool static_links(const Topology& topology, const Ns3Options& options);

// Feeds `packets` packets through the receive error model an ns-3 link device gets for
// `link` (its random stream `seed`) and returns the fraction it dropped.
double ns3_drop_fraction(const LinkSpec& link, int packets, uint64_t seed);

// Builds the ns-3 nodes, links, stack and routes on construction. Connections
// between a pair of hosts are opened at first use and kept for the run, and a
// connection delivers its messages in order. Must be destroyed before `clock`;
// build at most one per clock (ns-3 nodes and addresses live until Simulator::Destroy).
std::unique_ptr<Network> make_ns3_network(EventClock& clock, const Topology& topology, const Ns3Options& options);

}  // namespace testbed
