// Conversions from scenario sections to the inputs of the other libraries.
#include "sim/config/scenario.h"

#include <algorithm>

#include "sim/config/bandwidth_trace.h"
#include "sim/config/units.h"
#include "training/algorithms/fsdp_units.h"
#include "training/algorithms/registry.h"
#include "training/seed_streams.h"

namespace testbed {

namespace {

LinkSpec link_spec(const LinkSection& l) {
  LinkSpec spec;
  spec.bandwidth_bps = l.bandwidth.bps;
  spec.latency_s = l.latency.s;
  spec.loss = l.loss.value;
  spec.gilbert_elliott = l.loss_model == LossModel::GilbertElliott;
  spec.p_good_bad = l.p_good_bad.value;
  spec.p_bad_good = l.p_bad_good.value;
  spec.loss_bad = l.loss_bad.value;
  // The loader has made the path absolute and checked the file.
  if (!l.trace.empty()) spec.trace = read_bandwidth_trace(l.trace);
  spec.jitter_s = l.jitter.s;
  return spec;
}

}  // namespace

int clients_per_cluster(const Scenario& scenario) {
  const TopologySection& t = scenario.topology;
  if (t.kind != TopologyKind::Hierarchical) return 0;
  if (t.per_cluster > 0) return t.per_cluster;
  const int clusters = std::max(1, t.clusters);
  return scenario.nodes % clusters == 0 ? scenario.nodes / clusters : 0;
}

TopologySpec topology_spec(const Scenario& scenario) {
  TopologySpec spec;
  spec.kind = scenario.topology.kind;
  // A federated run's server is a host of its own beside the clients (FedAvgOptions::server).
  const AlgorithmEntry* algorithm = find_algorithm(scenario.algorithm.name);
  // So is split fine-tuning's cloud (CommKind::Cut).
  spec.hosts = scenario.nodes + (algorithm && (algorithm->federated || algorithm->cloud) ? 1 : 0);
  spec.torus_rows = scenario.topology.rows;
  const TopologySection& t = scenario.topology;
  spec.fat_tree_k = t.k;
  spec.clusters = t.clusters;
  const int clusters = std::max(1, t.clusters);
  spec.per_cluster = t.per_cluster > 0 ? t.per_cluster : spec.hosts % clusters == 0 ? spec.hosts / clusters : 0;
  // A federated run on clusters: each cluster's clients and its aggregator (the host after
  // them), then the server after every cluster, in cluster 0 (sim/core/federated/federated_run.h).
  if (algorithm && algorithm->federated && t.kind == TopologyKind::Hierarchical) {
    const int clients = clients_per_cluster(scenario);
    spec.per_cluster = clients > 0 ? clients + 1 : 0;
    spec.hosts = clusters * spec.per_cluster + 1;
    spec.extra_hosts = 1;
  }
  spec.wan = link_spec(t.wan);
  spec.gpus_per_host = t.gpus_per_host;
  spec.gpu_link = link_spec(t.gpu_link);
  // The presets' bandwidths per direction (NVIDIA's NVLink figures; PCIe x16 after encoding).
  const std::pair<const char*, double> interconnects[] = {
      {"nvlink3", 300e9}, {"nvlink4", 450e9}, {"pcie3", 16e9}, {"pcie4", 32e9}, {"pcie5", 64e9}};
  for (const auto& [name, bytes_per_s] : interconnects) {
    if (t.interconnect != name) continue;
    spec.gpu_link.bandwidth_bps = 8 * bytes_per_s;
    spec.gpu_link.latency_s = name[0] == 'n' ? 1e-6 : 2e-6;
  }
  spec.edge_probability = t.p;
  spec.degree = t.degree;
  spec.beta = t.beta;
  // Its own stream, so that the graph does not shift when other draws change.
  spec.seed = stream_seed(scenario.seed, "topology");
  spec.file = t.file;
  spec.placement = t.placement;
  spec.link = link_spec(scenario.topology.link);
  for (const auto& o : scenario.topology.links) {
    LinkOverride link;
    if (o.between.size() == 2) link.a = o.between[0], link.b = o.between[1];
    if (o.bandwidth) link.bandwidth_bps = o.bandwidth->bps;
    if (o.bandwidth_reverse) link.reverse_bandwidth_bps = o.bandwidth_reverse->bps;
    if (o.latency) link.latency_s = o.latency->s;
    if (o.loss) link.loss = o.loss->value;
    if (o.loss_model) link.gilbert_elliott = *o.loss_model == LossModel::GilbertElliott;
    if (o.p_good_bad) link.p_good_bad = o.p_good_bad->value;
    if (o.p_bad_good) link.p_bad_good = o.p_bad_good->value;
    if (o.loss_bad) link.loss_bad = o.loss_bad->value;
    if (o.trace) link.trace = o.trace->empty() ? std::vector<RateChange>{} : read_bandwidth_trace(*o.trace);
    if (o.jitter) link.jitter_s = o.jitter->s;
    spec.overrides.push_back(link);
  }
  return spec;
}

QueueSize parse_queue(const std::string& queue) {
  if (auto bdp = parse_bdp_multiple(queue)) return {bdp, std::nullopt};
  return {std::nullopt, parse_bytes(queue)};
}

std::vector<int> node_clusters(const Scenario& scenario) {
  const int nodes = scenario.nodes;
  std::vector<int> cluster(nodes, -1);
  if (!scenario.collective.clusters.empty()) {
    // The loader checked that the lists partition the nodes.
    for (size_t c = 0; c < scenario.collective.clusters.size(); ++c)
      for (int node : scenario.collective.clusters[c])
        if (node >= 0 && node < nodes) cluster[node] = static_cast<int>(c);
    return cluster;
  }
  if (scenario.topology.kind == TopologyKind::Hierarchical) {
    const int per_cluster = topology_spec(scenario).per_cluster;
    if (per_cluster < 1) return {};
    for (int n = 0; n < nodes; ++n) cluster[n] = n / per_cluster;
    return cluster;
  }
  if (scenario.topology.kind == TopologyKind::GpuHosts) {
    for (int n = 0; n < nodes; ++n) cluster[n] = n / std::max(1, scenario.topology.gpus_per_host);
    return cluster;
  }
  if (scenario.topology.kind == TopologyKind::FatTree) {
    // Host slot h sits on edge switch h / (k/2), and a pod holds k/2 edge switches.
    const int half = std::max(1, scenario.topology.k / 2);
    for (int n = 0; n < nodes; ++n) cluster[n] = n / (half * half);
    return cluster;
  }
  return {};
}

ComputeSection split_cloud_compute(const Scenario& scenario) {
  ComputeSection cloud;
  cloud.model = ComputeKind::Flops;
  cloud.device = std::get<SplitOptions>(scenario.algorithm.options).cloud;
  cloud.dtype = scenario.compute.dtype;
  cloud.mfu = scenario.compute.mfu;
  cloud.gemm_efficiency = scenario.compute.gemm_efficiency;
  cloud.convolution_efficiency = scenario.compute.convolution_efficiency;
  cloud.memory_efficiency = scenario.compute.memory_efficiency;
  cloud.memory_format = scenario.compute.memory_format;
  return cloud;
}

CollectiveChoice collective_choice(const Scenario& scenario) {
  CollectiveChoice c;
  c.algorithm = scenario.collective.algorithm;
  c.slices = scenario.collective.slices;
  c.server_node = scenario.collective.server;
  c.node_cluster = node_clusters(scenario);
  c.library = library_costs(scenario);
  return c;
}

LocalTransport local_transport(const Scenario& scenario) {
  if (scenario.collective.local_transport) return *scenario.collective.local_transport;
  if (scenario.topology.interconnect.rfind("nvlink", 0) == 0) return LocalTransport::P2p;
  for (const auto& p : device_presets())
    if (p.name == scenario.compute.device) return p.pcie_peer_to_peer ? LocalTransport::P2p : LocalTransport::Shm;
  return LocalTransport::P2p;
}

CollectiveLibrary collective_library(const Scenario& scenario) {
  if (scenario.collective.library) return *scenario.collective.library;
  const AlgorithmEntry* entry = find_algorithm(scenario.algorithm.name);
  if (entry && entry->federated) return CollectiveLibrary::None;
  return scenario.compute.device == "cpu" ? CollectiveLibrary::Gloo : CollectiveLibrary::Nccl;
}

NetworkTransport network_transport(const Scenario& scenario) {
  if (scenario.collective.transport) return *scenario.collective.transport;
  const CollectiveLibrary library = collective_library(scenario);
  const bool rdma =
      library == CollectiveLibrary::Nccl || library == CollectiveLibrary::Horovod || library == CollectiveLibrary::Mpi;
  return rdma && scenario.topology.link.bandwidth.bps >= 100e9 ? NetworkTransport::Ib : NetworkTransport::Socket;
}

double overlap_slowdown(const Scenario& scenario) {
  if (scenario.compute.overlap_slowdown) return *scenario.compute.overlap_slowdown;
  // One GPU runs no collective beside its backward (its all-reduces are of one rank).
  if (scenario.nodes == 1) return 0;
  return library_preset(collective_library(scenario)).overlap_slowdown;
}

LibraryCosts library_costs(const Scenario& scenario) {
  const CollectiveSection& col = scenario.collective;
  LibraryCosts costs =
      preset_costs(collective_library(scenario), network_transport(scenario), local_transport(scenario));
  if (col.launch_latency) costs.launch_s = col.launch_latency->s;
  if (col.message_latency) costs.network.message_s = col.message_latency->s;
  if (col.bandwidth_share) costs.network.rate.share = *col.bandwidth_share;
  if (col.max_rate) costs.network.rate.cap_bps = col.max_rate->bps;
  if (col.local_message_latency) costs.local.message_s = col.local_message_latency->s;
  if (col.local_bandwidth_share) costs.local.rate.share = *col.local_bandwidth_share;
  if (col.local_max_rate) costs.local.rate.cap_bps = col.local_max_rate->bps;
  // The GPUs of one gpu_hosts host share a machine (their messages take the local transport).
  if (scenario.topology.kind == TopologyKind::GpuHosts) {
    auto machine = std::make_shared<std::vector<int>>(scenario.nodes);
    for (int n = 0; n < scenario.nodes; ++n) (*machine)[n] = n / std::max(1, scenario.topology.gpus_per_host);
    costs.machine_of_host = std::move(machine);
  }
  return costs;
}

std::string fsdp_unit_pattern(const Scenario& scenario) {
  return scenario.replica_group.unit.empty() ? default_fsdp_unit(scenario.workload.model) : scenario.replica_group.unit;
}

}  // namespace testbed
