// Link machinery of the ns-3 backend: per-direction rates, BDP-sized queues, loss models.
#include "netmodels/ns3_links.h"

#include <ns3/core-module.h>
#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace testbed {

uint64_t device_queue_bytes(double rate_bps, double latency_s, const Ns3Options& options) {
  if (options.queue_packets > 0) return 0;
  if (options.queue_bytes > 0) return options.queue_bytes;
  // One bandwidth-delay product of the link's own round trip (rate x 2 x latency) is the
  // classic rule for a single long-lived TCP flow to keep the link busy through a halving of
  // its window; more only adds delay (bufferbloat). The default is 1.5: slow start overshoots
  // and loses up to half a window near its end, and below ~1.5 BDP recovering that burst
  // costs more (10 MB over 100 Mbps / 10 ms with NewReno: 1.186x the alpha-beta time at 1 BDP,
  // 1.139x at 1.25, 1.129x flat from 1.5 to 3 BDP). It uses the link's latency, not a path's,
  // since a device sees no paths: multi-hop flows whose bottleneck is this link get a little
  // less than their path's BDP. A link with (almost) no delay has a BDP of a few bytes, yet
  // still receives bursts: ns-3's TCP starts with a window of 10 segments sent back to back,
  // and slow start releases two segments per ACK, so the queue holds at least
  // kMinQueuePackets MTU-sized packets rather than dropping part of every first flight.
  const double bdp = options.queue_bdp * rate_bps / 8 * 2 * latency_s;
  const double floor = static_cast<double>(kMinQueuePackets) * (options.mtu + 2);  // + PPP header
  return static_cast<uint64_t>(std::ceil(std::max(bdp, floor)));
}

void configure_link_devices(const ns3::NetDeviceContainer& devices, int a, int b, const LinkSpec& link,
                            const Ns3Options& options, int64_t& stream) {
  using namespace ns3;
  if (devices.GetN() != 2) throw std::logic_error("a point-to-point link has two devices");
  const int ends[2] = {a, b};
  for (uint32_t i = 0; i < 2; ++i) {
    auto device = DynamicCast<PointToPointNetDevice>(devices.Get(i));
    const double rate = link.rate_bps(ends[i], ends[1 - i]);
    device->SetDataRate(DataRate(static_cast<uint64_t>(rate)));
    const uint64_t bytes = device_queue_bytes(rate, link.latency_s, options);
    device->GetQueue()->SetMaxSize(bytes > 0 ? QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(
                                                   std::min<uint64_t>(bytes, UINT32_MAX)))
                                             : QueueSize(QueueSizeUnit::PACKETS, options.queue_packets));
  }
  if (link.loss > 0) {
    for (uint32_t i = 0; i < devices.GetN(); ++i) {
      auto model = CreateObject<RateErrorModel>();
      model->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
      model->SetRate(link.loss);
      stream += model->AssignStreams(stream);
      devices.Get(i)->SetAttribute("ReceiveErrorModel", PointerValue(model));
    }
  }
}

}  // namespace testbed
