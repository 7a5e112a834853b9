// Link machinery of the ns-3 backend: per-direction rates, BDP-sized queues, loss models, jitter streams.
#include "netmodels/ns3/ns3_links.h"

#include <ns3/core-module.h>
#include <ns3/point-to-point-module.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "netmodels/ns3/ns3_jitter.h"

namespace testbed {

namespace {

// A two-state Markov chain per packet (LinkSpec says how); each device direction has its own.
class GilbertElliottErrorModel final : public ns3::ErrorModel {
 public:
  explicit GilbertElliottErrorModel(const LinkSpec& link)
      : link_(link), uniform_(ns3::CreateObject<ns3::UniformRandomVariable>()) {}
  int64_t AssignStreams(int64_t stream) {
    uniform_->SetStream(stream);
    return 1;
  }

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet>) override {
    const double move = uniform_->GetValue();
    bad_ = bad_ ? move >= link_.p_bad_good : move < link_.p_good_bad;
    return uniform_->GetValue() < (bad_ ? link_.loss_bad : link_.loss);
  }
  void DoReset() override { bad_ = false; }

  LinkSpec link_;
  ns3::Ptr<ns3::UniformRandomVariable> uniform_;
  bool bad_ = false;  // starts good
};

}  // namespace

double ns3_drop_fraction(const LinkSpec& link, int packets, uint64_t seed) {
  using namespace ns3;
  Ptr<ErrorModel> model;
  if (link.gilbert_elliott) {
    auto ge = CreateObject<GilbertElliottErrorModel>(link);
    ge->AssignStreams(static_cast<int64_t>(seed));
    model = ge;
  } else {
    auto rate = CreateObject<RateErrorModel>();
    rate->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    rate->SetRate(link.loss);
    rate->AssignStreams(static_cast<int64_t>(seed));
    model = rate;
  }
  int dropped = 0;
  for (int i = 0; i < packets; ++i) dropped += model->IsCorrupt(Create<Packet>(1000)) ? 1 : 0;
  return packets > 0 ? static_cast<double>(dropped) / packets : 0;
}

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
    device->GetQueue()->SetMaxSize(
        bytes > 0 ? QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX)))
                  : QueueSize(QueueSizeUnit::PACKETS, options.queue_packets));
  }
  if (link.gilbert_elliott && link.p_good_bad > 0) {
    for (uint32_t i = 0; i < devices.GetN(); ++i) {
      auto model = CreateObject<GilbertElliottErrorModel>(link);
      stream += model->AssignStreams(stream);
      devices.Get(i)->SetAttribute("ReceiveErrorModel", PointerValue(model));
    }
  } else if (link.loss > 0) {
    for (uint32_t i = 0; i < devices.GetN(); ++i) {
      auto model = CreateObject<RateErrorModel>();
      model->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
      model->SetRate(link.loss);
      stream += model->AssignStreams(stream);
      devices.Get(i)->SetAttribute("ReceiveErrorModel", PointerValue(model));
    }
  }
  if (link.jitter_s > 0) {
    auto channel = DynamicCast<JitterChannel>(devices.Get(0)->GetChannel());
    if (!channel)
      throw std::logic_error("a link with jitter needs its devices on a JitterChannel (install_jitter_link)");
    stream += channel->AssignStreams(stream);
  }
}

}  // namespace testbed
