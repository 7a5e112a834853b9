// What every network backend offers: point-to-point messages of known size between hosts (and switches, as endpoints).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace testbed {

class NetworkHold;

// How fast a sender's transport can put a message out, below line rate (a collective
// library's, comm/library_costs.h): at no more than `share` of its route's bottleneck rate, in
// (0, 1], and no more than `cap_bps` (0: no cap), each in the bits the backend counts that
// bottleneck in (the flow backend's wire bits, headers included; the analytical's payload).
struct RateLimit {
  double share = 1;
  double cap_bps = 0;
  bool any() const { return share < 1 || cap_bps > 0; }
  // The most a message goes at on a route whose bottleneck carries `bottleneck_bps`.
  double of(double bottleneck_bps) const {
    const double shared = share * bottleneck_bps;
    return cap_bps > 0 && cap_bps < shared ? cap_bps : shared;
  }
};

struct Message {
  uint64_t id = 0;     // unique per run, chosen by the sender
  int src = 0;         // a topology vertex: a host, or a switch as an endpoint (a federated server)
  int dst = 0;         // the same
  uint64_t bytes = 0;  // payload bytes (headers are the network's business)
  // The sender tolerates loss: a backend with a datagram transport may split the message
  // into datagrams of whole elements and deliver whatever arrived. False: every byte, reliably.
  bool datagrams = false;
  double element_bytes = 1;   // wire bytes per element (0.5 for fp4), so datagrams split on elements
  RateLimit rate_limit = {};  // none: line rate
};

// Throws std::invalid_argument unless the message's rate limit is a share in (0, 1] and a cap
// that is not negative.
inline void check_rate_limit(const Message& message, const char* backend) {
  const RateLimit& r = message.rate_limit;
  if (!(r.share > 0 && r.share <= 1) || !(r.cap_bps >= 0))
    throw std::invalid_argument(std::string(backend) + ": message " + std::to_string(message.id) + " has rate share " +
                                std::to_string(r.share) + " (outside (0, 1]) or rate cap " + std::to_string(r.cap_bps) +
                                " bit/s (negative)");
}

// Elements [begin, end) of a message, counted from its first element.
struct ElementRange {
  int64_t begin = 0, end = 0;
  bool operator==(const ElementRange& o) const { return begin == o.begin && end == o.end; }
};

struct Delivery {
  Message message;
  double t_send = 0;               // simulated time send() was called
  double t_recv = 0;               // simulated time the last byte arrived
  uint64_t lost_bytes = 0;         // payload bytes that never arrived (datagram transports)
  std::vector<ElementRange> lost;  // the elements those bytes carried, ascending, adjacent ones merged
};

using HostPair = std::pair<int, int>;  // (src, dst) hosts of a connection

// Bytes per directed link, keyed (from vertex, to vertex) of the topology.
using LinkBytes = std::map<std::pair<int, int>, uint64_t>;

// Backends run on the EventClock: send() is called from inside an event and
// the callback fires inside a later event, at t_recv.
class Network {
 public:
  using OnDelivered = std::function<void(const Delivery&)>;
  virtual ~Network() = default;
  virtual void send(const Message& message, OnDelivered on_delivered) = 0;
  virtual std::string name() const = 0;

  // What each directed link has carried so far, to see which links traffic took: flow and
  // analytical count every message's payload on each link of its route; ns3 counts what its
  // devices finished transmitting (headers, ACKs and handshakes included), and only when
  // built with Ns3Options::count_link_bytes (a trace call per packet and hop otherwise saved).
  virtual LinkBytes link_bytes() const { return {}; }

  // What a backend offers beyond messages, for the comm layer to stand in for it while it waits
  // (network_hold.h: its held world for memoization, a ring's links for lanes); null where it
  // offers neither. A wrapper forwards its inner network's.
  virtual NetworkHold* hold() { return nullptr; }
};

}  // namespace testbed
