// Each note is worked out from the scenario's values alone, so to_yaml stays a function of the
// resolved scenario (its hash keys resume files and sweep manifests).
#include "sim/config/scenario_notes.h"

#include "sim/config/device_presets.h"
#include "sim/config/units.h"
#include "training/algorithms/fedavg_options.h"
#include "training/algorithms/registry.h"

namespace testbed {
namespace {

const DevicePreset* preset_of(const std::string& device) {
  for (const auto& p : device_presets())
    if (p.name == device) return &p;
  return nullptr;
}

// "2 clusters of 2" or, when the sizes differ, "3 clusters (2, 2, 1 nodes)".
std::string clusters_text(const std::vector<int>& cluster_of) {
  std::map<int, int> sizes;
  for (int c : cluster_of) ++sizes[c];
  bool equal = true;
  for (const auto& [c, n] : sizes) equal = equal && n == sizes.begin()->second;
  std::string text = std::to_string(sizes.size()) + " clusters";
  if (equal) return text + " of " + std::to_string(sizes.begin()->second);
  std::string list;
  for (const auto& [c, n] : sizes) list += (list.empty() ? "" : ", ") + std::to_string(n);
  return text + " (" + list + " nodes)";
}

}  // namespace

std::map<std::string, std::string> resolved_notes(const Scenario& s) {
  std::map<std::string, std::string> notes;
  const ComputeSection& c = s.compute;
  if (const DevicePreset* p = preset_of(c.device)) {
    std::string peaks;
    for (Precision dtype : precisions())
      if (preset_peak(*p, dtype) > 0) peaks += format_flop_rate(preset_peak(*p, dtype)) + " " + enum_name(dtype) + ", ";
    notes["compute.device"] = "preset: " + peaks + format_byte_rate(p->memory_bandwidth) + ", " +
                              format_duration(p->launch_latency) + " a kernel launch";
    if (c.peak_flops.flops == 0)
      notes["compute.peak_flops"] =
          "0: the preset's " + enum_name(c.dtype) + " peak, " + format_flop_rate(preset_peak(*p, c.dtype));
    if (c.memory_bandwidth.bytes_per_s == 0)
      notes["compute.memory_bandwidth"] = "0: the preset's, " + format_byte_rate(p->memory_bandwidth);
    if (!c.launch_latency)
      notes["compute.launch_latency"] = "unset: the preset's, " + format_duration(p->launch_latency);
  }
  const CollectiveLibrary library = collective_library(s);
  if (!s.collective.library)
    notes["collective.library"] = "unset: " + enum_name(library) +
                                  (library == CollectiveLibrary::None ? " (the server and clients send models directly)"
                                   : library == CollectiveLibrary::Gloo ? " (PyTorch's backend for compute.device cpu)"
                                                                        : " (PyTorch's backend for GPUs)");
  if (!s.compute.overlap_slowdown)
    notes["compute.overlap_slowdown"] = "unset: " + enum_name(library) + "'s, " + format_number(overlap_slowdown(s));
  if (library != CollectiveLibrary::None) {
    // The preset's figures for the chosen transports, where the scenario does not set them.
    const CollectiveSection& col = s.collective;
    const LocalTransport local = local_transport(s);
    const NetworkTransport transport = network_transport(s);
    if (!col.transport)
      notes["collective.transport"] = "unset: " + enum_name(transport) +
                                      (transport == NetworkTransport::Ib ? " (links of 100 Gb/s and faster: RDMA NICs)"
                                       : library == CollectiveLibrary::Gloo ? " (Gloo's TCP)"
                                                                            : " (links under 100 Gb/s: TCP)");
    const LibraryCosts preset = preset_costs(library, transport, local);
    const std::string net = "unset: " + enum_name(library) + " over " + enum_name(transport) + "'s, ";
    const std::string in = "unset: " + enum_name(library) + " over " + enum_name(local) + "'s, ";
    auto cap = [](const RateLimit& r) { return r.cap_bps > 0 ? format_bandwidth(r.cap_bps) : std::string("none"); };
    if (!col.launch_latency)
      notes["collective.launch_latency"] = "unset: " + enum_name(library) + "'s, " + format_duration(preset.launch_s);
    if (!col.message_latency) notes["collective.message_latency"] = net + format_duration(preset.network.message_s);
    if (!col.bandwidth_share) notes["collective.bandwidth_share"] = net + format_number(preset.network.rate.share);
    if (!col.max_rate) notes["collective.max_rate"] = net + cap(preset.network.rate);
    if (s.topology.kind == TopologyKind::GpuHosts) {
      if (!col.local_transport)
        notes["collective.local_transport"] =
            "unset: " + enum_name(local) + (local == LocalTransport::P2p ? " (peer-to-peer)" : " (no peer-to-peer)");
      if (!col.local_message_latency)
        notes["collective.local_message_latency"] = in + format_duration(preset.local.message_s);
      if (!col.local_bandwidth_share)
        notes["collective.local_bandwidth_share"] = in + format_number(preset.local.rate.share);
      if (!col.local_max_rate) notes["collective.local_max_rate"] = in + cap(preset.local.rate);
    }
  }
  if (s.workload.eval_samples == 0) notes["workload.eval_samples"] = "0: the whole test split";
  const TopologySection& t = s.topology;
  if (t.kind == TopologyKind::Hierarchical && t.per_cluster == 0)
    notes["topology.per_cluster"] = "0: nodes / clusters = " + std::to_string(s.nodes / std::max(1, t.clusters));
  if (s.collective.algorithm == CollectiveAlgorithm::Hierarchical && s.collective.clusters.empty()) {
    const std::vector<int> cluster_of = node_clusters(s);
    notes["collective.clusters"] =
        cluster_of.empty() ? "[]: none from the topology" : "[]: the topology's, " + clusters_text(cluster_of);
  }
  if (const auto* fed = std::get_if<FedAvgOptions>(&s.algorithm.options)) {
    if (fed->server < 0) {
      const int host = t.kind == TopologyKind::Hierarchical ? topology_spec(s).hosts - 1 : s.nodes;
      notes["algorithm.server"] = "-1: the host after the clients' (host " + std::to_string(host) + ")";
    }
    if (!fed->deadline) notes["algorithm.deadline"] = "none (a round waits for every upload)";
    if (!fed->vhl) notes["algorithm.vhl"] = "none (VHL's virtual data: {virtual_samples: 200, weight: 1})";
    if (fed->clients_per_round == 0)
      notes["algorithm.clients_per_round"] = "0: round(fraction x nodes) = " + std::to_string(fed->picked(s.nodes));
  }
  return notes;
}

}  // namespace testbed
