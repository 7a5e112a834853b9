// Conversions from scenario sections to the inputs of the other libraries.
#include "sim/scenario.h"

namespace testbed {

TopologySpec topology_spec(const Scenario& scenario) {
  TopologySpec spec;
  spec.kind = scenario.topology.kind;
  spec.hosts = scenario.nodes;
  spec.torus_rows = scenario.topology.rows;
  spec.link = {scenario.topology.link.bandwidth.bps, scenario.topology.link.latency.s,
               scenario.topology.link.loss.value};
  for (const auto& o : scenario.topology.links) {
    LinkOverride link;
    if (o.between.size() == 2) link.a = o.between[0], link.b = o.between[1];
    if (o.bandwidth) link.bandwidth_bps = o.bandwidth->bps;
    if (o.latency) link.latency_s = o.latency->s;
    if (o.loss) link.loss = o.loss->value;
    spec.overrides.push_back(link);
  }
  return spec;
}

}  // namespace testbed
