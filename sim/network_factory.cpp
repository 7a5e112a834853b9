// Scenario network section -> backend options.
#include "sim/network_factory.h"

#include "netmodels/analytical_network.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3_network.h"
#include "training/seed_streams.h"

namespace testbed {

std::unique_ptr<Network> make_network(const Scenario& scenario, EventClock& clock, const Topology& topology) {
  const auto& n = scenario.network;
  if (n.backend == "analytical") return make_analytical_network(clock, topology);
  if (n.backend == "flow") return make_flow_network(clock, topology, n.mtu);
  Ns3Options options;
  options.transport = n.transport;
  options.mtu = n.mtu;
  options.queue_packets = n.queue_packets;
  options.min_rto_s = n.min_rto.s;
  options.delayed_ack = n.delayed_ack;
  options.syn_timeout_s = n.syn_timeout.s;
  options.tcp = n.tcp;
  options.slow_start_after_idle = n.slow_start_after_idle;
  options.seed = stream_seed(scenario.seed, "network");
  return make_ns3_network(clock, topology, options);
}

}  // namespace testbed
