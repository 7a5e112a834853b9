// Packet-level network backend: topology links as ns-3 point-to-point links, messages over TCP.
#include "netmodels/ns3/ns3_network.h"

#include <ns3/core-module.h>
#include <ns3/flow-monitor-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "netmodels/network_hold.h"
#include "netmodels/ns3/ns3_background.h"
#include "netmodels/ns3/ns3_datagrams.h"
#include "netmodels/ns3/ns3_faults.h"
#include "netmodels/ns3/ns3_jitter.h"
#include "netmodels/ns3/ns3_links.h"
#include "netmodels/ns3/ns3_routing.h"
#include "netmodels/ns3/ns3_tcp.h"
#include "netmodels/ns3/ns3_traces.h"
#include "topologies/routing.h"

namespace testbed {

namespace {

constexpr uint16_t kPort = 5000;
constexpr int kTcpIpHeaderBytes = 52;  // IPv4 20 + TCP 20 + timestamp option 12
constexpr uint64_t kMinSocketBuffer = 4u << 20;
constexpr uint64_t kLargestTcpWindow = uint64_t{65535} << 14;  // RFC 7323's window scale of at most 14
// Each ns-3 object that draws random numbers gets its own fixed stream, so
// results depend on the seed only, never on what ran earlier in the process.
constexpr int64_t kStreamsPerSeed = int64_t{1} << 24;

// Largest round-trip propagation delay between two hosts along minimum-hop paths, to size
// the TCP buffers. One BFS per host rather than one path query per pair, so large topologies
// stay cheap. With `every_path` (ecmp, which may take any of them) the slowest of each pair's
// minimum-hop paths; otherwise the one BFS reaches first, as before ecmp existed, so that
// shortest's buffers keep their sizes (that path need not be shortest_path's where
// minimum-hop paths differ in latency; the buffers' factor 2 is the margin).
double max_host_rtt(const Topology& topology, bool every_path) {
  const auto& g = topology.graph;
  const int nv = topology.num_vertices(), hosts = topology.num_hosts();  // num_hosts counts: once
  double worst = 0;
  std::vector<double> latency(nv);
  std::vector<int> hops(nv);
  std::deque<int> queue;
  for (int s = 0; s < hosts; ++s) {
    std::fill(hops.begin(), hops.end(), -1);
    latency[s] = 0;
    hops[s] = 0;
    queue.assign(1, s);
    while (!queue.empty()) {
      const int u = queue.front();
      queue.pop_front();
      for (auto e : boost::make_iterator_range(boost::out_edges(u, g))) {
        const int v = static_cast<int>(boost::target(e, g));
        const double via_u = latency[u] + g[e].latency_s + g[e].jitter_s;  // the slowest a packet can be
        if (hops[v] < 0) {
          hops[v] = hops[u] + 1;
          latency[v] = via_u;
          queue.push_back(v);
        } else if (every_path && hops[v] == hops[u] + 1) {
          latency[v] = std::max(latency[v], via_u);
        }
      }
    }
    for (int d = 0; d < hosts; ++d) worst = std::max(worst, latency[d]);
  }
  return 2 * worst;
}

class Ns3Network final : public Network, public NetworkHold {
 public:
  Ns3Network(EventClock& clock, const Topology& topology, const Ns3Options& options);
  ~Ns3Network() override;

  void send(const Message& message, OnDelivered on_delivered) override;
  std::string name() const override { return "ns3"; }
  LinkBytes link_bytes() const override { return *link_bytes_; }
  NetworkHold* hold() override { return this; }
  std::optional<HeldState> held_state(const std::vector<HostPair>& pairs) const override;
  bool can_replay() const override { return holds_; }
  void shift_held(int64_t ticks) override;
  void settle() override;
  std::optional<QuietState> quiet_state(const std::vector<HostPair>& pairs) const override;
  void shift_quiet(int64_t ticks, const std::vector<HostPair>& pairs, const std::vector<int64_t>& last_sent) override;

