// What every network backend offers: point-to-point messages of known size between hosts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace testbed {

struct Message {
  uint64_t id = 0;     // unique per run, chosen by the sender
  int src = 0;         // host index
  int dst = 0;         // host index
  uint64_t bytes = 0;  // payload bytes (headers are the network's business)
  // The sender tolerates loss: a backend with a datagram transport may split the message
  // into datagrams of whole elements and deliver whatever arrived. False: every byte, reliably.
  bool datagrams = false;
  double element_bytes = 1;  // wire bytes per element (0.5 for fp4), so datagrams split on elements
};

// Elements [begin, end) of a message, counted from its first element.
struct ElementRange {
  int64_t begin = 0, end = 0;
  bool operator==(const ElementRange& o) const { return begin == o.begin && end == o.end; }
};

struct Delivery {
  Message message;
  double t_send = 0;        // simulated time send() was called
  double t_recv = 0;        // simulated time the last byte arrived
  uint64_t lost_bytes = 0;  // payload bytes that never arrived (datagram transports)
  std::vector<ElementRange> lost;  // the elements those bytes carried, ascending, adjacent ones merged
};

// Backends run on the EventClock: send() is called from inside an event and
// the callback fires inside a later event, at t_recv.
class Network {
 public:
  using OnDelivered = std::function<void(const Delivery&)>;
  virtual ~Network() = default;
  virtual void send(const Message& message, OnDelivered on_delivered) = 0;
  virtual std::string name() const = 0;
};

}  // namespace testbed
