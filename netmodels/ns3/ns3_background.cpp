// Cross-traffic from ns-3's own applications: BulkSend over TCP, OnOff over UDP.
#include "netmodels/ns3/ns3_background.h"

#include <ns3/applications-module.h>
#include <ns3/core-module.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace testbed {

namespace {

// Ports of the background sinks: flow i listens on kFirstPort + i, clear of the training port.
constexpr uint16_t kFirstPort = 20000;
constexpr int kUdpIpHeaderBytes = 28;  // IPv4 20 + UDP 8
constexpr int kTcpIpHeaderBytes = 52;  // IPv4 20 + TCP 20 + timestamp option 12

// "ns3::ConstantRandomVariable[Constant=<s>]": OnOff's on and off spells take fixed lengths.
std::string constant(double seconds) { return "ns3::ConstantRandomVariable[Constant=" + std::to_string(seconds) + "]"; }

}  // namespace

void install_background(const ns3::NodeContainer& nodes, const std::vector<ns3::Ipv4Address>& address_of,
                        const std::vector<BackgroundFlow>& flows, int mtu) {
  using namespace ns3;
  const int nv = static_cast<int>(nodes.GetN());
  for (size_t i = 0; i < flows.size(); ++i) {
    const BackgroundFlow& f = flows[i];
    const std::string what = "background flow " + std::to_string(i);
    if (f.from < 0 || f.from >= nv || f.to < 0 || f.to >= nv || f.from == f.to)
      throw std::invalid_argument(what + " must join two different vertices in 0.." + std::to_string(nv - 1));
    if (!(f.start_s >= 0) || !(f.stop_s > f.start_s)) throw std::invalid_argument(what + " needs 0 <= start < stop");
    if (f.kind == BackgroundKind::OnOff && (!(f.rate_bps > 0) || !(f.on_s > 0) || !(f.off_s >= 0)))
      throw std::invalid_argument(what + ": onoff needs rate > 0, on > 0 and off >= 0");
    const uint16_t port = static_cast<uint16_t>(kFirstPort + i);
    const bool tcp = f.kind == BackgroundKind::Bulk;
    const std::string factory = tcp ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
    const Address sink_at = InetSocketAddress(address_of.at(f.to), port);

    PacketSinkHelper sink(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinks = sink.Install(nodes.Get(f.to));
    ApplicationContainer sources;
    if (tcp) {
      BulkSendHelper bulk(factory, sink_at);
      bulk.SetAttribute("MaxBytes", UintegerValue(0));  // no end but `stop`
      bulk.SetAttribute("SendSize", UintegerValue(static_cast<uint32_t>(mtu - kTcpIpHeaderBytes)));
      sources = bulk.Install(nodes.Get(f.from));
    } else {
      OnOffHelper onoff(factory, sink_at);
      onoff.SetConstantRate(DataRate(static_cast<uint64_t>(f.rate_bps)),
                            static_cast<uint32_t>(mtu - kUdpIpHeaderBytes));
      onoff.SetAttribute("OnTime", StringValue(constant(f.on_s)));
      onoff.SetAttribute("OffTime", StringValue(constant(f.off_s)));
      sources = onoff.Install(nodes.Get(f.from));
    }
    // Application times count from when the application is initialised: now.
    const Time now = Simulator::Now();
    sinks.Start(Time(0));
    sources.Start(std::max(Time(0), Seconds(f.start_s) - now));
    sources.Stop(std::max(Time(0), Seconds(f.stop_s) - now));
  }
}

}  // namespace testbed