 private:
  struct Pending {
    Message message;
    uint64_t end = 0;  // cumulative byte offset on the connection where it ends
    double t_send = 0;
    OnDelivered on_delivered;
    double not_before = 0;  // a transport below line rate could not have handed it over earlier (paced_arrival)
  };
  // An ACK on its way back to the sender (ns-3 times), seen leaving the receiver.
  struct AckInFlight {
    int64_t sent = 0;
    uint32_t ack = 0;    // its acknowledgement number
    uint32_t bytes = 0;  // the packet's size at TCP (header and options)
  };
  struct AckTail {
    std::deque<AckInFlight> acks;
    bool lost_track = false;  // one arrived that was not the oldest on its way (a drop)
  };
  // One persistent TCP connection from src to dst, carrying a FIFO of messages
  // as one continuous byte stream.
  struct Connection {
    int src = 0, dst = 0;
    ns3::Ptr<ns3::Socket> tx;
    uint64_t enqueued = 0;  // bytes of all messages send() accepted
    uint64_t written = 0;   // bytes handed to the socket
    uint64_t received = 0;  // bytes read at the receiver
    std::deque<Pending> pending;
    double paced_until = 0;           // when a transport below line rate has put out what it was given (paced_arrival)
    ns3::Ptr<LinuxTcpBehaviour> tcp;  // its congestion control, and the state memoization reads
    std::shared_ptr<AckTail> tail = std::make_shared<AckTail>();  // shared with the sockets' traces
  };

  std::vector<ns3::Ipv4Address> build_links(ns3::PointToPointHelper& p2p);
  void listen();
  void listen_at(int vertex);
  Connection& connection(int src, int dst);
  void fill(Connection& c);
  void on_accept(int dst, ns3::Ptr<ns3::Socket> socket, const ns3::Address& from);
  void on_receive(Connection& c, ns3::Ptr<ns3::Socket> socket);
  void deliver_later(Pending p, double delay_s);
  // A message whose sender's transport reaches less than its route's bottleneck
  // (Message::rate_limit): the packets still cross at line rate, but the library could not hand
  // it over before its wire bytes had gone at that rate after `paced_until` (moved on: the
  // connection's stream), plus the route's latency. The earliest handover, in seconds.
  double paced_arrival(const Message& message, double& paced_until);
  // The route's latency and bottleneck from src to dst, found at the pair's first use.
  const PathProperties& path_of(int src, int dst);
  // Holds the clock: the held world stands for now.
  void hold_clock();
  // The RTT estimate moves with ns-3's millisecond TCP timestamps, so it is not a pure function
  // of relative time; it only acts through the RTO, which stays at MinRto while the smoothed
  // RTT is far below it. Beyond that, two phases could time out differently: not memoizable.
  bool rto_at_floor(const LinuxTcpBehaviour& tcp) const {
    return tcp.rto() == ns3::Seconds(options_.min_rto_s) && tcp.smoothed_rtt() * 4 <= tcp.rto();
  }

