// How each topology link becomes ns-3 devices: rate each way, device queues, loss models.
#pragma once

#include <ns3/network-module.h>

#include <cstdint>

#include "netmodels/ns3/ns3_options.h"
#include "topologies/link_spec.h"

namespace testbed {

// MTU-sized packets a device queue holds at least, whatever the link's delay (see the .cpp).
constexpr int kMinQueuePackets = 16;

// Bytes the device queue sending at `rate_bps` over a link of one-way `latency_s` holds
// under `options` (queue_packets > 0 sizes in packets instead; this is then 0).
uint64_t device_queue_bytes(double rate_bps, double latency_s, const Ns3Options& options);

// Configures the two devices a point-to-point install made for the link between vertices
// `a` (device 0) and `b` (device 1): each device's rate is its own direction's, its queue
// sized for that rate, and a receive error model when the link is lossy. Random streams are
// assigned from `stream` (loss models, then a jittery link's channel), which advances past
// the ones used.
void configure_link_devices(const ns3::NetDeviceContainer& devices, int a, int b, const LinkSpec& link,
                            const Ns3Options& options, int64_t& stream);

}  // namespace testbed
