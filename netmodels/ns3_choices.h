// The packet backend's closed choices that a scenario names (its transport, TCP's congestion
// control, a background flow's kind), here rather than under ns3/ so that sim/config reaches
// them without ns-3; sim/config/choices.h gives them their scenario names.
#pragma once

namespace testbed {

// How messages travel on ns-3: TCP streams, or UDP datagrams that a neighbour exchange may
// lose parts of (docs/network.md#datagrams).
enum class Transport { Tcp, Udp };

// TCP's congestion control, each ns-3.37's own (netmodels/ns3/ns3_tcp.h).
enum class TcpVariant { NewReno, Cubic, Bbr, Dctcp };

// Cross-traffic: a TCP flow as fast as its congestion control lets it, or UDP on and off at a
// rate (netmodels/ns3/ns3_background.h).
enum class BackgroundKind { Bulk, OnOff };

}  // namespace testbed
