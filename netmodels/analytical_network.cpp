// Alpha-beta per message along the route: latency sum + bytes / bottleneck (or the sender's
// lower rate limit), no queues.
#include "netmodels/analytical_network.h"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "topologies/routing.h"

namespace testbed {
namespace {

class AnalyticalNetwork final : public Network {
 public:
  AnalyticalNetwork(EventClock& clock, const Topology& topology, const RoutingOptions& routing)
      : clock_(clock), topology_(topology), routing_(routing) {}

  void send(const Message& message, OnDelivered on_delivered) override {
    const int vertices = topology_.num_vertices();  // hosts, and switches as endpoints
    if (message.src < 0 || message.src >= vertices || message.dst < 0 || message.dst >= vertices)
      throw std::invalid_argument("analytical network: message " + std::to_string(message.id) +
                                  " names a vertex outside 0.." + std::to_string(vertices - 1));
    check_rate_limit(message, "analytical network");
    const double t_send = clock_.now();
    double took = 0;
    if (message.src != message.dst) {
      const Route& r = route_of(message.src, message.dst);
      const double rate =
          message.rate_limit.any() ? message.rate_limit.of(r.properties.bottleneck_bps) : r.properties.bottleneck_bps;
      took = r.properties.latency_s + static_cast<double>(message.bytes) * 8.0 / rate;
      for (size_t i = 0; i + 1 < r.path.size(); ++i) link_bytes_[{r.path[i], r.path[i + 1]}] += message.bytes;
    }
    // Delivered in an event of its own, as the packet-level backend does, so a callback
    // that sends again never runs inside send().
    clock_.schedule(took, [message, t_send, this, on_delivered = std::move(on_delivered)] {
      on_delivered(Delivery{message, t_send, clock_.now(), 0, {}});
    });
  }
  std::string name() const override { return "analytical"; }
  LinkBytes link_bytes() const override { return link_bytes_; }

 private:
  struct Route {
    std::vector<int> path;
    PathProperties properties;
  };
  const Route& route_of(int src, int dst) {
    auto it = routes_.find({src, dst});
    if (it == routes_.end()) {
      Route r{route(topology_, src, dst, routing_), {}};
      r.properties = path_properties(topology_, r.path);
      it = routes_.emplace(std::make_pair(src, dst), std::move(r)).first;
    }
    return it->second;
  }

  EventClock& clock_;
  Topology topology_;
  RoutingOptions routing_;
  std::map<std::pair<int, int>, Route> routes_;
  LinkBytes link_bytes_;  // payload sent over each directed link
};

}  // namespace

std::unique_ptr<Network> make_analytical_network(EventClock& clock, const Topology& topology,
                                                 const RoutingOptions& routing) {
  return std::make_unique<AnalyticalNetwork>(clock, topology, routing);
}

}  // namespace testbed
