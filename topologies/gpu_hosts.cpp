// Hosts of several GPUs, as the papers' clusters are: each host's GPUs hang off its local switch
// (NVSwitch or a PCIe switch) by the GPU link, and each host reaches the others through its NIC,
// one link from the local switch to the cluster's switch (Ethernet or InfiniBand).
#include <stdexcept>
#include <string>

#include "topologies/kinds.h"

namespace testbed::detail {

void build_gpu_hosts(const TopologySpec& spec, Topology& t) {
  const int g = spec.gpus_per_host;
  if (g < 1) throw std::invalid_argument("gpu_hosts: gpus_per_host must be >= 1, got " + std::to_string(g));
  if (spec.hosts % g != 0)
    throw std::invalid_argument("gpu_hosts: nodes (" + std::to_string(spec.hosts) +
                                ") is not a multiple of gpus_per_host (" + std::to_string(g) + ")");
  Topology::Graph& graph = t.graph;
  const int hosts = spec.hosts / g;
  // After the GPUs: each host's local switch, then the cluster's switch.
  const int local0 = spec.hosts, fabric = local0 + hosts;
  for (int i = 0; i <= hosts; ++i) boost::add_vertex(VertexInfo{VertexKind::Switch}, graph);
  for (int gpu = 0; gpu < spec.hosts; ++gpu) add_link(graph, gpu, local0 + gpu / g, spec.gpu_link);
  for (int h = 0; h < hosts; ++h) add_link(graph, local0 + h, fabric, spec.link);
}

}  // namespace testbed::detail
