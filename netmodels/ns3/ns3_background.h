// Background cross-traffic in the ns-3 backend: ns-3 applications sharing links with training.
#pragma once

#include <ns3/internet-module.h>
#include <ns3/network-module.h>

#include <vector>

#include "netmodels/ns3/ns3_options.h"

namespace testbed {

// Installs one ns-3 application pair per flow of `flows` on `nodes` (vertex i at index i):
// bulk: a BulkSendApplication over TCP (the run's congestion control) sending without end;
// onoff: an OnOffApplication over UDP at rate_bps while on. Each flow's sink (a PacketSink)
// listens at `address_of[to]` on a port of its own. `mtu` sizes the packets.
void install_background(const ns3::NodeContainer& nodes, const std::vector<ns3::Ipv4Address>& address_of,
                        const std::vector<BackgroundFlow>& flows, int mtu);

}  // namespace testbed
