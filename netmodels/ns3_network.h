// Packet-level backend: every topology link is an ns-3 point-to-point link, messages ride TCP (or UDP datagrams).
#pragma once

#include <memory>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"
#include "topologies/topology.h"

namespace testbed {

struct Ns3Options {
  // tcp: every message over TCP. udp: messages marked Message::datagrams go as paced UDP
  // datagrams and may lose parts (ns3_datagrams.h); all others still go over TCP.
  std::string transport = "tcp";
  int mtu = 9000;                 // bytes; TCP segment size is mtu - 52
  int queue_packets = 1000;       // DropTail queue per device
  double min_rto_s = 0.2;         // TcpSocketBase::MinRto
  // Receiver ACK policy: false acknowledges every segment; true is ns-3's (and RFC 1122's)
  // delayed ACK, every second segment or after 200 ms. See the .cpp for why false is the default.
  bool delayed_ack = false;
  double syn_timeout_s = 1.0;     // TcpSocket::ConnTimeout: wait before resending a lost SYN (RFC 6298)
  std::string tcp = "newreno";    // congestion control: newreno | cubic | bbr | dctcp (netmodels/ns3_tcp.h)
  bool slow_start_after_idle = true;  // Linux's default (net.ipv4.tcp_slow_start_after_idle)
  uint64_t seed = 0;              // ns-3 RNG run number, for loss models
};

// Builds the ns-3 nodes, links, stack and routes on construction. Connections
// between a pair of hosts are opened at first use and kept for the run, and a
// connection delivers its messages in order. Must be destroyed before `clock`;
// build at most one per clock (ns-3 nodes and addresses live until Simulator::Destroy).
std::unique_ptr<Network> make_ns3_network(EventClock& clock, const Topology& topology,
                                          const Ns3Options& options);

}  // namespace testbed
