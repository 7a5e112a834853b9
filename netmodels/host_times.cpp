// The timed network wrapper: send() is the network's time, the delivery callback the engine's.
#include "netmodels/host_times.h"

namespace testbed {

void TimedNetwork::send(const Message& message, OnDelivered on_delivered) {
  HostTimer timer(times_.network_send);
  inner_->send(message, [this, on_delivered = std::move(on_delivered)](const Delivery& d) {
    HostTimer engine_timer(times_.engine), delivery_timer(times_.deliveries);
    on_delivered(d);
  });
}

}  // namespace testbed