  EventClock& clock_;
  int hosts_;
  uint32_t segment_;
  Topology topology_;
  ns3::NodeContainer nodes_;
  std::vector<ns3::Ipv4Address> host_address_;           // where to connect to reach host i
  std::vector<ns3::Ipv4Address> endpoint_address_;       // every vertex's: its host address, or a switch's first link's
  bool bind_host_address_ = false;                       // connections also send from it
  std::unordered_map<uint32_t, int> vertex_of_address_;  // interface address -> vertex
  std::vector<ns3::Ptr<ns3::Socket>> listeners_;
  std::set<int> listening_;  // vertices with a listener: every host, and switches sent to
  std::vector<ns3::Ptr<ns3::Socket>> accepted_;
  std::map<std::pair<int, int>, std::unique_ptr<Connection>> connections_;
  std::map<std::pair<int, int>, PathProperties> paths_;  // path_of's, by (src, dst)
  Ns3Options options_;
  ns3::ObjectFactory congestion_control_;
  // Whether the network's future is a function of held_state(): links that stay as they
  // are (no random loss, no faults: static_links), a
  // variant whose state is all in cwnd/ssthresh (CUBIC keys on wall time, BBR and DCTCP
  // on estimators), immediate ACKs (a delayed ACK timer may be pending at any moment).
  bool memoizable_ = false;
  // Hold the clock whenever nothing is undelivered (Ns3Options::hold_when_idle) where nothing
  // but the traffic moves the network: memoizable, and no trace that reads ns-3's own time.
  bool holds_ = false;
  int64_t held_at_ = 0;                      // engine ticks the held world stands for (shift_held moves it)
  uint64_t undelivered_ = 0;                 // messages accepted by send() and not yet handed back
  uint64_t messages_ = 0;                    // messages accepted by send()
  std::unique_ptr<Ns3Datagrams> datagrams_;  // transport udp: loss-tolerant messages
  std::unique_ptr<ns3::FlowMonitorHelper> flowmon_helper_;  // owns the classifier the XML names flows by
  ns3::Ptr<ns3::FlowMonitor> flowmon_;
  // Filled by the devices' transmit traces, which outlive this object (count_link_bytes).
  std::shared_ptr<LinkBytes> link_bytes_ = std::make_shared<LinkBytes>();
  // Events scheduled by this object check it so that they do nothing once it is gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Options a packet-level network cannot be built with (the loader rejects them earlier,
// with the scenario's position; this guards direct callers).
void check_options(const Ns3Options& options) {
  if (options.mtu <= kTcpIpHeaderBytes + 100 || options.mtu > 65535)
    throw std::invalid_argument("mtu must be in (152, 65535], got " + std::to_string(options.mtu));
  if (options.queue_packets < 0) throw std::invalid_argument("queue_packets must be >= 0");
  if (!(options.queue_bdp > 0)) throw std::invalid_argument("queue_bdp must be > 0");
  if (!(options.min_rto_s > 0)) throw std::invalid_argument("min_rto_s must be > 0");
  if (!(options.syn_timeout_s > 0)) throw std::invalid_argument("syn_timeout_s must be > 0");
}

// Socket buffers of twice the worst bandwidth-delay product keep any single flow
// window-unlimited; larger ones only slow ns-3 down. At most TCP's largest window (65 535 bytes
// scaled by 2^14): a window is all a sender can use, and ns-3 keeps a receive buffer's end as a
// 32-bit sequence number, so a buffer of 2^31 bytes or more (an NVLink-fast link's product with
// a WAN's delay) wraps it and the receiver drops every segment as out of its window.
uint32_t socket_buffer_bytes(const Topology& topology, const Ns3Options& options) {
  double max_bps = 0;
  for (auto e : boost::make_iterator_range(boost::edges(topology.graph)))
    max_bps = std::max(max_bps, topology.graph[e].max_rate_bps());  // traces included
  const double bdp_bytes = max_bps / 8 * max_host_rtt(topology, options.routing.policy == RoutingPolicy::Ecmp);
  const uint64_t buffer = std::max<uint64_t>(kMinSocketBuffer, static_cast<uint64_t>(2 * bdp_bytes));
  return static_cast<uint32_t>(std::min<uint64_t>(buffer, kLargestTcpWindow));
}

// ns-3 reads its TCP defaults when a socket is created, process-wide: they are set here, once
// per network, before any socket exists.
void set_tcp_defaults(const Ns3Options& options, const ns3::TypeId& variant, uint32_t segment, uint32_t buffer) {
  using namespace ns3;
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(variant));
  // BBR paces by design; DCTCP negotiates ECN (it only departs from Reno where a queue marks).
  Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(options.tcp == TcpVariant::Bbr));
  Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(options.tcp == TcpVariant::Dctcp ? "On" : "Off"));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buffer));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buffer));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(options.min_rto_s)));
  // Delayed ACKs trap ns-3.37 after a tail loss: only the RTO recovers it, cwnd drops to one
  // segment, and that lone retransmission's ACK waits for DelAckTimeout (200 ms) at the
  // receiver, so it arrives after the RTO (200 ms + RTT) has fired again. ns-3 then leaves
  // CA_LOSS with cwnd still one segment and every later segment repeats the cycle: the
  // connection never recovers (~2 s per 80 kB message at 1 % loss instead of ~16 ms).
  // Acknowledging every segment removes the race at any MinRto and RTT, and matches what
  // Linux does in quick-ack mode after a loss. Nagle stays off (ns-3's TcpNoDelay default):
  // with it on, a lost sub-MSS tail is never retransmitted.
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(options.delayed_ack ? 2 : 1));
  Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
  // ns-3 waits 3 s before resending a lost SYN; RFC 6298 (2.1) says 1 s.
  Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(options.syn_timeout_s)));
}

