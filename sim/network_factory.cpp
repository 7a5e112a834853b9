// Scenario network section -> backend options.
#include "sim/network_factory.h"

#include <stdexcept>

#include "netmodels/analytical_network.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3_network.h"
#include "sim/units.h"
#include "training/seed_streams.h"

namespace testbed {

std::unique_ptr<Network> make_network(const Scenario& scenario, EventClock& clock, const Topology& topology) {
  const auto& n = scenario.network;
  if (n.backend != "ns3") {
    // The loader reports this at the key; this guards callers that build scenarios in code.
    for (auto e : boost::make_iterator_range(boost::edges(topology.graph)))
      if (topology.graph[e].jitter_s > 0)
        throw std::invalid_argument("the " + n.backend + " backend models no per-packet jitter; use ns3");
  }
  if (n.backend == "analytical") return make_analytical_network(clock, topology);
  if (n.backend == "flow") return make_flow_network(clock, topology, n.mtu);
  Ns3Options options;
  options.transport = n.transport;
  options.mtu = n.mtu;
  if (n.queue_packets) {
    options.queue_packets = *n.queue_packets;
  } else if (auto bdp = parse_bdp_multiple(n.queue)) {
    options.queue_bdp = *bdp;
  } else {
    const auto bytes = parse_bytes(n.queue);
    if (!bytes) throw std::invalid_argument("network.queue '" + n.queue + "' is neither <x>bdp nor a byte size");
    options.queue_bytes = static_cast<uint64_t>(*bytes);
  }
  options.min_rto_s = n.min_rto.s;
  options.delayed_ack = n.delayed_ack;
  options.syn_timeout_s = n.syn_timeout.s;
  options.tcp = n.tcp;
  options.slow_start_after_idle = n.slow_start_after_idle;
  options.seed = stream_seed(scenario.seed, "network");
  for (const auto& f : n.faults) {
    Fault fault;
    if (f.link.size() == 2) fault.a = f.link[0], fault.b = f.link[1];
    if (f.node) fault.node = *f.node;
    if (f.down.size() == 2) fault.down_s = f.down[0].s, fault.up_s = f.down[1].s;
    options.faults.push_back(fault);
  }
  return make_ns3_network(clock, topology, options);
}

}  // namespace testbed
