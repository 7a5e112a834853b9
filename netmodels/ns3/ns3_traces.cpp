// Bandwidth traces as DataRate changes on the link's devices at their times.
#include "netmodels/ns3/ns3_traces.h"

#include <ns3/core-module.h>
#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "netmodels/ns3/ns3_links.h"

namespace testbed {

void install_bandwidth_trace(const ns3::NetDeviceContainer& devices, const LinkSpec& link, const Ns3Options& options) {
  using namespace ns3;
  if (link.trace.empty()) return;
  if (devices.GetN() != 2) throw std::logic_error("a point-to-point link has two devices");
  Ptr<PointToPointNetDevice> ends[2];
  for (uint32_t i = 0; i < 2; ++i) {
    ends[i] = DynamicCast<PointToPointNetDevice>(devices.Get(i));
    const uint64_t bytes = device_queue_bytes(link.max_rate_bps(), link.latency_s, options);
    if (bytes > 0)
      ends[i]->GetQueue()->SetMaxSize(
          QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX))));
  }
  for (const RateChange& change : link.trace) {
    const DataRate rate(static_cast<uint64_t>(change.bps));
    auto apply = [a = ends[0], b = ends[1], rate] {
      a->SetDataRate(rate);
      b->SetDataRate(rate);
    };
    const Time at = Seconds(change.time_s);
    if (at <= Simulator::Now()) {
      apply();
    } else {
      Simulator::Schedule(at - Simulator::Now(), apply);
    }
  }
}

}  // namespace testbed