Ns3Network::Ns3Network(EventClock& clock, const Topology& topology, const Ns3Options& options)
    : clock_(clock), hosts_(topology.num_hosts()), topology_(topology), options_(options) {
  check_options(options);
  segment_ = static_cast<uint32_t>(options.mtu - kTcpIpHeaderBytes);
  const ns3::TypeId variant = tcp_variant(options.tcp);
  congestion_control_.SetTypeId(variant);
  set_tcp_defaults(options, variant, segment_, socket_buffer_bytes(topology, options));
  memoizable_ = static_links(topology, options) && !options.delayed_ack && options.tcp == TcpVariant::NewReno;
  holds_ = options.hold_when_idle && memoizable_ && options.transport == Transport::Tcp && options.pcap_dir.empty() &&
           options.flowmon_file.empty() && options.fatal_error_at_s < 0;

  ns3::PointToPointHelper p2p;
  const std::vector<ns3::Ipv4Address> vertex_address = build_links(p2p);
  if (!options.faults.empty()) {
    // A link's address dies with the link; hosts need one that survives (ns3_faults.cpp).
    host_address_ = stable_host_addresses(nodes_, hosts_);
    for (int h = 0; h < hosts_; ++h) vertex_of_address_[host_address_[h].Get()] = h;
    bind_host_address_ = true;
  }
  // Instead of ns-3's global routing, whose tie-breaking and per-packet ECMP differ from what
  // the other backends charge: every pair's packets follow topologies/routing.h's path.
  install_path_routing(nodes_, topology, options.routing, vertex_of_address_,
                       bind_host_address_ ? host_address_ : std::vector<ns3::Ipv4Address>{});
  if (options.transport == Transport::Udp)
    datagrams_ = std::make_unique<Ns3Datagrams>(nodes_, hosts_, host_address_, options.mtu);
  install_faults(nodes_, topology, options.faults);
  endpoint_address_ = vertex_address;  // hosts at their own address, switches at their first link's
  std::copy(host_address_.begin(), host_address_.end(), endpoint_address_.begin());
  install_background(nodes_, endpoint_address_, options.background, options.mtu);
  if (!options.pcap_dir.empty()) p2p.EnablePcapAll(options.pcap_dir + "/link");
  if (!options.flowmon_file.empty()) {
    flowmon_helper_ = std::make_unique<ns3::FlowMonitorHelper>();
    flowmon_ = flowmon_helper_->InstallAll();
  }
  if (options.fatal_error_at_s >= 0) {
    ns3::Simulator::Schedule(ns3::Seconds(options.fatal_error_at_s),
                             [] { NS_FATAL_ERROR("fault injected by TESTBED_NS3_FATAL_AT"); });
  }
  listen();
  // Nothing sent yet: the world at tick 0 (its nodes' start-up events wait for the first send).
  if (holds_) hold_clock();
}

// Nodes, the internet stack, and a point-to-point link (devices, queues, loss, trace,
// addresses) per topology link. Returns each vertex's first interface address.
std::vector<ns3::Ipv4Address> Ns3Network::build_links(ns3::PointToPointHelper& p2p) {
  using namespace ns3;
  nodes_.Create(topology_.num_vertices());
  InternetStackHelper stack;
  stack.Install(nodes_);
  // A switch checks whether a packet is its own on the interface it came in by (the strong end
  // system model), not on every interface: a star's switch has one per host, and the weak
  // model's scan of them all made each forwarded packet cost O(hosts). PathRouting delivers a
  // packet for the switch that came in by another interface (background traffic may address one).
  for (int v = 0; v < topology_.num_vertices(); ++v)
    if (topology_.graph[v].kind == VertexKind::Switch)
      nodes_.Get(v)->GetObject<Ipv4>()->SetAttribute("WeakEsModel", BooleanValue(false));
  p2p.SetDeviceAttribute("Mtu", UintegerValue(options_.mtu));
  p2p.SetQueue("ns3::DropTailQueue<Packet>");  // sized per device by configure_link_devices
  Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
  int64_t stream = static_cast<int64_t>(options_.seed) * kStreamsPerSeed;
  stream += stack.AssignStreams(nodes_, stream);

  host_address_.resize(hosts_);
  std::vector<Ipv4Address> vertex_address(topology_.num_vertices());
  for (auto e : boost::make_iterator_range(boost::edges(topology_.graph))) {
    const LinkSpec& link = topology_.graph[e];
    const int a = static_cast<int>(boost::source(e, topology_.graph));
    const int b = static_cast<int>(boost::target(e, topology_.graph));
    NetDeviceContainer devices;
    if (link.jitter_s > 0) {
      devices = install_jitter_link(nodes_.Get(a), nodes_.Get(b), link, options_.mtu);
    } else {
      p2p.SetChannelAttribute("Delay", TimeValue(Seconds(link.latency_s)));
      devices = p2p.Install(nodes_.Get(a), nodes_.Get(b));
    }
    configure_link_devices(devices, a, b, link, options_, stream);
    install_bandwidth_trace(devices, link, options_);
    Ipv4InterfaceContainer interfaces = addresses.Assign(devices);
    addresses.NewNetwork();
    const int ends[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      if (options_.count_link_bytes)
        devices.Get(i)->TraceConnectWithoutContext(
            "PhyTxEnd",
            Callback<void, Ptr<const Packet>>([count = link_bytes_, key = std::make_pair(ends[i], ends[1 - i])](
                                                  Ptr<const Packet> p) { (*count)[key] += p->GetSize(); }));
      const Ipv4Address address = interfaces.GetAddress(i);
      vertex_of_address_[address.Get()] = ends[i];
      if (ends[i] < hosts_ && host_address_[ends[i]] == Ipv4Address()) host_address_[ends[i]] = address;
      if (vertex_address[ends[i]] == Ipv4Address()) vertex_address[ends[i]] = address;
    }
  }
  return vertex_address;
}

