// What every network backend offers: point-to-point messages of known size between hosts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace testbed {

struct Message {
  uint64_t id = 0;     // unique per run, chosen by the sender
  int src = 0;         // host index
  int dst = 0;         // host index
  uint64_t bytes = 0;  // payload bytes (headers are the network's business)
};

struct Delivery {
  Message message;
  double t_send = 0;        // simulated time send() was called
  double t_recv = 0;        // simulated time the last byte arrived
  uint64_t lost_bytes = 0;  // payload bytes that never arrived (datagram transports)
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
