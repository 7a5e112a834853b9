// Per-packet jitter on an ns-3 point-to-point link: a channel whose propagation delay varies.
#pragma once

// Single headers rather than the modules: tests include this in C++20, and core-module.h
// does not compile there (netmodels/CMakeLists.txt).
#include <ns3/net-device-container.h>
#include <ns3/node.h>
#include <ns3/point-to-point-channel.h>
#include <ns3/point-to-point-net-device.h>  // before the channel, which uses it whole
#include <ns3/random-variable-stream.h>

#include <cstdint>

#include "topologies/link_spec.h"

namespace testbed {

// A point-to-point channel that delays each packet by its Delay attribute plus a draw uniform
// in [0, jitter]. Each direction has its own random stream and stays first in, first out: a
// packet that would overtake the one before it arrives together with it instead (real links
// do not reorder, and TCP would take reordering for loss).
class JitterChannel final : public ns3::PointToPointChannel {
 public:
  static ns3::TypeId GetTypeId();
  JitterChannel();

  void set_jitter(ns3::Time jitter);
  // Gives each direction its stream, from `stream` on; returns how many it used.
  int64_t AssignStreams(int64_t stream);

  bool TransmitStart(ns3::Ptr<const ns3::Packet> p, ns3::Ptr<ns3::PointToPointNetDevice> src,
                     ns3::Time txTime) override;

 private:
  ns3::Ptr<ns3::UniformRandomVariable> extra_[2];
  ns3::Time last_arrival_[2];  // of the latest packet sent each way, absolute
};

// What PointToPointHelper::Install does (devices with a DropTail queue and flow control, MAC
// addresses, attached to one channel), but over a JitterChannel with the link's latency and
// jitter, since the helper cannot be told which channel type to create. The caller sizes
// rates and queues (configure_link_devices), which also assigns the jitter streams.
ns3::NetDeviceContainer install_jitter_link(ns3::Ptr<ns3::Node> a, ns3::Ptr<ns3::Node> b, const LinkSpec& link,
                                            int mtu);

}  // namespace testbed