// Every host accepts connections from all others on one port; the peer address tells which
// connection an accepted socket belongs to.
void Ns3Network::listen() {
  for (int h = 0; h < hosts_; ++h) listen_at(h);
}

// A switch that receives messages (a federated server) listens from its first one on: the SYN
// comes a link's latency after.
void Ns3Network::listen_at(int vertex) {
  using namespace ns3;
  if (!listening_.insert(vertex).second) return;
  auto listener = Socket::CreateSocket(nodes_.Get(vertex), TcpSocketFactory::GetTypeId());
  listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
  listener->Listen();
  listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                              Callback<void, Ptr<Socket>, const Address&>(
                                  [this, vertex](Ptr<Socket> s, const Address& from) { on_accept(vertex, s, from); }));
  listeners_.push_back(listener);
}

Ns3Network::~Ns3Network() {
  using namespace ns3;
  *alive_ = false;
  if (flowmon_) {
    // Packets still in flight count as lost only after FlowMonitor's MaxPerHopDelay (10 s).
    flowmon_->CheckForLostPackets();
    flowmon_->SerializeToXmlFile(options_.flowmon_file, true, true);
  }
  // The sockets live on in ns-3 until Simulator::Destroy; stop them calling back into us.
  for (auto& s : listeners_)
    s->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                         MakeNullCallback<void, Ptr<Socket>, const Address&>());
  for (auto& s : accepted_) s->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
  for (auto& [key, c] : connections_) {
    c->tx->SetSendCallback(MakeNullCallback<void, Ptr<Socket>, uint32_t>());
    c->tx->SetConnectCallback(MakeNullCallback<void, Ptr<Socket>>(), MakeNullCallback<void, Ptr<Socket>>());
  }
}

Ns3Network::Connection& Ns3Network::connection(int src, int dst) {
  using namespace ns3;
  auto& slot = connections_[{src, dst}];
  if (slot) return *slot;
  slot = std::make_unique<Connection>();
  Connection& c = *slot;
  c.src = src;
  c.dst = dst;
  c.tx = Socket::CreateSocket(nodes_.Get(src), TcpSocketFactory::GetTypeId());
  auto tcp_socket = DynamicCast<TcpSocketBase>(c.tx);
  UintegerValue initial_cwnd;
  tcp_socket->GetAttribute("InitialCwnd", initial_cwnd);
  c.tcp = CreateObject<LinuxTcpBehaviour>(congestion_control_.Create<TcpCongestionOps>(),
                                          options_.slow_start_after_idle, static_cast<uint32_t>(initial_cwnd.Get()));
  tcp_socket->SetCongestionControlAlgorithm(c.tcp);
  // The last data sent and the current RTO decide a restart after idle (ns3_tcp.h).
  tcp_socket->TraceConnectWithoutContext(
      "Tx", Callback<void, Ptr<const Packet>, const TcpHeader&, Ptr<const TcpSocketBase>>(
                [tcp = c.tcp](Ptr<const Packet> p, const TcpHeader&, Ptr<const TcpSocketBase>) {
                  if (p->GetSize() > 0) tcp->on_data_sent(Simulator::Now());
                }));
  tcp_socket->TraceConnectWithoutContext(
      "RTO", Callback<void, Time, Time>([tcp = c.tcp](Time, Time rto) { tcp->on_rto(rto); }));
  // The connection's last ACK: when a memoized phase's traffic went quiet (QuietState), and
  // which of the ACKs on their way it was (held_state).
  tcp_socket->TraceConnectWithoutContext(
      "Rx", Callback<void, Ptr<const Packet>, const TcpHeader&, Ptr<const TcpSocketBase>>(
                [tcp = c.tcp, tail = c.tail](Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
                  tcp->on_segment_received(Simulator::Now());
                  // ACKs of a static route arrive in the order they left; one that is not the
                  // oldest on its way means another was dropped.
                  if (tail->acks.empty()) return;  // the handshake's, sent before the trace
                  const AckInFlight& oldest = tail->acks.front();
                  if (oldest.ack != h.GetAckNumber().GetValue() || oldest.bytes != p->GetSize() + h.GetSerializedSize())
                    tail->lost_track = true;
                  tail->acks.pop_front();
                }));
  if (bind_host_address_ && src < hosts_) {
    c.tx->Bind(InetSocketAddress(host_address_[src], 0));
  } else {
    c.tx->Bind();
  }
  auto refill = [this, &c](Ptr<Socket>) { fill(c); };
  c.tx->SetConnectCallback(Callback<void, Ptr<Socket>>(refill), Callback<void, Ptr<Socket>>([src, dst](Ptr<Socket>) {
                             NS_FATAL_ERROR("ns3 network: TCP connection " << src << " -> " << dst << " failed");
                           }));
  c.tx->SetSendCallback(Callback<void, Ptr<Socket>, uint32_t>([this, &c](Ptr<Socket>, uint32_t) { fill(c); }));
  c.tx->Connect(InetSocketAddress(endpoint_address_[dst], kPort));
  return c;
}

