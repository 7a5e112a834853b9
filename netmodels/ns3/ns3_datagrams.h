// The ns3 backend's lossy datagram transport: a message as paced UDP datagrams of whole elements,
// delivered once every datagram has arrived or been dropped. Internal to the ns3 backend.
#pragma once

#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "netmodels/network.h"

namespace testbed {

// How a message of `bytes` payload bytes of `element_bytes`-byte elements is cut into
// datagrams whose payload is at most `max_payload` bytes: whole elements each, and a whole
// number of bytes (so fp4 datagrams carry an even number of elements).
struct DatagramSplit {
  int64_t elements_per_datagram = 0;
  uint64_t bytes_per_datagram = 0;  // every datagram's payload but the last one's
  uint32_t count = 0;
};
DatagramSplit split_into_datagrams(uint64_t bytes, double element_bytes, uint64_t max_payload);

class Ns3Datagrams {
 public:
  static constexpr int kUdpIpHeaderBytes = 28;  // IPv4 20 + UDP 8

  // Opens a UDP socket on each of the first `hosts` nodes and watches every point-to-point
  // device of `nodes` for the drops that decide a datagram's fate. Build after routing.
  Ns3Datagrams(const ns3::NodeContainer& nodes, int hosts, std::vector<ns3::Ipv4Address> host_address, int mtu);
  ~Ns3Datagrams();
  Ns3Datagrams(const Ns3Datagrams&) = delete;
  Ns3Datagrams& operator=(const Ns3Datagrams&) = delete;

  // `message` (src != dst, bytes > 0) leaves now; `on_delivered` fires in an event of its own
  // at the time the last of its datagrams arrived or was dropped.
  void send(const Message& message, Network::OnDelivered on_delivered);

 private:
  enum class Fate : uint8_t { Unknown, Arrived, Lost };
  struct InFlight {
    Message message;
    double t_send = 0;
    DatagramSplit split;
    std::vector<Fate> fate;  // per datagram
    uint32_t settled = 0;
    Network::OnDelivered on_delivered;
  };

  void transmit(uint64_t id, uint32_t index);
  void settle(ns3::Ptr<const ns3::Packet> packet, Fate fate);
  void on_receive(ns3::Ptr<ns3::Socket> socket);
  void finish(uint64_t id);

  ns3::NodeContainer nodes_;
  int hosts_;
  std::vector<ns3::Ipv4Address> host_address_;
  uint64_t max_payload_;
  std::vector<ns3::Ptr<ns3::Socket>> sockets_;                    // per host: sends and receives
  std::map<ns3::Ptr<ns3::NetDevice>, ns3::Time> device_free_at_;  // pacing: when the last datagram is out
  std::unordered_map<uint64_t, InFlight> in_flight_;
  // Trace sinks and events outlive this object inside ns-3; they check it first.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace testbed
