// UDP datagrams for loss-tolerant messages: tagged, paced, and settled by ns-3's own drop traces.
#include "netmodels/ns3/ns3_datagrams.h"

#include <ns3/point-to-point-module.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace testbed {

namespace {

constexpr uint16_t kUdpPort = 5001;  // TCP listens on 5000
constexpr int kPppHeaderBytes = 2;   // what the point-to-point device adds to every packet
constexpr uint32_t kReceiveBuffer = 64u << 20;

// Which message a datagram belongs to and its place in it. A packet tag, not a header: the
// simulator needs it to tell datagrams apart, a real receiver would learn as much from a few
// header bytes that this model leaves out of the wire size.
class DatagramTag : public ns3::Tag {
 public:
  DatagramTag() = default;
  DatagramTag(uint64_t id, uint32_t index) : id_(id), index_(index) {}
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("testbed::DatagramTag").SetParent<ns3::Tag>().AddConstructor<DatagramTag>();
    return tid;
  }
  ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return 12; }
  void Serialize(ns3::TagBuffer b) const override {
    b.WriteU64(id_);
    b.WriteU32(index_);
  }
  void Deserialize(ns3::TagBuffer b) override {
    id_ = b.ReadU64();
    index_ = b.ReadU32();
  }
  void Print(std::ostream& os) const override { os << "message=" << id_ << " datagram=" << index_; }
  uint64_t id() const { return id_; }
  uint32_t index() const { return index_; }

 private:
  uint64_t id_ = 0;
  uint32_t index_ = 0;
};

}  // namespace

DatagramSplit split_into_datagrams(uint64_t bytes, double element_bytes, uint64_t max_payload) {
  if (!(element_bytes > 0))
    throw std::invalid_argument("datagrams: element_bytes must be > 0, got " + std::to_string(element_bytes));
  int64_t per = static_cast<int64_t>(std::floor(static_cast<double>(max_payload) / element_bytes));
  // Whole bytes per datagram: an fp4 datagram carries an even number of elements.
  while (per > 0 && std::fabs(per * element_bytes - std::round(per * element_bytes)) > 1e-9) --per;
  if (per < 1)
    throw std::invalid_argument("datagrams: an element of " + std::to_string(element_bytes) +
                                " bytes does not fit a datagram payload of " + std::to_string(max_payload));
  DatagramSplit s;
  s.elements_per_datagram = per;
  s.bytes_per_datagram = static_cast<uint64_t>(std::llround(per * element_bytes));
  const uint64_t count = (bytes + s.bytes_per_datagram - 1) / s.bytes_per_datagram;
  if (count > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("datagrams: message of " + std::to_string(bytes) + " bytes needs too many datagrams");
  s.count = static_cast<uint32_t>(count);
  return s;
}

Ns3Datagrams::Ns3Datagrams(const ns3::NodeContainer& nodes, int hosts, std::vector<ns3::Ipv4Address> host_address,
                           int mtu)
    : nodes_(nodes), hosts_(hosts), host_address_(std::move(host_address)) {
  using namespace ns3;
  if (mtu <= kUdpIpHeaderBytes) throw std::invalid_argument("datagrams: mtu " + std::to_string(mtu) + " too small");
  max_payload_ = static_cast<uint64_t>(mtu - kUdpIpHeaderBytes);  // one IP packet per datagram, never fragmented

  for (int h = 0; h < hosts_; ++h) {
    auto socket = Socket::CreateSocket(nodes_.Get(h), UdpSocketFactory::GetTypeId());
    socket->SetAttribute("RcvBufSize", UintegerValue(kReceiveBuffer));
    if (socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), kUdpPort)) != 0)
      throw std::runtime_error("datagrams: cannot bind UDP port on host " + std::to_string(h));
    socket->SetRecvCallback(Callback<void, Ptr<Socket>>([this, alive = alive_](Ptr<Socket> s) {
      if (*alive) on_receive(s);
    }));
    // A full receive buffer drops too (it should not happen: every datagram is read at once).
    socket->TraceConnectWithoutContext("Drop",
                                       Callback<void, Ptr<const Packet>>([this, alive = alive_](Ptr<const Packet> p) {
                                         if (*alive) settle(p, Fate::Lost);
                                       }));
    sockets_.push_back(socket);
  }

  // Every way a datagram can vanish fires one of these: the link's error model (PhyRxDrop at
  // the receiving device), a full DropTail queue (the queue's Drop) and IP itself (no route,
  // TTL). Knowing each datagram's fate, a message is settled exactly when its last datagram
  // is, with no timeout to tune.
  auto lost = Callback<void, Ptr<const Packet>>([this, alive = alive_](Ptr<const Packet> p) {
    if (*alive) settle(p, Fate::Lost);
  });
  for (uint32_t n = 0; n < nodes_.GetN(); ++n) {
    Ptr<Node> node = nodes_.Get(n);
    for (uint32_t d = 0; d < node->GetNDevices(); ++d) {
      auto device = DynamicCast<PointToPointNetDevice>(node->GetDevice(d));
      if (!device) continue;
      device->TraceConnectWithoutContext("PhyRxDrop", lost);
      device->GetQueue()->TraceConnectWithoutContext("Drop", lost);
    }
    if (auto ip = node->GetObject<Ipv4L3Protocol>()) {
      ip->TraceConnectWithoutContext(
          "Drop", Callback<void, const Ipv4Header&, Ptr<const Packet>, Ipv4L3Protocol::DropReason, Ptr<Ipv4>, uint32_t>(
                      [this, alive = alive_](const Ipv4Header&, Ptr<const Packet> p, Ipv4L3Protocol::DropReason,
                                             Ptr<Ipv4>, uint32_t) {
                        if (*alive) settle(p, Fate::Lost);
                      }));
    }
  }
}