void Ns3Network::fill(Connection& c) {
  // TCP accepts data already in SYN_SENT, so this also runs before the handshake ends.
  while (c.written < c.enqueued) {
    const uint32_t room = c.tx->GetTxAvailable();
    if (room == 0) return;  // the send callback calls again when ACKs free space
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({c.enqueued - c.written, segment_, room}));
    // Zero-filled packets: ns-3 stores no payload bytes for them.
    const int sent = c.tx->Send(ns3::Create<ns3::Packet>(n));
    if (sent <= 0) return;
    c.written += static_cast<uint64_t>(sent);
  }
}

void Ns3Network::on_accept(int dst, ns3::Ptr<ns3::Socket> socket, const ns3::Address& from) {
  using namespace ns3;
  const uint32_t ip = InetSocketAddress::ConvertFrom(from).GetIpv4().Get();
  const auto it = vertex_of_address_.find(ip);
  NS_ABORT_MSG_IF(it == vertex_of_address_.end(), "ns3 network: connection from unknown address");
  Connection& c = connection(it->second, dst);
  accepted_.push_back(socket);
  // What the receiver sends back (ACKs only: it sends no data), so that a held network can
  // say which ACKs are still on their way (held_state).
  socket->TraceConnectWithoutContext(
      "Tx", Callback<void, Ptr<const Packet>, const TcpHeader&, Ptr<const TcpSocketBase>>(
                [tail = c.tail](Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
                  tail->acks.push_back({Simulator::Now().GetTimeStep(), h.GetAckNumber().GetValue(),
                                        p->GetSize() + h.GetSerializedSize()});
                }));
  socket->SetRecvCallback(Callback<void, Ptr<Socket>>([this, &c](Ptr<Socket> s) { on_receive(c, s); }));
}

void Ns3Network::on_receive(Connection& c, ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv(std::numeric_limits<uint32_t>::max(), 0)) {
    if (packet->GetSize() == 0) break;
    c.received += packet->GetSize();
  }
  while (!c.pending.empty() && c.received >= c.pending.front().end) {
    const double wait = std::max(0.0, c.pending.front().not_before - clock_.now());
    deliver_later(std::move(c.pending.front()), wait);
    c.pending.pop_front();
  }
}

void Ns3Network::deliver_later(Pending p, double delay_s) {
  // Deliver in an event of its own so callbacks that send() never re-enter
  // the TCP socket that is calling us.
  ns3::Simulator::Schedule(ns3::Seconds(delay_s), [this, alive = alive_, p = std::move(p)]() {
    if (!*alive) return;
    --undelivered_;
    Delivery d{p.message, p.t_send, clock_.now(), 0, {}};
    p.on_delivered(d);
    if (holds_ && undelivered_ == 0 && !clock_.network_held()) {
      // Everything handed back: until its next use, nothing the network does reaches the
      // engine, so its clock may wait (and a replay may stand in for what comes next).
      hold_clock();
    }
  });
}

