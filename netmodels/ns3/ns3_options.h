// Everything the packet-level backend can be asked for, as plain data: transport, queues,
// TCP, outages, cross-traffic and captures. The ns-3 pieces (links, traces, faults,
// background traffic) read their part of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "netmodels/ns3_choices.h"
#include "topologies/routing.h"

namespace testbed {

// An outage: the link between vertices a and b, or every link of vertex `node` when
// node >= 0, is cut from down_s to up_s (simulated seconds).
struct Fault {
  int a = -1, b = -1;
  int node = -1;
  double down_s = 0, up_s = 0;
};

// Cross-traffic between vertices from start_s to stop_s (simulated seconds), its packets
// sharing the links with the training's (ns3_background.h). bulk: TCP sending as
// fast as its congestion control lets it; onoff: UDP at rate_bps (payload) during on_s, then
// silent for off_s, starting with an off spell as ns-3's OnOffApplication does.
struct BackgroundFlow {
  int from = 0, to = 0;
  BackgroundKind kind = BackgroundKind::Bulk;
  double rate_bps = 0;  // onoff only
  double on_s = 1, off_s = 1;
  double start_s = 0, stop_s = 0;
};

struct Ns3Options {
  // tcp: every message over TCP. udp: messages marked Message::datagrams go as paced UDP
  // datagrams and may lose parts (ns3_datagrams.h); all others still go over TCP.
  Transport transport = Transport::Tcp;
  int mtu = 9000;  // bytes; TCP segment size is mtu - 52
  // DropTail queue of each device (one per link direction): queue_bdp x the direction's
  // bandwidth x twice the link's latency, at least kMinQueuePackets MTU-sized packets
  // (netmodels/ns3/ns3_links.cpp says why); queue_bytes instead when > 0; queue_packets packets
  // instead when > 0 (the first of the three that is set wins, from the last).
  double queue_bdp = 1.5;
  uint64_t queue_bytes = 0;
  int queue_packets = 0;
  double min_rto_s = 0.2;  // TcpSocketBase::MinRto
  // Receiver ACK policy: false acknowledges every segment; true is ns-3's (and RFC 1122's)
  // delayed ACK, every second segment or after 200 ms. See the .cpp for why false is the default.
  bool delayed_ack = false;
  double syn_timeout_s = 1.0;            // TcpSocket::ConnTimeout: wait before resending a lost SYN (RFC 6298)
  TcpVariant tcp = TcpVariant::NewReno;  // congestion control (netmodels/ns3/ns3_tcp.h)
  bool slow_start_after_idle = true;     // Linux's default (net.ipv4.tcp_slow_start_after_idle)
  uint64_t seed = 0;                     // ns-3 RNG run number, for loss models
  // Which of the minimum-hop paths each (source, destination) pair's packets take
  // (netmodels/ns3/ns3_routing.h); ns-3's own global routing is not used.
  RoutingOptions routing;
  std::vector<Fault> faults;               // outages (netmodels/ns3/ns3_faults.cpp)
  std::vector<BackgroundFlow> background;  // cross-traffic (netmodels/ns3/ns3_background.cpp)
  std::string pcap_dir;      // non-empty: pcap of every link device, <pcap_dir>/link-<vertex>-<device>.pcap
  std::string flowmon_file;  // non-empty: FlowMonitor statistics as XML there, written when the network is destroyed
  bool count_link_bytes = false;  // Network::link_bytes(): count every packet each device transmits
  // Memoization (comm/phase_memo.h): hold the network's clock whenever every message has
  // been delivered, so that its state then can be described (Network::held_state) and a replay
  // can stand in for it. Exact either way: a held network catches up at its next use.
  bool hold_when_idle = false;
  // Tests' fault injection: ns-3's own NS_FATAL_ERROR at this simulated time (< 0: never), so
  // the path an ns-3 fatal error takes to the user (sim/tools/cli.cpp) can be tested.
  double fatal_error_at_s = -1;
};

}  // namespace testbed
