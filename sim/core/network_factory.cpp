// Scenario network section -> backend options. The scenario was checked when it was loaded
// (sim/config/scenario_rules.cpp), and the capture options by the command line.
#include "sim/core/network_factory.h"

#include <stdexcept>

#include "netmodels/analytical_network.h"
#include "netmodels/flow_network.h"
#include "netmodels/ns3/ns3_network.h"
#include "sim/config/units.h"
#include "training/seed_streams.h"

namespace testbed {

RoutingOptions routing_options(const Scenario& scenario) {
  return {scenario.network.routing, stream_seed(scenario.seed, "routing")};
}

std::unique_ptr<Network> make_network(const Scenario& scenario, EventClock& clock, const Topology& topology,
                                      const NetworkCaptures& captures) {
  const auto& n = scenario.network;
  const RoutingOptions routing = routing_options(scenario);
  if (n.backend == Backend::Analytical) return make_analytical_network(clock, topology, routing);
  if (n.backend == Backend::Flow) {
    return make_flow_network(clock, topology, n.mtu,
                             n.flow_sharing == FlowSharingRule::Rtt ? FlowSharing::Rtt : FlowSharing::MaxMin, routing);
  }
  Ns3Options options;
  options.routing = routing;
  options.transport = n.transport;
  options.mtu = n.mtu;
  const QueueSize queue = parse_queue(n.queue);
  if (n.queue_packets)
    options.queue_packets = *n.queue_packets;
  else if (queue.bdp)
    options.queue_bdp = *queue.bdp;
  else
    options.queue_bytes = static_cast<uint64_t>(queue.bytes.value());
  options.min_rto_s = n.min_rto.s;
  options.delayed_ack = n.delayed_ack;
  options.syn_timeout_s = n.syn_timeout.s;
  options.tcp = n.tcp;
  options.slow_start_after_idle = n.slow_start_after_idle;
  options.seed = stream_seed(scenario.seed, "network");
  options.pcap_dir = captures.pcap_dir;
  options.flowmon_file = captures.flowmon_file;
  options.fatal_error_at_s = captures.fatal_error_at_s;
  options.hold_when_idle = n.memoize;
  for (const auto& f : n.faults) {
    Fault fault;
    if (f.link.size() == 2) fault.a = f.link[0], fault.b = f.link[1];
    if (f.node) fault.node = *f.node;
    if (f.down.size() == 2) fault.down_s = f.down[0].s, fault.up_s = f.down[1].s;
    options.faults.push_back(fault);
  }
  for (const auto& b : n.background) {
    BackgroundFlow flow;
    flow.from = b.from.value_or(-1);
    flow.to = b.to.value_or(-1);
    flow.kind = b.kind;
    flow.rate_bps = b.rate ? b.rate->bps : 0;
    flow.on_s = b.on.s;
    flow.off_s = b.off.s;
    flow.start_s = b.start.s;
    flow.stop_s = b.stop ? b.stop->s : 0;
    options.background.push_back(flow);
  }
  return make_ns3_network(clock, topology, options);
}

}  // namespace testbed