void Ns3Network::send(const Message& message, OnDelivered on_delivered) {
  const int vertices = topology_.num_vertices();
  if (message.src < 0 || message.src >= vertices || message.dst < 0 || message.dst >= vertices)
    throw std::invalid_argument("ns3 network: message " + std::to_string(message.id) + " names a vertex outside 0.." +
                                std::to_string(vertices - 1));
  check_rate_limit(message, "ns3 network");
  // A held network first catches up with the time it has been held.
  if (clock_.network_held()) clock_.resume_network();
  Pending p{message, 0, clock_.now(), std::move(on_delivered)};
  ++undelivered_;
  ++messages_;
  if (message.src == message.dst) {
    deliver_later(std::move(p), 0);  // a host talking to itself crosses no network
    return;
  }
  if (message.bytes == 0) {
    // An empty message carries no bytes on the connection: it costs the
    // path's one-way propagation delay and is not ordered with the stream.
    deliver_later(std::move(p), path_of(message.src, message.dst).latency_s);
    return;
  }
  if (message.datagrams && datagrams_) {
    double unpaced = clock_.now();
    const double not_before = message.rate_limit.any() ? paced_arrival(message, unpaced) : 0;
    datagrams_->send(message, [this, alive = alive_, not_before,
                               on_delivered = std::move(p.on_delivered)](const Delivery& d) mutable {
      if (!*alive) return on_delivered(d);
      const double wait = not_before - clock_.now();
      if (wait <= 0) {
        --undelivered_;
        return on_delivered(d);
      }
      ns3::Simulator::Schedule(ns3::Seconds(wait), [this, alive, d, on_delivered = std::move(on_delivered)]() {
        if (*alive) --undelivered_;
        Delivery late = d;
        late.t_recv = clock_.now();
        on_delivered(late);
      });
    });
    return;
  }
  if (message.dst >= hosts_) listen_at(message.dst);
  Connection& c = connection(message.src, message.dst);
  if (message.rate_limit.any()) p.not_before = paced_arrival(message, c.paced_until);
  c.enqueued += message.bytes;
  p.end = c.enqueued;
  c.pending.push_back(std::move(p));
  fill(c);
}

const PathProperties& Ns3Network::path_of(int src, int dst) {
  auto it = paths_.find({src, dst});
  if (it == paths_.end())
    it = paths_.emplace(std::pair{src, dst}, path_properties(topology_, route(topology_, src, dst, options_.routing)))
             .first;
  return it->second;
}

double Ns3Network::paced_arrival(const Message& message, double& paced_until) {
  const PathProperties& path = path_of(message.src, message.dst);
  // Wire bytes as TCP puts them out: each segment of payload with its IPv4, TCP and
  // point-to-point headers.
  const double wire_bytes = static_cast<double>(message.bytes) * (options_.mtu + 2.0) /
                            (options_.mtu - static_cast<double>(kTcpIpHeaderBytes));
  paced_until = std::max(paced_until, clock_.now()) + wire_bytes * 8 / message.rate_limit.of(path.bottleneck_bps);
  return paced_until + path.latency_s;
}

std::optional<HeldState> Ns3Network::held_state(const std::vector<HostPair>& pairs) const {
  if (!holds_ || !clock_.network_held() || undelivered_ > 0) return std::nullopt;
  // ns-3 times: the held world's own clock stands still at its hold.
  const int64_t now = ns3::Simulator::Now().GetTimeStep();
  HeldState h;
  h.held_at = held_at_;
  h.messages = messages_;
  std::string& out = h.state;
  // Every connection, not only the pairs': the held world stands for a later one as a whole,
  // so each one's state (and the ACKs it still has on their way) must be the same then.
  for (const auto& [key, c] : connections_) {
    out += std::to_string(key.first) + '>' + std::to_string(key.second) + ':';
    if (c->tail->lost_track) return std::nullopt;
    const LinuxTcpBehaviour& tcp = *c->tcp;
    if (!rto_at_floor(tcp)) return std::nullopt;
    out += tcp.state() + ';';
    if (options_.slow_start_after_idle)
      out += std::to_string(tcp.sent_data() ? now - tcp.last_data_sent().GetTimeStep() : -1) + ';';
    // The ACK tail: how long ago each left the receiver (it decides where it is now), what it
    // acknowledges counted back from the last (the sender's bytes in flight), its size.
    const auto& acks = c->tail->acks;
    // Nothing else on its way: the last ACK acknowledges every byte the sender has sent (no data
    // left in flight), or, with none on its way, every byte is acknowledged already.
    if (acks.empty() ? tcp.bytes_in_flight() > 0 : acks.back().ack != tcp.high_tx_mark()) return std::nullopt;
    for (const AckInFlight& a : acks) {
      const uint32_t back = acks.back().ack - a.ack;
      out += std::to_string(now - a.sent) + '/' + std::to_string(back) + '/' + std::to_string(a.bytes) + ',';
    }
    out += std::to_string(tcp.bytes_in_flight()) + ';';
  }
  // The pairs the phase will use, existing or to be opened (a fresh, deterministic handshake).
  for (const auto& pair : pairs) out += '|' + std::to_string(pair.first) + '>' + std::to_string(pair.second);
  return h;
}

