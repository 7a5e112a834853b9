// Alpha-beta per message along the route: latency sum + bytes / bottleneck, no queues.
#include "netmodels/analytical_network.h"

#include <map>
#include <stdexcept>
#include <string>

#include "topologies/routing.h"

namespace testbed {
namespace {

class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(EventClock& clock, const Topology& topology) : clock_(clock), topology_(topology) {}

  void send(const Message& message, OnDelivered on_delivered) override {
    const int hosts = topology_.num_hosts();
    if (message.src < 0 || message.src >= hosts || message.dst < 0 || message.dst >= hosts)
      throw std::invalid_argument("analytical network: message " + std::to_string(message.id) +
                                  " names a host outside 0.." + std::to_string(hosts - 1));
    const double t_send = clock_.now();
    double took = 0;
    if (message.src != message.dst) {
      const PathProperties& path = route(message.src, message.dst);
      took = path.latency_s + static_cast<double>(message.bytes) * 8.0 / path.bottleneck_bps;
    }
    // Delivered in an event of its own, as the packet-level backend does, so a callback
    // that sends again never runs inside send().
    clock_.schedule(took, [message, t_send, this, on_delivered = std::move(on_delivered)] {
      on_delivered(Delivery{message, t_send, clock_.now(), 0});
    });
  }
  std::string name() const override { return "analytical"; }

 private:
  const PathProperties& route(int src, int dst) {
    auto it = routes_.find({src, dst});
    if (it == routes_.end()) it = routes_.emplace(std::make_pair(src, dst), path_properties(topology_, src, dst)).first;
    return it->second;
  }

  EventClock& clock_;
  Topology topology_;
  std::map<std::pair<int, int>, PathProperties> routes_;
};

}  // namespace

std::unique_ptr<Network> make_analytical_network(EventClock& clock, const Topology& topology) {
  return std::make_unique<AnalyticalNetwork>(clock, topology);
}

}  // namespace testbed
