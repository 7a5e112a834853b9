// A point-to-point channel with a random extra delay per packet, kept in FIFO order per direction.
#include "netmodels/ns3/ns3_jitter.h"

#include <ns3/core-module.h>
#include <ns3/network-module.h>

#include <algorithm>

namespace testbed {

ns3::TypeId JitterChannel::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("testbed::JitterChannel")
                               .SetParent<ns3::PointToPointChannel>()
                               .SetGroupName("PointToPoint")
                               .AddConstructor<JitterChannel>();
  return tid;
}

JitterChannel::JitterChannel() {
  for (auto& extra : extra_) extra = ns3::CreateObject<ns3::UniformRandomVariable>();
  set_jitter(ns3::Time(0));
}

void JitterChannel::set_jitter(ns3::Time jitter) {
  for (auto& extra : extra_) {
    extra->SetAttribute("Min", ns3::DoubleValue(0));
    extra->SetAttribute("Max", ns3::DoubleValue(jitter.GetSeconds()));
  }
}

int64_t JitterChannel::AssignStreams(int64_t stream) {
  for (int64_t i = 0; i < 2; ++i) extra_[i]->SetStream(stream + i);
  return 2;
}

bool JitterChannel::TransmitStart(ns3::Ptr<const ns3::Packet> p, ns3::Ptr<ns3::PointToPointNetDevice> src,
                                  ns3::Time txTime) {
  IsInitialized();  // both ends attached (asserts in debug builds of ns-3)
  const uint32_t wire = src == GetSource(0) ? 0 : 1;
  const ns3::Time now = ns3::Simulator::Now();
  const ns3::Time drawn = now + txTime + GetDelay() + ns3::Seconds(extra_[wire]->GetValue());
  // Not before the previous packet of this direction: equal times run in scheduling order.
  const ns3::Time arrival = std::max(drawn, last_arrival_[wire]);
  last_arrival_[wire] = arrival;
  ns3::Ptr<ns3::PointToPointNetDevice> dst = GetDestination(wire);
  ns3::Simulator::ScheduleWithContext(dst->GetNode()->GetId(), arrival - now, &ns3::PointToPointNetDevice::Receive, dst,
                                      p->Copy());
  return true;
}

ns3::NetDeviceContainer install_jitter_link(ns3::Ptr<ns3::Node> a, ns3::Ptr<ns3::Node> b, const LinkSpec& link,
                                            int mtu) {
  using namespace ns3;
  auto channel = CreateObject<JitterChannel>();
  channel->SetAttribute("Delay", TimeValue(Seconds(link.latency_s)));
  channel->set_jitter(Seconds(link.jitter_s));
  NetDeviceContainer devices;
  for (Ptr<Node> node : {a, b}) {
    auto device = CreateObject<PointToPointNetDevice>();
    device->SetMtu(static_cast<uint16_t>(mtu));
    device->SetAddress(Mac48Address::Allocate());
    node->AddDevice(device);
    auto queue = CreateObject<DropTailQueue<Packet>>();
    device->SetQueue(queue);
    // Flow control, as the helper enables by default: the traffic control layer sees the
    // device queue fill and stops handing it packets rather than having them dropped.
    auto interface = CreateObject<NetDeviceQueueInterface>();
    interface->GetTxQueue(0)->ConnectQueueTraces(queue);
    device->AggregateObject(interface);
    devices.Add(device);
  }
  for (uint32_t i = 0; i < 2; ++i) DynamicCast<PointToPointNetDevice>(devices.Get(i))->Attach(channel);
  return devices;
}

}  // namespace testbed