void Ns3Network::shift_held(int64_t ticks) {
  clock_.shift_network(ticks);
  held_at_ += ticks;
}

void Ns3Network::settle() {
  if (!holds_ || !clock_.network_held() || undelivered_ > 0) return;
  clock_.resume_network();
  hold_clock();
}

void Ns3Network::hold_clock() {
  clock_.hold_network();
  held_at_ = clock_.now_ticks();
}

std::optional<QuietState> Ns3Network::quiet_state(const std::vector<HostPair>& pairs) const {
  if (!holds_ || !clock_.network_held() || undelivered_ > 0 || held_at_ != clock_.now_ticks()) return std::nullopt;
  for (const auto& [key, c] : connections_) {
    // Every byte acknowledged: no data, no ACK anywhere on the links.
    if (c->tail->lost_track || !c->tail->acks.empty() || c->tcp->bytes_in_flight() > 0) return std::nullopt;
  }
  const int64_t lag = clock_.network_lag_ticks();
  const int64_t now = held_at_;
  QuietState q;
  for (const auto& pair : pairs) {
    auto it = connections_.find(pair);
    q.state += std::to_string(pair.first) + '>' + std::to_string(pair.second) + ':';
    if (it == connections_.end()) {  // opened at first use: a fresh, deterministic handshake
      q.state += "new;";
      q.last_sent_ticks.push_back(-1);
      if (options_.slow_start_after_idle) q.idle_ticks.push_back(-1);
      continue;
    }
    const LinuxTcpBehaviour& tcp = *it->second->tcp;
    if (!rto_at_floor(tcp)) return std::nullopt;
    q.state += tcp.state() + ';';
    if (tcp.received()) q.quiet_since_ticks = std::max(q.quiet_since_ticks, tcp.last_received().GetTimeStep() + lag);
    const int64_t last = tcp.sent_data() ? tcp.last_data_sent().GetTimeStep() + lag : -1;
    q.last_sent_ticks.push_back(last);
    if (options_.slow_start_after_idle) q.idle_ticks.push_back(last < 0 ? -1 : now - last);
  }
  return q;
}

void Ns3Network::shift_quiet(int64_t ticks, const std::vector<HostPair>& pairs, const std::vector<int64_t>& last_sent) {
  // Every connection's last data in the engine's ticks, before the lag grows.
  const int64_t before = clock_.network_lag_ticks();
  std::map<HostPair, int64_t> last;
  for (const auto& [key, c] : connections_)
    if (c->tcp->sent_data()) last[key] = c->tcp->last_data_sent().GetTimeStep() + before;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (last_sent.at(i) >= 0) last[pairs[i]] = last_sent[i];
  shift_held(ticks);
  const int64_t after = clock_.network_lag_ticks();
  for (const auto& [key, t] : last) {
    auto it = connections_.find(key);
    if (it != connections_.end()) it->second->tcp->set_last_data_sent(ns3::TimeStep(t - after));
  }
}

}  // namespace

std::string ns3_version() { return TESTBED_NS3_VERSION; }

bool static_links(const Topology& topology, const Ns3Options& options) {
  if (!options.faults.empty() || !options.background.empty()) return false;
  for (auto e : boost::make_iterator_range(boost::edges(topology.graph)))
    if (topology.graph[e].mean_loss() > 0 || !topology.graph[e].trace.empty() || topology.graph[e].jitter_s > 0)
      return false;
  return true;
}

std::unique_ptr<Network> make_ns3_network(EventClock& clock, const Topology& topology, const Ns3Options& options) {
  return std::make_unique<Ns3Network>(clock, topology, options);
}

}  // namespace testbed
