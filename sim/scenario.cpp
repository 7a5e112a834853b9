// Conversions from scenario sections to the inputs of the other libraries.
#include "sim/scenario.h"

#include <algorithm>

#include "training/seed_streams.h"

namespace testbed {

TopologySpec topology_spec(const Scenario& scenario) {
  TopologySpec spec;
  spec.kind = scenario.topology.kind;
  spec.hosts = scenario.nodes;
  spec.torus_rows = scenario.topology.rows;
  const TopologySection& t = scenario.topology;
  spec.fat_tree_k = t.k;
  spec.clusters = t.clusters;
  const int clusters = std::max(1, t.clusters);
  spec.per_cluster = t.per_cluster > 0                     ? t.per_cluster
                     : scenario.nodes % clusters == 0 ? scenario.nodes / clusters
                                                          : 0;
  spec.wan = {t.wan.bandwidth.bps, t.wan.latency.s, t.wan.loss.value};
  spec.edge_probability = t.p;
  spec.degree = t.degree;
  spec.beta = t.beta;
  // Its own stream, so that the graph does not shift when other draws change.
  spec.seed = stream_seed(scenario.seed, "topology");
  spec.file = t.file;
  spec.placement = t.placement;
  spec.link = {scenario.topology.link.bandwidth.bps, scenario.topology.link.latency.s,
               scenario.topology.link.loss.value};
  for (const auto& o : scenario.topology.links) {
    LinkOverride link;
    if (o.between.size() == 2) link.a = o.between[0], link.b = o.between[1];
    if (o.bandwidth) link.bandwidth_bps = o.bandwidth->bps;
    if (o.bandwidth_reverse) link.reverse_bandwidth_bps = o.bandwidth_reverse->bps;
    if (o.latency) link.latency_s = o.latency->s;
    if (o.loss) link.loss = o.loss->value;
    spec.overrides.push_back(link);
  }
  return spec;
}

}  // namespace testbed