Ns3Datagrams::~Ns3Datagrams() {
  using namespace ns3;
  *alive_ = false;
  for (auto& s : sockets_) s->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
}

void Ns3Datagrams::send(const Message& message, Network::OnDelivered on_delivered) {
  using namespace ns3;
  if (in_flight_.count(message.id))
    throw std::invalid_argument("ns3 datagrams: message id " + std::to_string(message.id) + " already in flight");
  InFlight f;
  f.message = message;
  f.t_send = Simulator::Now().GetSeconds();
  f.split = split_into_datagrams(message.bytes, message.element_bytes, max_payload_);
  f.fate.assign(f.split.count, Fate::Unknown);
  f.on_delivered = std::move(on_delivered);

  // UDP has no congestion control: a message's datagrams handed to the socket at once would
  // all land in the first device's queue and overflow it (a 1000-packet queue holds under
  // 9 MB at MTU 9000), turning every large message into self-inflicted loss that no real
  // sender would accept. So each host paces its datagrams at its first-hop link's rate, one
  // after another per outgoing device across all its messages: the first queue never grows
  // beyond a packet, and loss is what the path (error models, queues shared with other
  // traffic downstream) does to the datagrams.
  Ptr<Node> node = nodes_.Get(message.src);
  Ipv4Header header;
  header.SetDestination(host_address_[message.dst]);
  header.SetProtocol(UdpL4Protocol::PROT_NUMBER);
  Socket::SocketErrno error;
  Ptr<Ipv4Route> route =
      node->GetObject<Ipv4>()->GetRoutingProtocol()->RouteOutput(Create<Packet>(), header, nullptr, error);
  if (!route)
    throw std::runtime_error("ns3 datagrams: no route from host " + std::to_string(message.src) + " to " +
                             std::to_string(message.dst));
  Ptr<NetDevice> device = route->GetOutputDevice();
  DataRateValue rate;
  device->GetAttribute("DataRate", rate);
  Time& free_at = device_free_at_[device];
  Time at = std::max(Simulator::Now(), free_at);
  const uint64_t id = message.id;
  for (uint32_t i = 0; i < f.split.count; ++i) {
    const uint64_t payload =
        i + 1 < f.split.count ? f.split.bytes_per_datagram : message.bytes - uint64_t{i} * f.split.bytes_per_datagram;
    Simulator::Schedule(at - Simulator::Now(), [this, alive = alive_, id, i] {
      if (*alive) transmit(id, i);
    });
    at += rate.Get().CalculateBytesTxTime(static_cast<uint32_t>(payload + kUdpIpHeaderBytes + kPppHeaderBytes));
  }
  free_at = at;
  in_flight_.emplace(id, std::move(f));
}

void Ns3Datagrams::transmit(uint64_t id, uint32_t index) {
  using namespace ns3;
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return;
  const InFlight& f = it->second;
  const uint64_t payload = index + 1 < f.split.count ? f.split.bytes_per_datagram
                                                     : f.message.bytes - uint64_t{index} * f.split.bytes_per_datagram;
  auto packet = Create<Packet>(static_cast<uint32_t>(payload));  // zero-filled: ns-3 stores no bytes
  packet->AddPacketTag(DatagramTag(id, index));
  const int sent =
      sockets_[f.message.src]->SendTo(packet, 0, InetSocketAddress(host_address_[f.message.dst], kUdpPort));
  // A refused send is a datagram that never left (the drop traces above may have settled it).
  if (sent < 0) settle(packet, Fate::Lost);
}

void Ns3Datagrams::on_receive(ns3::Ptr<ns3::Socket> socket) {
  while (auto packet = socket->Recv(std::numeric_limits<uint32_t>::max(), 0)) settle(packet, Fate::Arrived);
}

void Ns3Datagrams::settle(ns3::Ptr<const ns3::Packet> packet, Fate fate) {
  DatagramTag tag;
  if (!packet->PeekPacketTag(tag)) return;  // TCP traffic
  auto it = in_flight_.find(tag.id());
  if (it == in_flight_.end()) return;
  InFlight& f = it->second;
  if (tag.index() >= f.fate.size() || f.fate[tag.index()] != Fate::Unknown) return;
  f.fate[tag.index()] = fate;
  if (++f.settled == f.split.count) finish(tag.id());
}

void Ns3Datagrams::finish(uint64_t id) {
  auto node = in_flight_.extract(id);
  InFlight& f = node.mapped();
  Delivery d;
  d.message = f.message;
  d.t_send = f.t_send;
  d.t_recv = ns3::Simulator::Now().GetSeconds();
  const double e = f.message.element_bytes;
  for (uint32_t i = 0; i < f.split.count; ++i) {
    if (f.fate[i] != Fate::Lost) continue;
    const uint64_t payload =
        i + 1 < f.split.count ? f.split.bytes_per_datagram : f.message.bytes - uint64_t{i} * f.split.bytes_per_datagram;
    d.lost_bytes += payload;
    const int64_t begin = int64_t{i} * f.split.elements_per_datagram;
    // The last datagram of an odd fp4 message ends in half a byte of padding: its range may
    // name one element past the message's end, which the receiver ignores.
    const int64_t end = begin + static_cast<int64_t>(std::ceil(static_cast<double>(payload) / e - 1e-9));
    if (!d.lost.empty() && d.lost.back().end == begin) {
      d.lost.back().end = end;
    } else {
      d.lost.push_back({begin, end});
    }
  }
  // In an event of its own, so a callback that sends again never runs inside a trace sink.
  ns3::Simulator::Schedule(ns3::Seconds(0), [alive = alive_, d = std::move(d), cb = std::move(f.on_delivered)] {
    if (*alive) cb(d);
  });
}

}  // namespace testbed
