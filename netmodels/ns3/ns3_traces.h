// Bandwidth over time in the ns-3 backend: a link's trace becomes scheduled rate changes.
#pragma once

#include <ns3/network-module.h>

#include "netmodels/ns3/ns3_options.h"
#include "topologies/link_spec.h"

namespace testbed {

// Schedules `link.trace` on the two devices a point-to-point install made for the link: at
// each change both take its rate (a packet already on the wire keeps the rate it started
// with). The queues are sized for the fastest rate the link ever carries, since a DropTail
// queue cannot shrink below what it holds; at slower rates they hold more delay. Changes at
// or before now apply at once. Does nothing for a link without a trace.
void install_bandwidth_trace(const ns3::NetDeviceContainer& devices, const LinkSpec& link, const Ns3Options& options);

}  // namespace testbed
