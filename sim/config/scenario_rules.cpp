// The scenario's domain rules: each stated once, each error at the key that caused it.
// resolve_scenario fills what depends on other keys or on the file's place; check_scenario
// only reads, building the topology and the model once.
#include "sim/config/scenario_rules.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "netmodels/tcp_retries.h"
#include "sim/config/bandwidth_trace.h"
#include "sim/config/data_dirs.h"
#include "sim/config/device_memory.h"
#include "sim/config/device_presets.h"
#include "sim/config/layer_profile.h"
#include "sim/config/model_check.h"
#include "topologies/routing.h"
#include "training/algorithms/fsdp_units.h"
#include "training/algorithms/registry.h"
#include "training/data/shift_names.h"

namespace testbed {
namespace {

// A path in a scenario file is relative to that file, so that scenarios in the repository
// can name ../shared data wherever they are run from; a --set path is relative to the
// working directory. Absolute afterwards, so that re-reading the written scenario agrees.
void make_absolute(std::string& path, const std::string& key, const Origins& origins) {
  if (path.empty()) return;
  std::filesystem::path file = path;
  const Location loc = origins.where(key);
  if (file.is_relative() && origins.seen(key) && loc.origin.rfind("--set ", 0) != 0)
    file = std::filesystem::path(loc.origin).parent_path() / file;
  path = std::filesystem::absolute(file).lexically_normal().string();
}

// The first key the scenario gave at or under `key` (a section's leaves are remembered), else `key`.
std::string given_under(const Origins& origins, const std::string& key) {
  for (const auto& [path, where] : origins.all())
    if (path == key || path.rfind(key + ".", 0) == 0) return path;
  return key;
}

// A key that only counts when another key has some value would be silently ignored otherwise
// (a WAN under a ring, a momentum under Adam). Refused at the key when it differs from its
// default: validate's output writes every key at its value, and must load again.
struct DependentKey {
  std::string key;    // its dotted path
  bool given;         // its value differs from the default
  bool counts;        // the scenario as resolved reads it
  std::string needs;  // what would make it count ("topology.kind: hierarchical")
  std::string now;    // what the scenario has instead ("topology.kind ring")
};

// Each link's bandwidth trace: only ns3 follows one; the file must read cleanly, its errors at
// its own lines.
void check_traces(const Scenario& s, const Origins& origins) {
  auto check = [&](const std::string& path, const std::string& key) {
    if (path.empty()) return;
    const Location loc = origins.where(key);
    if (s.network.backend != Backend::Ns3) {
      fail(loc, "the " + enum_name(s.network.backend) + " backend keeps bandwidth fixed; use ns3 for '" + key + "'");
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(loc, "bandwidth trace '" + path + "' not found");
    try {
      read_bandwidth_trace(path);
    } catch (const TraceError& e) {
      fail({e.path, e.line, e.col}, e.message);
    }
  };
  check(s.topology.link.trace, "topology.link.trace");
  check(s.topology.wan.trace, "topology.wan.trace");
  for (size_t i = 0; i < s.topology.links.size(); ++i)
    if (s.topology.links[i].trace) check(*s.topology.links[i].trace, "topology.links." + std::to_string(i) + ".trace");
}

// The key a topology builder's error is best reported at: the key of the kind's own
// size or file when the scenario gives it, else topology.kind.
std::string topology_error_key(const Scenario& s, const Origins& origins, const std::string& message) {
  const TopologyKind kind = s.topology.kind;
  auto mentions = [&](const char* word) { return message.find(word) != std::string::npos; };
  std::vector<std::string> candidates;
  if (kind == TopologyKind::Torus2d) candidates = {"topology.rows"};
  if (kind == TopologyKind::FatTree) candidates = {mentions("nodes") ? "nodes" : "topology.k"};
  if (kind == TopologyKind::Hierarchical)
    candidates = {mentions("topology.wan") ? "topology.wan" : "topology.per_cluster", "topology.clusters", "nodes"};
  if (kind == TopologyKind::GpuHosts)
    candidates = {mentions("gpu_link") ? "topology.gpu_link" : "topology.gpus_per_host", "nodes"};
  if (kind == TopologyKind::ErdosRenyi) candidates = {"topology.p"};
  if (kind == TopologyKind::WattsStrogatz) candidates = {mentions("beta") ? "topology.beta" : "topology.degree"};
  if (kind == TopologyKind::Graphml) {
    // A placement entry that names no node: point at that entry.
    for (size_t i = 0; i < s.topology.placement.size(); ++i)
      if (mentions("placement names") && mentions(("node '" + s.topology.placement[i] + "'").c_str()))
        candidates.push_back("topology.placement." + std::to_string(i));
    if (mentions("placement")) candidates.push_back("topology.placement");
    if (mentions("but the graph has only")) candidates.push_back("nodes");
    candidates.push_back("topology.file");
  }
  for (const auto& key : candidates)
    if (origins.seen(key)) return key;
  return "topology.kind";
}

// The topology's keys that one kind reads, and the links' burst-loss keys (dependent_keys).
void topology_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  const TopologySection dt;
  const TopologySection& t = s.topology;
  auto kind_key = [&](const char* key, TopologyKind kind, bool given) {
    keys.push_back({key, given, t.kind == kind, "kind: " + enum_name(kind), "topology.kind " + enum_name(t.kind)});
  };
  kind_key("topology.rows", TopologyKind::Torus2d, t.rows != dt.rows);
  kind_key("topology.k", TopologyKind::FatTree, t.k != dt.k);
  kind_key("topology.clusters", TopologyKind::Hierarchical, t.clusters != dt.clusters);
  kind_key("topology.per_cluster", TopologyKind::Hierarchical, t.per_cluster != dt.per_cluster);
  kind_key("topology.wan", TopologyKind::Hierarchical, !(t.wan == dt.wan));
  kind_key("topology.gpus_per_host", TopologyKind::GpuHosts, t.gpus_per_host != dt.gpus_per_host);
  kind_key("topology.interconnect", TopologyKind::GpuHosts, t.interconnect != dt.interconnect);
  keys.push_back({"topology.gpu_link", !(t.gpu_link == dt.gpu_link),
                  t.kind == TopologyKind::GpuHosts && t.interconnect == "custom",
                  "topology.kind: gpu_hosts and topology.interconnect: custom",
                  "topology.kind " + enum_name(t.kind) + ", topology.interconnect " + t.interconnect});
  kind_key("topology.p", TopologyKind::ErdosRenyi, t.p != dt.p);
  kind_key("topology.degree", TopologyKind::WattsStrogatz, t.degree != dt.degree);
  kind_key("topology.beta", TopologyKind::WattsStrogatz, t.beta != dt.beta);
  kind_key("topology.file", TopologyKind::Graphml, !t.file.empty());
  kind_key("topology.placement", TopologyKind::Graphml, !t.placement.empty());

  // Burst-loss parameters mean something only under the Gilbert-Elliott model.
  const LinkSection dl;
  auto burst_keys = [&](const std::string& link, LossModel model, bool p_good_bad, bool p_bad_good, bool loss_bad) {
    const bool ge = model == LossModel::GilbertElliott;
    for (const auto& [key, given] :
         {std::pair{"p_good_bad", p_good_bad}, {"p_bad_good", p_bad_good}, {"loss_bad", loss_bad}})
      keys.push_back(
          {link + "." + key, given, ge, "loss_model: gilbert_elliott", link + ".loss_model " + enum_name(model)});
  };
  auto section_burst = [&](const std::string& link, const LinkSection& l) {
    burst_keys(link, l.loss_model, !(l.p_good_bad == dl.p_good_bad), !(l.p_bad_good == dl.p_bad_good),
               !(l.loss_bad == dl.loss_bad));
  };
  section_burst("topology.link", t.link);
  // Loss is ns-3's alone (check_packet_features refuses a lossy link elsewhere); a loss model
  // whose chain never loses a packet would pass that check and do nothing.
  keys.push_back({"topology.link.loss_model", t.link.loss_model != dl.loss_model, s.network.backend == Backend::Ns3,
                  "network.backend: ns3", "network.backend " + enum_name(s.network.backend)});
  if (t.kind == TopologyKind::Hierarchical) section_burst("topology.wan", t.wan);
  for (size_t i = 0; i < t.links.size(); ++i) {
    const auto& o = t.links[i];
    // An override's burst keys count when its own model, or the default link's, is Gilbert-Elliott.
    burst_keys("topology.links." + std::to_string(i), o.loss_model.value_or(t.link.loss_model),
               o.p_good_bad.has_value(), o.p_bad_good.has_value(), o.loss_bad.has_value());
  }
}

// The topology, built once. When it cannot be built, the error is blamed on the key that
// caused it: the topology's own keys first, then the first link entry that breaks it.
Topology build_checked_topology(const Scenario& s, const Origins& origins) {
  const TopologySpec spec = topology_spec(s);
  try {
    return build_topology(spec);
  } catch (const std::invalid_argument&) {
  }
  TopologySpec plain = spec;
  plain.overrides.clear();
  try {
    build_topology(plain);
  } catch (const std::invalid_argument& e) {
    fail(origins.where(topology_error_key(s, origins, e.what())), e.what());
  }
  for (size_t i = 0; i < spec.overrides.size(); ++i) {
    plain.overrides = {spec.overrides[i]};
    try {
      build_topology(plain);
    } catch (const std::invalid_argument& e) {
      fail(origins.where("topology.links." + std::to_string(i)), e.what());
    }
  }
  // Link entries that fail only together: blamed on the list of them.
  try {
    return build_topology(spec);
  } catch (const std::invalid_argument& e) {
    fail(origins.where("topology.links"), e.what());
  }
}

// Loss, jitter and datagrams are packets' business: flow and analytical model reliable byte
// streams, so a lossy, jittery or udp scenario there would silently be something else.
void check_packet_features(const Scenario& s, const Topology& topology, const Origins& origins) {
  if (s.network.backend == Backend::Ns3) return;
  bool lossy = false;
  for (auto e : boost::make_iterator_range(boost::edges(topology.graph)))
    lossy = lossy || topology.graph[e].mean_loss() > 0;
  if (lossy) {
    fail(origins.where("network.backend"),
         "the " + enum_name(s.network.backend) + " backend models no loss; use ns3 for lossy links");
  }
  std::string jittery;
  if (s.topology.link.jitter.s > 0) jittery = "topology.link.jitter";
  if (jittery.empty() && s.topology.kind == TopologyKind::Hierarchical && s.topology.wan.jitter.s > 0)
    jittery = "topology.wan.jitter";
  for (size_t i = 0; i < s.topology.links.size() && jittery.empty(); ++i)
    if (s.topology.links[i].jitter && s.topology.links[i].jitter->s > 0)
      jittery = "topology.links." + std::to_string(i) + ".jitter";
  if (!jittery.empty()) {
    fail(origins.where(jittery),
         "the " + enum_name(s.network.backend) + " backend models no per-packet jitter; use ns3 for jittery links");
  }
  if (s.network.transport == Transport::Udp) {
    fail(origins.where("network.transport"), "transport udp needs the ns3 backend (the " +
                                                 enum_name(s.network.backend) +
                                                 " backend carries reliable streams only)");
  }
}

// The collective keys one collective algorithm reads, or none (dependent_keys).
void collective_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // A neighbour exchange is a plan of its own (each node to its topology neighbours): gossip,
  // and SPARTA exchanging over a ring or by gossip, run no collective, so its keys go unread.
  const CollectiveSection& col = s.collective;
  const CollectiveSection dcol;
  const auto& options = s.algorithm.options;
  const bool collectives = !(std::holds_alternative<GossipOptions>(options) ||
                             (std::holds_alternative<SparseExchangeOptions>(options) && neighbour_key(options)));
  // A federated run's server and clients exchange models directly, in a loop of their own.
  const AlgorithmEntry* entry = find_algorithm(s.algorithm.name);
  const bool federated = entry && entry->federated;
  for (const auto& [key, given] : {std::pair{"collective.algorithm", col.algorithm != dcol.algorithm},
                                   {"collective.slices", col.slices != dcol.slices}}) {
    if (federated)
      keys.push_back({key, given, false, "an algorithm that runs collectives",
                      "algorithm " + s.algorithm.name + ", whose server and clients exchange models directly"});
    else
      keys.push_back({key, given, collectives,
                      "an algorithm that runs collectives (all but gossip, and sparta with exchange ring or gossip)",
                      "algorithm " + s.algorithm.name + ", whose neighbour exchange is no collective"});
  }
  // Slices pipeline a ring: the ring all-reduce, the hierarchical leaders' ring, and the ring
  // all-gathers and reduce-scatters that algorithms gathering (DeMo, Top-k, Sign-SGD, DeAR) run
  // under every collective.algorithm but direct. An algorithm that only all-reduces, under a
  // tree, halving-doubling, direct or parameter-server all-reduce, reads none.
  if (collectives && !federated) {
    const bool ring = col.algorithm == CollectiveAlgorithm::Ring || col.algorithm == CollectiveAlgorithm::Hierarchical;
    const bool gathers = entry && entry->sync == SyncCollective::AllGather;
    keys.push_back({"collective.slices", col.slices != dcol.slices,
                    ring || (gathers && col.algorithm != CollectiveAlgorithm::Direct),
                    "collective.algorithm ring or hierarchical, or an algorithm that all-gathers on a ring",
                    "collective.algorithm " + enum_name(col.algorithm) + " and algorithm " + s.algorithm.name +
                        ", which only all-reduces"});
  }

  // The library rides every plan the comm layer runs (neighbour exchanges and a split's cut
  // included), not a federated run's own sends. Its transports belong to a library, the local
  // one and its figures to GPUs that share a host.
  const bool gpu_hosts = s.topology.kind == TopologyKind::GpuHosts;
  const CollectiveLibrary library = collective_library(s);
  const std::string direct = "algorithm " + s.algorithm.name + ", whose server and clients exchange models directly";
  const std::string comm_layer = "an algorithm whose messages the comm layer runs (all but fedavg's)";
  for (const auto& [key, given] : {std::pair{"collective.library", col.library.has_value()},
                                   {"collective.launch_latency", col.launch_latency.has_value()},
                                   {"collective.message_latency", col.message_latency.has_value()},
                                   {"collective.bandwidth_share", col.bandwidth_share.has_value()},
                                   {"collective.max_rate", col.max_rate.has_value()}})
    keys.push_back({key, given, !federated, comm_layer, direct});
  for (const auto& [key, given] : {std::pair{"collective.fusion_mb", col.fusion_mb != dcol.fusion_mb},
                                   {"collective.cycle_time", !(col.cycle_time == dcol.cycle_time)}})
    keys.push_back({key, given, !federated && library == CollectiveLibrary::Horovod, "collective.library horovod",
                    federated ? direct : "collective.library " + enum_name(library)});
  keys.push_back({"collective.transport", col.transport.has_value(), !federated && library != CollectiveLibrary::None,
                  "collective.library nccl or gloo", federated ? direct : "collective.library none"});
  keys.push_back({"collective.local_transport", col.local_transport.has_value(),
                  !federated && gpu_hosts && library != CollectiveLibrary::None,
                  "collective.library nccl or gloo, on topology.kind gpu_hosts",
                  federated ? direct
                  : !gpu_hosts
                      ? "topology.kind " + enum_name(s.topology.kind) + ", whose nodes are machines of their own"
                      : "collective.library none"});
  for (const auto& [key, given] : {std::pair{"collective.local_message_latency", col.local_message_latency.has_value()},
                                   {"collective.local_bandwidth_share", col.local_bandwidth_share.has_value()},
                                   {"collective.local_max_rate", col.local_max_rate.has_value()}})
    keys.push_back({key, given, !federated && gpu_hosts, "topology.kind gpu_hosts (GPUs that share a host)",
                    federated
                        ? direct
                        : "topology.kind " + enum_name(s.topology.kind) + ", whose nodes are machines of their own"});

  // A collective's server and clusters belong to the algorithm that uses them.
  keys.push_back({"collective.server", col.server != CollectiveSection{}.server,
                  col.algorithm == CollectiveAlgorithm::ParameterServer, "collective.algorithm: parameter_server",
                  "collective.algorithm " + enum_name(col.algorithm)});
  keys.push_back({"collective.clusters", !col.clusters.empty(), col.algorithm == CollectiveAlgorithm::Hierarchical,
                  "collective.algorithm: hierarchical", "collective.algorithm " + enum_name(col.algorithm)});
}

// The server is a node; explicit clusters partition the nodes; the hierarchical algorithm
// needs clusters from somewhere.
void check_collective(const Scenario& s, const Origins& origins) {
  const auto& c = s.collective;
  if (c.server >= s.nodes)
    fail(origins.where("collective.server"),
         "server " + std::to_string(c.server) + " is not a node (0.." + std::to_string(s.nodes - 1) + ")");
  std::vector<int> owner(s.nodes, -1);
  for (size_t i = 0; i < c.clusters.size(); ++i) {
    const std::string item = "collective.clusters." + std::to_string(i);
    if (c.clusters[i].empty()) fail(origins.where(item), "a cluster needs at least one node");
    for (size_t j = 0; j < c.clusters[i].size(); ++j) {
      const int node = c.clusters[i][j];
      const Location loc = origins.where(item + "." + std::to_string(j));
      if (node < 0 || node >= s.nodes)
        fail(loc, "node " + std::to_string(node) + " is not a node (0.." + std::to_string(s.nodes - 1) + ")");
      if (owner[node] >= 0)
        fail(loc, "node " + std::to_string(node) + " is already in cluster " + std::to_string(owner[node]));
      owner[node] = static_cast<int>(i);
    }
  }
  if (!c.clusters.empty()) {
    for (int n = 0; n < s.nodes; ++n)
      if (owner[n] < 0) fail(origins.where("collective.clusters"), "node " + std::to_string(n) + " is in no cluster");
  }
  // NCCL runs on GPUs: a CPU device is Gloo's (or MPI's).
  if ((c.library == CollectiveLibrary::Nccl || c.library == CollectiveLibrary::Horovod) && s.compute.reads_device() &&
      s.compute.device == "cpu")
    fail(origins.where("collective.library"), enum_name(*c.library) +
                                                  " needs GPUs (NCCL), and compute.device is cpu: use "
                                                  "collective.library gloo for CPU tensors");
  if (c.algorithm == CollectiveAlgorithm::Hierarchical && node_clusters(s).empty())
    fail(origins.where("collective.algorithm"),
         "the hierarchical collective needs clusters: use topology.kind hierarchical or fat_tree, or give "
         "collective.clusters such as [[0, 1], [2, 3]]");
}

// The chosen algorithm's own rule between its keys (its *_options.h), and its neighbours.
// A federated run: the server is one of the nodes + 1 hosts, rounds fit the steps, and what
// needs the engine (checkpoints) is refused.
void check_federated(const Scenario& s, const FedAvgOptions& o, const Origins& origins) {
  if (o.clients_per_round > s.nodes) {
    fail(origins.where("algorithm.clients_per_round"), "clients_per_round " + std::to_string(o.clients_per_round) +
                                                           " is more than the " + std::to_string(s.nodes) +
                                                           " clients (nodes)");
  }
  if (o.deadline && o.deadline->s <= 0) {
    fail(origins.where("algorithm.deadline"), "a round's deadline must be more than 0 seconds (leave it out for none)");
  }
  // The model is evaluated where a round ends; an eval_every between round ends would be moved
  // (one past the last step only asks for the final evaluation).
  if (s.workload.eval_every % o.H != 0 && s.workload.eval_every < s.workload.steps) {
    fail(origins.where(origins.blame({"workload.eval_every", "algorithm.H"})),
         "a federated run evaluates where a round ends: workload.eval_every (" + std::to_string(s.workload.eval_every) +
             ") must be a multiple of H = " + std::to_string(o.H) + " (leave it out to evaluate every round)");
  }
  if (s.workload.steps % o.H != 0) {
    fail(origins.where(origins.blame({"algorithm.H", "workload.steps"})),
         "workload.steps (" + std::to_string(s.workload.steps) +
             ") must be a whole number of rounds of H = " + std::to_string(o.H) + " local steps");
  }
  if (s.output.resume_every > 0) {
    fail(origins.where("output.resume_every"), "federated runs are not checkpointed yet; leave out resume_every");
  }
  if (s.topology.kind == TopologyKind::Hierarchical) {
    if (clients_per_cluster(s) * std::max(1, s.topology.clusters) != s.nodes) {
      fail(
          origins.where(origins.seen("topology.per_cluster") ? "topology.per_cluster" : "topology.clusters"),
          "a federated run on clusters needs nodes (" + std::to_string(s.nodes) + " clients) = clusters x per_cluster");
    }
    if (o.server >= 0) {
      fail(origins.where("algorithm.server"),
           "on a hierarchical topology the server is the host after the clusters' "
           "(each cluster's aggregator is its own host); leave out server");
    }
  }
  if (o.vhl && (s.workload.dataset != "fashion_mnist" || s.workload.model == "gpt")) {
    fail(origins.where("algorithm.vhl"),
         "VHL makes virtual images for an image classifier: it needs dataset "
         "fashion_mnist with model cnn or mlp, not " +
             s.workload.dataset + " with " + s.workload.model);
  }
}

// The server is a vertex: a host (the clients' and the one after them), or a switch.
void check_federated_server(const Scenario& s, const FedAvgOptions& o, const Topology& topology,
                            const Origins& origins) {
  const int vertices = topology.num_vertices();
  if (o.server >= vertices) {
    fail(origins.where("algorithm.server"),
         "server " + std::to_string(o.server) + " is not a vertex of the topology: it has " + std::to_string(vertices) +
             " (hosts 0.." + std::to_string(s.nodes) + ", the clients' and the server's" +
             (vertices > s.nodes + 1 ? ", switches " + std::to_string(s.nodes + 1) + ".." + std::to_string(vertices - 1)
                                     : "") +
             ")");
  }
  if (o.server > s.nodes && !s.network.faults.empty()) {
    fail(origins.where("algorithm.server"),
         "a switch's address is that of its first link, which network.faults may cut: "
         "make the server a host, or leave out the faults");
  }
}

void check_algorithm(const Scenario& s, const Topology& topology, const Origins& origins) {
  const auto& a = s.algorithm;
  if (const auto* fed = std::get_if<FedAvgOptions>(&a.options)) check_federated_server(s, *fed, topology, origins);
  auto key_of = [&](const std::vector<std::string>& keys) {
    std::vector<std::string> paths;
    for (const auto& k : keys) paths.push_back("algorithm." + k);
    return origins.blame(paths);
  };
  if (auto error = check_options(a.options)) fail(origins.where(key_of(error->keys)), error->message);
  const AlgorithmEntry* entry = find_algorithm(a.name);
  if (entry && entry->forward_waits && s.compute.model == ComputeKind::Measured) {
    fail(origins.where("compute.model"), a.name +
                                             " times each layer's forward against its all-gathers before the "
                                             "step runs, so it needs the step's time beforehand: use flops or fixed");
  }
  if (auto key = neighbour_key(a.options)) {
    const auto neighbours = host_neighbours(topology);
    for (size_t n = 0; n < neighbours.size(); ++n) {
      if (!neighbours[n].empty()) continue;
      fail(origins.where("algorithm." + *key),
           "node " + std::to_string(n) + " has no topology neighbour to exchange with");
    }
  }
}

// The keys one optimizer reads (dependent_keys).
void optimizer_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // SGD's momentum and Adam's betas.
  const OptimizerSection dopt;
  const OptimizerSection& opt = s.optimizer;
  const bool adam = opt.name == OptimizerKind::Adam || opt.name == OptimizerKind::AdamW;
  keys.push_back({"optimizer.momentum", opt.momentum != dopt.momentum,
                  opt.name == OptimizerKind::Sgd || opt.second_order(), "optimizer.name: sgd, eva, kfac or dp_kfac",
                  "optimizer.name " + enum_name(opt.name)});
  for (const auto& [key, given] : {std::pair{"optimizer.damping", opt.damping.has_value()},
                                   {"optimizer.kl_clip", opt.kl_clip != dopt.kl_clip},
                                   {"optimizer.factor_decay", opt.factor_decay != dopt.factor_decay}})
    keys.push_back({key, given, opt.second_order(), "optimizer.name: eva, kfac or dp_kfac",
                    "optimizer.name " + enum_name(opt.name)});
  keys.push_back({"optimizer.kfac_batch_size", opt.kfac_batch_size != dopt.kfac_batch_size,
                  opt.name == OptimizerKind::Eva, "optimizer.name: eva", "optimizer.name " + enum_name(opt.name)});
  keys.push_back({"optimizer.variant", opt.variant != dopt.variant,
                  opt.name == OptimizerKind::Kfac || opt.name == OptimizerKind::DpKfac,
                  "optimizer.name: kfac or dp_kfac", "optimizer.name " + enum_name(opt.name)});
  for (const auto& [key, given] : {std::pair{"optimizer.fac_update_freq", opt.fac_update_freq != dopt.fac_update_freq},
                                   {"optimizer.kfac_update_freq", opt.kfac_update_freq != dopt.kfac_update_freq}})
    keys.push_back({key, given, opt.name == OptimizerKind::Kfac || opt.name == OptimizerKind::DpKfac,
                    "optimizer.name: kfac or dp_kfac", "optimizer.name " + enum_name(opt.name)});
  for (const auto& [key, given] :
       {std::pair{"optimizer.beta1", opt.beta1 != dopt.beta1}, {"optimizer.beta2", opt.beta2 != dopt.beta2}})
    keys.push_back({key, given, adam, "optimizer.name: adam or adamw", "optimizer.name " + enum_name(opt.name)});
}

// The second-order optimizers read whole Linear and Conv2d layers and run as their references
// do: beside SGD on the mean gradient of DDP, messages of their own included, or (Eva) locally
// under the algorithms that train locally between exchanges.
void check_second_order(const Scenario& s, const Origins& origins) {
  const std::string name = enum_name(s.optimizer.name);
  if (!s.optimizer.second_order()) return;
  if (s.workload.adapter.kind != AdapterKind::None)
    fail(origins.where("workload.adapter.kind"),
         name + " preconditions whole Linear and Conv2d weights, which an adapter freezes");
  if (second_order_layers(s) == 0)
    fail(origins.where("optimizer.name"),
         "model '" + s.workload.model + "' offers " + name +
             " no Linear or Conv2d layers to precondition (mlp, cnn and the resnets do)");
  const std::vector<std::string> local = {"local_sgd", "diloco", "streaming_diloco", "sparta", "sparta_diloco",
                                          "lofi",      "gossip"};
  const bool runs_locally = std::find(local.begin(), local.end(), s.algorithm.name) != local.end();
  if (OptimizerSection::sends_second_order_messages(s.algorithm.name) ||
      (runs_locally && s.optimizer.name != OptimizerKind::DpKfac))
    return;
  std::string why = runs_locally ? "it deals its layers over DDP's nodes; alone on a node it is kfac"
                                 : s.algorithm.name + " exchanges gradients its own way";
  fail(origins.where("algorithm.name"),
       name + " runs with ddp or dear" +
           (s.optimizer.name == OptimizerKind::DpKfac
                ? std::string("")
                : ", local_sgd, diloco, streaming_diloco, sparta, sparta_diloco, lofi or gossip") +
           ", not with " + s.algorithm.name + " (" + why + ")");
}

// Split fine-tuning (training/algorithms/split.cpp): a transformer to cut, both halves timed by
// the roofline, the cloud a device preset; its cuts' bounds are the model's (check_workload).
void check_split(const Scenario& s, const Origins& origins) {
  const auto* o = std::get_if<SplitOptions>(&s.algorithm.options);
  if (!o || s.algorithm.name != "split") return;
  if (s.workload.model != "gpt" && s.workload.model != "bert")
    fail(origins.where("workload.model"),
         "split fine-tuning cuts a transformer block's feed-forward: it needs model gpt or "
         "bert, not " +
             s.workload.model);
  if (s.compute.model != ComputeKind::Flops)
    fail(origins.where("compute.model"),
         "split fine-tuning times the edge's half on compute.device and the cloud's on "
         "algorithm.cloud by the roofline: it needs compute.model flops, not " +
             enum_name(s.compute.model));
  std::vector<std::string> names;
  for (const auto& p : device_presets()) names.push_back(p.name);
  if (std::find(names.begin(), names.end(), o->cloud) == names.end())
    fail(origins.where("algorithm.cloud"),
         "unknown device preset '" + o->cloud + "'; valid: " + join(names) + nearest_hint(o->cloud, names));
  if (s.output.resume_every > 0)
    fail(origins.where("output.resume_every"), "split runs are not checkpointed yet; leave out resume_every");
  if (!s.output.checkpoint.empty())
    fail(origins.where("output.checkpoint"),
         "split fine-tuning's edges keep models of their own: there is no one model to save");
}

// The workload's keys one model, data set or adapter reads (dependent_keys).
void workload_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // The workload's sub-sections belong to one model, data set or adapter each.
  const WorkloadSection dw;
  const WorkloadSection& w = s.workload;
  auto same_gpt = [](const GptSection& a, const GptSection& b) {
    return a.preset == b.preset && a.layers == b.layers && a.heads == b.heads && a.width == b.width &&
           a.context == b.context && a.vocab == b.vocab && a.dropout == b.dropout;
  };
  keys.push_back(
      {"workload.gpt", !same_gpt(w.gpt, dw.gpt), w.model == "gpt", "workload.model: gpt", "workload.model " + w.model});
  keys.push_back({"workload.llama", !(w.llama == dw.llama), w.model == "llama", "workload.model: llama",
                  "workload.model " + w.model});
  keys.push_back(
      {"workload.bert", !(w.bert == dw.bert), w.model == "bert", "workload.model: bert", "workload.model " + w.model});
  const auto& sy = w.synthetic;
  const auto& dsy = dw.synthetic;
  const bool synthetic_given = sy.task != dsy.task || sy.inputs != dsy.inputs || sy.outputs != dsy.outputs ||
                               sy.hidden != dsy.hidden || sy.train_samples != dsy.train_samples ||
                               sy.test_samples != dsy.test_samples;
  keys.push_back({"workload.synthetic", synthetic_given, w.dataset == "synthetic", "workload.dataset: synthetic",
                  "workload.dataset " + w.dataset});
  // Only the data sets of files read a folder; the synthetic and ImageNet-shaped ones make samples.
  const bool reads_files = w.dataset == "fashion_mnist" || w.dataset == "brown" || w.dataset == "brown_genres";
  keys.push_back({"workload.data_dir", !w.data_dir.empty() && w.data_dir != default_data_dir(w.dataset), reads_files,
                  "workload.dataset fashion_mnist, brown or brown_genres",
                  "workload.dataset " + w.dataset + ", which reads no files"});
  for (const auto& [key, given] : {std::pair{"workload.adapter.rank", w.adapter.rank != dw.adapter.rank},
                                   {"workload.adapter.alpha", w.adapter.alpha != dw.adapter.alpha}})
    keys.push_back({key, given, w.adapter.kind != AdapterKind::None, "workload.adapter.kind: lora or lora_fa",
                    "workload.adapter.kind none"});
}

ModelShapes check_workload(const Scenario& s, const Origins& origins) {
  const auto& w = s.workload;
  const std::map<std::string, std::string> marker = {
      {"fashion_mnist", "train-images-idx3-ubyte.gz"}, {"brown", "ca01"}, {"brown_genres", "ca01"}};
  if (auto it = marker.find(w.dataset); it != marker.end()) {
    auto file = std::filesystem::path(w.data_dir) / it->second;
    if (!std::filesystem::exists(file)) {
      fail(origins.where(w.data_dir == default_data_dir(w.dataset) ? "workload.dataset" : "workload.data_dir"),
           "data set '" + w.dataset + "' not found (no " + file.string() + "); run scripts/install-deps.sh");
    }
  }
  bool language_model = w.model == "gpt" || w.model == "llama";
  if (language_model != (w.dataset == "brown") || (w.model == "bert") != (w.dataset == "brown_genres")) {
    fail(origins.where("workload.model"), "model '" + w.model + "' does not fit dataset '" + w.dataset +
                                              "' (gpt and llama train on brown, bert on brown_genres; mlp, cnn and "
                                              "the resnets on images, mlp on synthetic)");
  }
  if (w.dataset == "synthetic" && w.model != "mlp") {
    fail(origins.where("workload.model"), "the synthetic task trains an mlp");
  }
  const bool imagenet_only = w.model == "densenet201" || w.model == "inception_v4" || w.model == "vit_b_16";
  if (w.dataset == "imagenet_synthetic" && w.model.rfind("resnet", 0) != 0 && !imagenet_only) {
    fail(origins.where("workload.model"),
         "the ImageNet stand-in trains the resnets (resnet18 .. resnet152), densenet201, inception_v4 and vit_b_16");
  }
  if (imagenet_only && w.dataset != "imagenet_synthetic") {
    fail(origins.where("workload.model"), w.model + " takes ImageNet-shaped images: use dataset imagenet_synthetic");
  }
  if (w.model == "bert" && w.bert.head == "pretraining" && w.train) {
    fail(origins.where("workload.bert.head"),
         "BERT's pre-training heads are for projections (workload.train: false): training them needs masked-LM and "
         "next-sentence data, and brown_genres is labelled windows");
  }
  for (size_t i = 0; i < w.shifts.size(); ++i) {
    Location loc = origins.where("workload.shifts." + std::to_string(i));
    if (w.dataset != "fashion_mnist") fail(loc, "test-set shifts apply to image data sets only");
    const auto& names = image_shift_names();
    if (std::find(names.begin(), names.end(), w.shifts[i]) == names.end()) {
      fail(loc, "unknown shift '" + w.shifts[i] + "'; valid: " + join(names) + nearest_hint(w.shifts[i], names));
    }
  }
  bool regression = w.dataset == "synthetic" && w.synthetic.task == "regression";
  int labels = w.dataset == "fashion_mnist"        ? 10
               : w.dataset == "synthetic"          ? w.synthetic.outputs
               : w.dataset == "imagenet_synthetic" ? 1000
               : w.dataset == "brown_genres"       ? 15
                                                   : 0;
  for (size_t i = 0; i < w.classes.size(); ++i) {
    Location loc = origins.where("workload.classes." + std::to_string(i));
    if (labels == 0 || regression) fail(loc, "'classes' selects labels of a classification data set");
    if (w.classes[i] < 0 || w.classes[i] >= labels) {
      fail(loc, "class " + std::to_string(w.classes[i]) + " is not a label of '" + w.dataset + "' (0.." +
                    std::to_string(labels - 1) + ")");
    }
  }
  if (w.partition.kind == PartitionKind::Dirichlet && (w.dataset == "brown" || regression)) {
    fail(origins.where("workload.partition"), "a dirichlet partition needs class labels; use iid or category");
  }
  // Building the model (once) checks shapes (adapter rank, heads) and any checkpoint it starts from.
  try {
    return check_model(s);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    std::string where = w.adapter.kind != AdapterKind::None && what.find("rank") != std::string::npos
                            ? "workload.adapter.rank"
                            : (language_model || w.model == "bert" ? "workload." + w.model : "workload.model");
    // The cut's bounds (Model::split) are the split's keys'.
    if (what.rfind("split layer", 0) == 0) where = "algorithm.layer";
    if (what.rfind("split rank", 0) == 0) where = "algorithm.rank";
    if (what.rfind("split fine-tuning trains", 0) == 0) where = "workload.adapter.kind";
    fail(origins.where(where), what);
  } catch (const std::runtime_error& e) {
    fail(origins.where("workload.init_from"), e.what());
  }
}

void check_faults(const Scenario& s, const Topology& topology, const Origins& origins) {
  if (s.network.backend != Backend::Ns3) {
    fail(origins.where("network.faults"),
         "the " + enum_name(s.network.backend) + " backend models no faults; use ns3 for 'network.faults'");
  }
  const int nv = topology.num_vertices();
  for (size_t i = 0; i < s.network.faults.size(); ++i) {
    const auto& f = s.network.faults[i];
    const std::string item = "network.faults." + std::to_string(i);
    if (f.link.empty() == !f.node) fail(origins.where(item), "a fault names either 'link: [a, b]' or 'node: n'");
    if (f.node && (*f.node < 0 || *f.node >= nv)) {
      fail(origins.where(item + ".node"),
           "node " + std::to_string(*f.node) + " is not a vertex of the topology (0.." + std::to_string(nv - 1) + ")");
    }
    if (!f.link.empty()) {
      const bool pair = f.link.size() == 2;
      const bool inside = pair && f.link[0] >= 0 && f.link[0] < nv && f.link[1] >= 0 && f.link[1] < nv;
      if (!inside || !boost::edge(f.link[0], f.link[1], topology.graph).second) {
        std::string named;
        for (int v : f.link) named += (named.empty() ? "" : ", ") + std::to_string(v);
        fail(origins.where(item + ".link"), "[" + named + "] is not a link of the topology");
      }
    }
    if (f.down.size() != 2)
      fail(origins.where(origins.seen(item + ".down") ? item + ".down" : item),
           "'down' takes an interval [start, end], such as [30s, 45s]");
    if (!(f.down[0].s >= 0)) fail(origins.where(item + ".down.0"), "a fault cannot start before time 0");
    if (!(f.down[1].s > f.down[0].s)) {
      fail(origins.where(item + ".down.1"), "the fault's end " + format_number(f.down[1].s) +
                                                " s is not after its start " + format_number(f.down[0].s) + " s");
    }
  }
}

// Each background flow joins two vertices over an interval; onoff needs its rate, bulk has none.
void check_background(const Scenario& s, const Topology& topology, const Origins& origins) {
  if (s.network.backend != Backend::Ns3) {
    fail(origins.where("network.background"),
         "the " + enum_name(s.network.backend) +
             " backend carries no background traffic; use ns3 for 'network.background'");
  }
  const int nv = topology.num_vertices();
  for (size_t i = 0; i < s.network.background.size(); ++i) {
    const auto& b = s.network.background[i];
    const std::string item = "network.background." + std::to_string(i);
    for (const auto& [key, end] : {std::pair{"from", b.from}, std::pair{"to", b.to}}) {
      if (!end) fail(origins.where(item), std::string("a background flow needs '") + key + "' (a vertex)");
      if (*end >= nv) {
        fail(origins.where(item + "." + key),
             "vertex " + std::to_string(*end) + " is not in the topology (0.." + std::to_string(nv - 1) + ")");
      }
    }
    if (*b.from == *b.to) fail(origins.where(item + ".to"), "a background flow cannot go from a vertex to itself");
    if (b.kind == BackgroundKind::OnOff && !b.rate)
      fail(origins.where(item), "an onoff flow needs 'rate' (its rate while on)");
    if (b.kind == BackgroundKind::Bulk && b.rate) {
      fail(origins.where(item + ".rate"), "a bulk flow sends as fast as TCP lets it; 'rate' is for kind onoff");
    }
    // Without an end the simulation would never run out of events.
    if (!b.stop) fail(origins.where(item), "a background flow needs 'stop' (when it ends)");
    if (!(b.stop->s > b.start.s)) {
      fail(origins.where(item + ".stop"),
           "stop " + format_number(b.stop->s) + " s is not after start " + format_number(b.start.s) + " s");
    }
  }
}

// The longest ns-3's TCP (tcp-socket-base.cc, ns-3.37) waits for a segment's ACK before it
// drops the connection: DataRetries retransmissions (netmodels/tcp_retries.h), each
// after a timeout that doubles, capped at 60 s, then one more timeout. The first timeout comes
// from the handshake's one RTT sample S (SRTT S, RTTVAR S / 2: an RTO of 3 S, at least
// min_rto, plus the 1 ms clock granularity). A resent SYN does not void that sample (its
// history entry has no length to mark), so S is at most the longest handshake ns-3 waits for:
// syn_timeout doubling through ConnCount resends (the same count), 63 s by default.
struct TcpGiveUp {
  double first_timeout_s = 0, total_s = 0;
  int retries = 0;
};
TcpGiveUp tcp_give_up(const NetworkSection& n) {
  TcpGiveUp g;
  g.retries = ns3_tcp_retries(!n.faults.empty());
  const double longest_handshake = n.syn_timeout.s * (std::pow(2.0, g.retries) - 1);
  g.first_timeout_s = std::max(3 * longest_handshake, n.min_rto.s) + 1e-3;
  double rto = g.first_timeout_s;
  for (int i = 0; i <= g.retries; ++i, rto = std::min(2 * rto, 60.0)) g.total_s += rto;
  return g;
}

// Each link section of the scenario: topology.link, topology.wan and every topology.links entry,
// by key, with its rates (the reverse one only where an entry gives it), its latency and
// whether a trace replaces its rate.
struct LinkSectionView {
  std::string key;
  std::optional<Bandwidth> bandwidth, bandwidth_reverse;
  std::optional<Duration> latency;
  bool traced = false;
};
std::vector<LinkSectionView> link_sections(const Scenario& s) {
  const TopologySection& t = s.topology;
  std::vector<LinkSectionView> out = {
      {"topology.link", t.link.bandwidth, std::nullopt, t.link.latency, !t.link.trace.empty()},
      {"topology.wan", t.wan.bandwidth, std::nullopt, t.wan.latency, !t.wan.trace.empty()}};
  for (size_t i = 0; i < t.links.size(); ++i)
    out.push_back({"topology.links." + std::to_string(i), t.links[i].bandwidth, t.links[i].bandwidth_reverse,
                   t.links[i].latency, t.links[i].trace.has_value()});
  return out;
}

// A link on which one packet of the MTU takes longer to leave than TCP can wait for its ACK:
// no full-sized segment is ever acknowledged, so no TCP message of a packet or more crosses it.
void check_tcp_can_deliver(const Scenario& s, const Origins& origins) {
  const auto& n = s.network;
  if (n.backend != Backend::Ns3 || n.transport != Transport::Tcp) return;
  const double packet_bits = (n.mtu + 2) * 8.0;
  const TcpGiveUp give_up = tcp_give_up(n);
  auto check = [&](const std::string& key, const std::optional<Bandwidth>& bandwidth) {
    if (!bandwidth || !origins.seen(key) || bandwidth->bps <= 0) return;
    const double crossing = packet_bits / bandwidth->bps;
    if (crossing <= give_up.total_s) return;
    fail(origins.where(key),
         "at " + format_bandwidth(bandwidth->bps) + " one " + std::to_string(n.mtu) + "-byte packet takes " +
             format_duration(std::round(crossing)) + " to cross the link ((" + std::to_string(n.mtu) +
             " + 2) x 8 bits), and ns-3's TCP drops a connection whose segment is unacknowledged after at most " +
             format_duration(std::round(give_up.total_s)) + " (a first timeout of at most " +
             format_duration(std::round(give_up.first_timeout_s)) +
             ", three times the longest handshake it waits for, then doubling up to 60s, " +
             std::to_string(give_up.retries) +
             " retransmissions): no message of a packet or more would arrive. Give a faster link, a smaller "
             "network.mtu, or the flow backend");
  };
  for (const LinkSectionView& link : link_sections(s)) {
    if (link.traced) continue;
    check(link.key + ".bandwidth", link.bandwidth);
    check(link.key + ".bandwidth_reverse", link.bandwidth_reverse);
  }
}

// The network keys one backend or one kind of exchange reads (dependent_keys).
void network_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // The network keys one backend or one kind of exchange reads. TCP's settings are ns-3's
  // (flow and analytical carry reliable streams with no TCP), memoization replays ns-3's
  // phases, the MTU sets ns-3's packets and the flow model's header overhead. Datagrams
  // carry only neighbour exchanges (their receivers average what arrived); every reduction
  // and gather needs each byte and stays on TCP, so udp under them would be a TCP study.
  const NetworkSection dn;
  const NetworkSection& n = s.network;
  const bool ns3 = n.backend == Backend::Ns3;
  auto backend_key = [&](const char* key, bool given) {
    keys.push_back({key, given, ns3, "network.backend: ns3", "network.backend " + enum_name(n.backend)});
  };
  backend_key("network.tcp", n.tcp != dn.tcp);
  backend_key("network.min_rto", !(n.min_rto == dn.min_rto));
  backend_key("network.delayed_ack", n.delayed_ack != dn.delayed_ack);
  backend_key("network.syn_timeout", !(n.syn_timeout == dn.syn_timeout));
  backend_key("network.slow_start_after_idle", n.slow_start_after_idle != dn.slow_start_after_idle);
  backend_key("network.memoize", n.memoize != dn.memoize);
  keys.push_back({"network.flow_lanes", n.flow_lanes != dn.flow_lanes, n.backend == Backend::Flow && !s.workload.train,
                  "network.backend: flow in a projection (workload.train: false)",
                  n.backend == Backend::Flow ? "workload.train true" : "network.backend " + enum_name(n.backend)});
  keys.push_back({"network.mtu", n.mtu != dn.mtu, n.backend != Backend::Analytical, "network.backend: ns3 or flow",
                  "network.backend analytical"});
  if (ns3)  // elsewhere udp is refused for the backend (check_packet_features)
    keys.push_back({"network.transport", n.transport != dn.transport, neighbour_key(s.algorithm.options).has_value(),
                    "a neighbour exchange (algorithm gossip, or sparta or sparta_diloco with exchange: ring or gossip)",
                    "algorithm " + s.algorithm.name + ", whose reductions need every byte and stay on TCP"});
}

void check_network(const Scenario& s, const Topology& topology, const Origins& origins) {
  const auto& n = s.network;
  check_tcp_can_deliver(s, origins);
  if (!n.background.empty()) check_background(s, topology, origins);
  // Only the flow backend shares links by a rule; elsewhere rtt would silently do nothing.
  if (n.backend != Backend::Flow && n.flow_sharing != FlowSharingRule::MaxMin) {
    fail(origins.where("network.flow_sharing"),
         "flow_sharing " + enum_name(n.flow_sharing) + " needs the flow backend (" +
             (n.backend == Backend::Ns3 ? "in ns3 the TCP connections themselves share the links"
                                        : "the analytical backend does not share links") +
             ")");
  }
  // A queue is given when it differs from the default: to_yaml writes every key, and its
  // output must load again (flow and analytical scenarios, ns3 ones with queue_packets).
  const bool queue_given = origins.seen("network.queue") && n.queue != NetworkSection{}.queue;
  for (const auto& [key, given] :
       {std::pair{"network.queue", queue_given}, std::pair{"network.queue_packets", n.queue_packets.has_value()}}) {
    if (n.backend != Backend::Ns3 && given) {
      fail(origins.where(key),
           "the " + enum_name(n.backend) + " backend models no queues; use ns3 for '" + std::string(key) + "'");
    }
  }
  if (!n.faults.empty()) check_faults(s, topology, origins);
  if (n.queue_packets && queue_given) {
    fail(origins.where("network.queue_packets"), "give the device queue once: 'queue' or 'queue_packets'");
  }
  const QueueSize queue = parse_queue(n.queue);
  if (queue.bytes && !n.queue.empty() && std::isdigit(static_cast<unsigned char>(n.queue.back())))
    fail(origins.where("network.queue"), "'" + n.queue + "' has no unit: write " + n.queue + "B or " + n.queue +
                                             "KB (a size), or a multiple of the bandwidth-delay product (1.5bdp)");
  if (queue.bdp) {
    if (!(*queue.bdp > 0 && *queue.bdp <= 1e6))
      fail(origins.where("network.queue"), "a queue of " + n.queue + " must be in (0, 1e6] bdp");
  } else if (queue.bytes) {
    // Smaller than one packet, the queue would drop every packet it is offered.
    if (!(*queue.bytes >= n.mtu + 2 && *queue.bytes < 4.0e9)) {
      fail(origins.where("network.queue"),
           "a queue of " + n.queue + " does not hold one " + std::to_string(n.mtu) + "-byte packet (or exceeds 4 GB)");
    }
  } else {
    fail(origins.where("network.queue"),
         "cannot read queue '" + n.queue +
             "'; give a multiple of each link's bandwidth-delay product (1bdp, 0.5bdp) or bytes (256KB)");
  }
}

// A projection (workload.train false) computes no value: what needs one is refused at its key.
void check_projection(const Scenario& s, const Origins& origins) {
  if (s.workload.train) return;
  const std::string why = "a projection (workload.train false) ";
  if (s.compute.model == ComputeKind::Measured)
    fail(origins.where("compute.model"), why +
                                             "runs no step to measure; give a compute model that knows a step's "
                                             "time beforehand (flops or fixed)");
  if (const AlgorithmEntry* entry = find_algorithm(s.algorithm.name); entry && entry->federated)
    fail(origins.where("algorithm.name"), s.algorithm.name +
                                              " runs as a server and sampled clients in a loop of its "
                                              "own, which trains for real; " +
                                              why + "runs on the engine's nodes");
  if (s.output.resume_every > 0)
    fail(origins.where("output.resume_every"), why + "keeps no state to resume; it runs from shapes, start to end");
  if (!s.output.checkpoint.empty()) fail(origins.where("output.checkpoint"), why + "trains no model to save");
  if (!s.workload.init_from.empty())
    fail(origins.where("workload.init_from"), why + "loads no weights; it sizes everything from the model's shapes");
}

// The replica group's keys, read only in groups (dependent_keys).
void replica_group_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // A group's parallelism needs a group.
  keys.push_back({"replica_group.parallelism", s.replica_group.parallelism != ReplicaGroupSection{}.parallelism,
                  s.replica_group.grouped(), "replica_group.gpus above 1",
                  "replica_group.gpus " + std::to_string(s.replica_group.gpus)});
  keys.push_back({"replica_group.reduce_dtype", s.replica_group.reduce_dtype != ReplicaGroupSection{}.reduce_dtype,
                  s.replica_group.grouped() && s.replica_group.parallelism != GroupParallelism::Ddp,
                  "replica_group.parallelism zero1, zero2 or fsdp (and gpus above 1)",
                  "replica_group.parallelism " + enum_name(s.replica_group.parallelism)});
  keys.push_back({"replica_group.unit", !s.replica_group.unit.empty(),
                  s.replica_group.grouped() && s.replica_group.parallelism == GroupParallelism::Fsdp,
                  "replica_group.parallelism: fsdp (and gpus above 1)",
                  "replica_group.parallelism " + enum_name(s.replica_group.parallelism)});
}

// Replica groups (docs/replica_groups.md): G consecutive GPUs of a gpu_hosts topology, a host
// or whole hosts, each group one replica; the algorithm runs across groups slice by slice.
void check_replica_group(const Scenario& s, const Origins& origins) {
  const ReplicaGroupSection& g = s.replica_group;
  if (!g.grouped()) return;
  const std::string gpus = std::to_string(g.gpus);
  const auto where = origins.where("replica_group.gpus");
  if (s.topology.kind != TopologyKind::GpuHosts)
    fail(origins.where(origins.blame({"topology.kind", "replica_group.gpus"})),
         "a replica group of " + gpus +
             " GPUs needs a topology of hosts and their GPUs (topology.kind: gpu_hosts), not " +
             enum_name(s.topology.kind));
  if (g.gpus > s.nodes)
    fail(where, "a replica group of " + gpus + " GPUs is larger than the topology's " + std::to_string(s.nodes) +
                    " GPUs (nodes)");
  if (s.nodes % g.gpus != 0)
    fail(where, "the " + std::to_string(s.nodes) + " GPUs (nodes) do not split into groups of " + gpus);
  const int host = s.topology.gpus_per_host;
  if (g.gpus <= host ? host % g.gpus != 0 : g.gpus % host != 0)
    fail(where, "a group of " + gpus + " GPUs would straddle hosts of " + std::to_string(host) +
                    " (topology.gpus_per_host): give a divisor or a multiple of it");
  const AlgorithmEntry* entry = find_algorithm(s.algorithm.name);
  if (entry && (entry->federated || entry->cloud || entry->sync == SyncCollective::NeighbourExchange ||
                neighbour_key(s.algorithm.options)))
    fail(origins.where("algorithm.name"),
         s.algorithm.name + " cannot run across replica groups slice by slice: " +
             (entry->federated ? "its clients train whole models in a loop of its own"
              : entry->cloud   ? "its edges' cut sends activations, which no slice of the parameters holds"
                               : "it exchanges with topology neighbours, and a group's GPUs have different ones"));
  if (s.algorithm.name == "dear")
    fail(origins.where("algorithm.name"),
         "dear cannot run across replica groups: its reduce-scatters leave during "
         "backward and its all-gathers gate the forward, and across groups each waits "
         "for the group's own reductions (use ddp)");
  const std::vector<std::string> whole = {"powersgd", "acpsgd"};
  if (g.parallelism != GroupParallelism::Ddp && std::find(whole.begin(), whole.end(), s.algorithm.name) != whole.end())
    fail(origins.where("algorithm.name"), s.algorithm.name + " cannot run across " + enum_name(g.parallelism) +
                                              " groups: it factors whole gradient matrices, and a sharded GPU holds a "
                                              "slice of flat parameters");
  if (const auto* ddp = std::get_if<DdpOptions>(&s.algorithm.options); ddp && ddp->bucket_mb != DdpOptions{}.bucket_mb)
    fail(origins.where("algorithm.bucket_mb"),
         "algorithm.bucket_mb has no effect across replica groups: DDP across "
         "groups all-reduces the group's reduced gradient in one piece, once "
         "the group's own reductions are in");
  if (const auto* ddp = std::get_if<DdpOptions>(&s.algorithm.options); ddp && ddp->mgwfbp)
    fail(origins.where("algorithm.mgwfbp"),
         "mgwfbp merges gradients that leave during backward: across replica groups DDP sends one "
         "all-reduce after the group has reduced its gradient, so there is nothing to merge");
  if (s.workload.train) {
    // Training keeps each GPU's values exact where it owns them (replica_groups.cpp): the
    // algorithm's ops must be all-reduces of the flat parameters or their gradient, applied
    // element by element.
    const std::vector<std::string> trains = {"ddp", "diloco", "local_sgd"};
    if (std::find(trains.begin(), trains.end(), s.algorithm.name) == trains.end())
      fail(origins.where(origins.blame({"workload.train", "algorithm.name"})),
           s.algorithm.name +
               " runs across replica groups in a projection only (workload.train: false); replica "
               "groups train ddp, diloco and local_sgd, whose ops all-reduce the flat parameters or "
               "their gradient");
    if (const auto* outer = std::get_if<OuterSyncOptions>(&s.algorithm.options);
        outer && outer->dtype != WireFormat::Fp32 && outer->dtype != WireFormat::Bf16 &&
        outer->dtype != WireFormat::Fp16)
      fail(origins.where("algorithm.outer_dtype"),
           "an int8 or fp4 outer gradient is scaled by statistics of the whole "
           "vector, and a GPU of a replica group holds a slice of it: training "
           "across groups takes outer_dtype fp32, bf16 or fp16");
  }
  if (s.optimizer.second_order())
    fail(origins.where("optimizer.name"), enum_name(s.optimizer.name) +
                                              " preconditions whole layers; replica groups shard the "
                                              "parameters without regard to layers (use adamw, adam or sgd)");
}

// FSDP shards by unit: the pattern must name modules of the model, and the algorithm across
// groups must be one that works on a GPU's shard of flat parameters (docs/replica_groups.md#fsdp).
void check_fsdp(const Scenario& s, const ModelShapes& shapes, const Origins& origins) {
  const ReplicaGroupSection& g = s.replica_group;
  if (!g.grouped() || g.parallelism != GroupParallelism::Fsdp) return;
  const std::string pattern = fsdp_unit_pattern(s);
  if (pattern.empty())
    fail(origins.where("replica_group.parallelism"),
         "fsdp shards the model by unit, and model '" + s.workload.model +
             "' has no blocks or stages it knows of: give "
             "replica_group.unit, a pattern of module names such as 'fc*' or 'layers.*'");
  const auto where = origins.where(g.unit.empty() ? "replica_group.parallelism" : "replica_group.unit");
  if (!fsdp_pattern_valid(pattern))
    fail(where, "unit '" + pattern +
                    "' is not a pattern of module names ending in its one '*' (such as 'layers.*' or 'layer*')");
  const bool any = std::any_of(shapes.names.begin(), shapes.names.end(),
                               [&](const std::string& name) { return !fsdp_unit(name, pattern).empty(); });
  if (!any) {
    std::vector<std::string> some(shapes.names.begin(),
                                  shapes.names.begin() + std::min<size_t>(4, shapes.names.size()));
    fail(where, "unit '" + pattern + "' names no module of model '" + s.workload.model +
                    "' (its parameters: " + join(some) + (shapes.names.size() > 4 ? ", ..." : "") + ")");
  }
  if (s.workload.adapter.kind != AdapterKind::None)
    fail(origins.where("workload.adapter.kind"),
         "fsdp gathers whole units, frozen weights and all; with an adapter only "
         "the adapters' tensors are known to its units here: use zero1 or zero2");
}

// The keys one compute model reads (dependent_keys).
void compute_keys(const Scenario& s, std::vector<DependentKey>& keys) {
  // Each compute model reads its own keys.
  const ComputeSection dc;
  const ComputeSection& c = s.compute;
  auto compute_key = [&](const char* key, ComputeKind model, bool given) {
    keys.push_back(
        {key, given, c.model == model, "compute.model: " + enum_name(model), "compute.model " + enum_name(c.model)});
  };
  // The device's keys: the roofline's (flops), or what splits a profile's rows among layers.
  auto device_key = [&](const char* key, bool given) {
    keys.push_back(
        {key, given, c.reads_device(), "compute.model: flops or profile", "compute.model " + enum_name(c.model)});
  };
  compute_key("compute.step_time", ComputeKind::Fixed, !(c.step_time == dc.step_time));
  compute_key("compute.file", ComputeKind::Profile, !c.file.empty());
  device_key("compute.device", c.device != dc.device);
  device_key("compute.dtype", c.dtype != dc.dtype);
  device_key("compute.peak_flops", !(c.peak_flops == dc.peak_flops));
  device_key("compute.memory_bandwidth", !(c.memory_bandwidth == dc.memory_bandwidth));
  device_key("compute.launch_latency", c.launch_latency.has_value());
  device_key("compute.mfu", c.mfu.has_value());
  // The calibrated efficiencies' overrides; compute.mfu replaces them all (the flat model).
  for (const auto& [key, given] : {std::pair{"compute.gemm_efficiency", c.gemm_efficiency.has_value()},
                                   std::pair{"compute.convolution_efficiency", c.convolution_efficiency.has_value()},
                                   std::pair{"compute.memory_efficiency", c.memory_efficiency.has_value()}})
    keys.push_back({key, given, c.reads_device() && !c.mfu, "compute.model: flops or profile, and no compute.mfu",
                    !c.reads_device() ? "compute.model " + enum_name(c.model) : "compute.mfu, the flat model"});
  device_key("compute.memory_check", c.memory_check != dc.memory_check);
  device_key("compute.attention", c.attention != dc.attention);
  device_key("compute.memory_format", c.memory_format != dc.memory_format);
  device_key("compute.activation_checkpointing", c.activation_checkpointing != dc.activation_checkpointing);
  compute_key("compute.measured_scale", ComputeKind::Measured, c.measured_scale != dc.measured_scale);
  // Communication beside compute is the comm layer's, which a federated run's sends are not.
  const AlgorithmEntry* entry = find_algorithm(s.algorithm.name);
  const bool federated = entry && entry->federated;
  keys.push_back({"compute.overlap_slowdown", c.overlap_slowdown.has_value(), !federated,
                  "an algorithm whose messages the comm layer runs (all but fedavg's)",
                  "algorithm " + s.algorithm.name + ", whose server and clients exchange models directly"});
  // Every compute model scales by the nodes' speeds: listed ones, or drawn from the range.
  for (const auto& [key, given] : {std::pair{"compute.speed_min", c.speed_min != dc.speed_min},
                                   {"compute.speed_max", c.speed_max != dc.speed_max}})
    keys.push_back({key, given, c.speeds.empty(), "compute.speeds empty (the speeds are drawn from the range)",
                    "compute.speeds listed"});
}

void check_compute(const Scenario& s, const Origins& origins) {
  const auto& c = s.compute;
  if (c.activation_checkpointing) {
    const auto where = origins.where("compute.activation_checkpointing");
    if (c.model != ComputeKind::Flops)
      fail(where,
           "activation checkpointing adds each block's forward to its backward on the roofline: it needs "
           "compute.model flops, not " +
               enum_name(c.model));
    if (fsdp_unit_pattern(s).empty())
      fail(where,
           "model '" + s.workload.model + "' has no blocks or stages to checkpoint (a transformer or a ResNet has)");
    if (s.algorithm.name == "split") fail(where, "activation checkpointing of a split model is not modelled");
  }
  // MG-WFBP merges by each tensor's backward time, known before the run (engine_setup.cpp).
  if (const auto* ddp = std::get_if<DdpOptions>(&s.algorithm.options);
      ddp && ddp->mgwfbp && c.model == ComputeKind::Measured)
    fail(origins.where(origins.blame({"algorithm.mgwfbp", "compute.model"})),
         "mgwfbp merges by each tensor's backward time before the run: it needs a compute model that "
         "knows a step's time beforehand (fixed, flops or profile), not measured");
  for (size_t i = 0; i < c.speeds.size(); ++i) {
    if (!(c.speeds[i] > 0)) {
      fail(origins.where("compute.speeds." + std::to_string(i)), "a node's speed must be positive");
    }
  }
  if (c.speed_min > c.speed_max) {
    fail(origins.where("compute.speed_min"), "speed_min is larger than speed_max");
  }
  // A precision the device has no arithmetic for (BF16 on a V100) has no datasheet peak.
  if (!c.reads_device() || c.peak_flops.flops > 0) return;
  for (const auto& p : device_presets()) {
    if (p.name != c.device || preset_peak(p, c.dtype) > 0) continue;
    fail(origins.where(origins.blame({"compute.dtype", "compute.device"})),
         c.device + " has no " + enum_name(c.dtype) + " arithmetic (it has " + preset_dtypes(p) +
             "); pick one of those, or give compute.peak_flops");
  }
}

// What a GPU holds against its preset's memory (sim/config/device_memory.h), for the roofline's
// device: over it, the machine the run describes cannot exist.
std::vector<std::string> device_memory_overruns(const Scenario& s, const ModelShapes& shapes) {
  std::vector<std::string> overruns;
  if (!s.compute.reads_device() || s.compute.memory_check == MemoryCheck::Off) return overruns;
  for (const DeviceMemory& m : device_memory(s, shapes))
    if (m.total() > m.capacity) overruns.push_back(device_memory_text(m, s.workload.batch_size));
  return overruns;
}

// A measured profile must time this model: every row names layers of it, every layer is timed
// (the engine's layers, FlashAttention's fused kernels where compute.attention asks for them).
void check_profile(const Scenario& s, const ModelShapes& shapes, const Origins& origins) {
  if (s.compute.model != ComputeKind::Profile) return;
  if (s.compute.file.empty())
    fail(origins.where("compute.model"),
         "compute.model: profile needs compute.file, the CSV of measured layer times that "
         "python3 -m analysis.profile_layers writes");
  try {
    const auto layers = s.compute.attention == Attention::Flash ? fused_attention(shapes.layers) : shapes.layers;
    profile_owners(read_layer_profile(s.compute.file), layers);
  } catch (const std::invalid_argument& e) {
    fail(origins.where("compute.file"), e.what());
  }
}

void check_device_memory(const Scenario& s, const ModelShapes& shapes, const Origins& origins) {
  if (s.compute.memory_check != MemoryCheck::Error) return;
  const auto overruns = device_memory_overruns(s, shapes);
  if (overruns.empty()) return;
  fail(origins.where(origins.blame({"compute.device", "workload.batch_size"})),
       overruns.front() +
           ". The run would describe a GPU that cannot exist: use a smaller workload.batch_size, a device with more "
           "memory, replica groups that "
           "shard the model (replica_group), compute.activation_checkpointing, or compute.memory_check: "
           "warn to model what the testbed does not (offload to host memory)");
}

// Every key that counts only under another key's value, section by section (each section's
// beside its own checks above), in the order their refusals are tried.
std::vector<DependentKey> dependent_keys(const Scenario& s) {
  std::vector<DependentKey> keys;
  topology_keys(s, keys);
  compute_keys(s, keys);
  workload_keys(s, keys);
  optimizer_keys(s, keys);
  network_keys(s, keys);
  collective_keys(s, keys);
  replica_group_keys(s, keys);
  return keys;
}

void check_dependent_keys(const Scenario& s, const Origins& origins) {
  for (const DependentKey& k : dependent_keys(s)) {
    if (!k.given || k.counts) continue;
    fail(origins.where(given_under(origins, k.key)),
         "'" + k.key + "' has no effect with " + k.now + "; it is read only with " + k.needs);
  }
}

}  // namespace

void resolve_scenario(Scenario& s, const Origins& origins) {
  if (s.output.path.empty()) s.output.path = "results/" + s.name + ".h5";
  // Federated learning is read round by round: unless told otherwise, evaluate every round.
  if (const auto* fed = std::get_if<FedAvgOptions>(&s.algorithm.options); fed && !origins.seen("workload.eval_every"))
    s.workload.eval_every = fed->H;
  if (s.workload.data_dir.empty()) s.workload.data_dir = default_data_dir(s.workload.dataset);
  if (origins.seen("topology.file")) make_absolute(s.topology.file, "topology.file", origins);
  make_absolute(s.topology.link.trace, "topology.link.trace", origins);
  make_absolute(s.topology.wan.trace, "topology.wan.trace", origins);
  for (size_t i = 0; i < s.topology.links.size(); ++i)
    if (s.topology.links[i].trace)
      make_absolute(*s.topology.links[i].trace, "topology.links." + std::to_string(i) + ".trace", origins);
}

void check_scenario(const Scenario& s, const Origins& origins) {
  if (!std::regex_match(s.device, std::regex("cpu|cuda(:[0-9]+)?|mps"))) {
    // A compute preset here is the right value at the wrong level.
    std::string preset;
    for (const auto& p : ComputeSection::device_presets())
      if (std::regex_match(s.device, std::regex(p, std::regex::icase))) preset = p;
    fail(origins.where("device"),
         "device '" + s.device + "' is not cpu, cuda, cuda:N or mps (the torch device that trains)" +
             (preset.empty() ? "" : "; the compute model's device preset is compute.device: " + preset));
  }
  for (size_t i = 0; i < s.topology.links.size(); ++i) {
    const std::string item = "topology.links." + std::to_string(i);
    if (s.topology.links[i].between.size() != 2) {
      fail(origins.where(origins.seen(item + ".between") ? item + ".between" : item),
           "'between' takes two vertex indices, such as [0, 1]");
    }
  }
  check_dependent_keys(s, origins);
  check_traces(s, origins);
  // Before the topology: its hosts follow from the federated keys (the server, the aggregators).
  if (const auto* fed = std::get_if<FedAvgOptions>(&s.algorithm.options)) check_federated(s, *fed, origins);
  const Topology topology = build_checked_topology(s, origins);
  check_packet_features(s, topology, origins);
  check_network(s, topology, origins);
  if (s.compute.model == ComputeKind::Fixed && s.compute.step_time.s <= 0) {
    fail(origins.where("compute.step_time"), "the fixed compute model needs step_time > 0");
  }
  check_replica_group(s, origins);
  check_projection(s, origins);  // before the model is built from workload.init_from
  check_split(s, origins);
  const ModelShapes shapes = check_workload(s, origins);
  check_fsdp(s, shapes, origins);
  check_second_order(s, origins);
  check_compute(s, origins);
  check_device_memory(s, shapes, origins);
  check_profile(s, shapes, origins);
  check_algorithm(s, topology, origins);
  check_collective(s, origins);
}

std::vector<std::string> scenario_warnings(const Scenario& s, const Origins& origins) {
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& key, const std::string& message) {
    warnings.push_back(origins.where(key).str() + ": warning: " + message);
  };
  // Beyond what networks have: a latency over 10 s, a link under 1 kbps; said with what they
  // imply for one packet.
  const double packet_bits = (s.network.mtu + 2) * 8.0;
  auto check_link = [&](const std::string& key, const std::optional<Bandwidth>& bandwidth,
                        const std::optional<Duration>& latency) {
    if (latency && latency->s > 10 && origins.seen(key + ".latency"))
      warn(key + ".latency",
           "a latency of " + format_duration(latency->s) +
               " is longer than any network's: every hop of every packet, and every ACK back, waits that long");
    if (bandwidth && bandwidth->bps < 1e3 && origins.seen(key + ".bandwidth"))
      warn(key + ".bandwidth", "a link of " + format_bandwidth(bandwidth->bps) + " is slower than any network's: one " +
                                   std::to_string(s.network.mtu) + "-byte packet takes " +
                                   format_duration(std::round(packet_bits / bandwidth->bps)) +
                                   " to cross it, and every step waits for many of them");
  };
  for (const LinkSectionView& link : link_sections(s)) check_link(link.key, link.bandwidth, link.latency);
  // A hierarchical topology's links inside a cluster take topology.link, 100 Mbps unless given:
  // slower than the WAN between the clusters (1 Gbps by default), which few clusters are.
  if (s.topology.kind == TopologyKind::Hierarchical && !origins.seen("topology.link.bandwidth") &&
      s.topology.link.bandwidth.bps < s.topology.wan.bandwidth.bps)
    warn("topology.kind", "the links inside each cluster take topology.link.bandwidth, " +
                              format_bandwidth(s.topology.link.bandwidth.bps) + " by default, slower than the WAN (" +
                              format_bandwidth(s.topology.wan.bandwidth.bps) +
                              "); give topology.link.bandwidth to say so");
  // Beyond what devices have: under 1 GFLOPS or 1 GB/s.
  if (s.compute.peak_flops.flops > 0 && s.compute.peak_flops.flops < 1e9)
    warn("compute.peak_flops", "a peak of " + format_flop_rate(s.compute.peak_flops.flops) +
                                   " is below any device's (an A100 has 312TFLOPS in bf16)");
  if (s.compute.memory_bandwidth.bytes_per_s > 0 && s.compute.memory_bandwidth.bytes_per_s < 1e9)
    warn("compute.memory_bandwidth", "a memory bandwidth of " +
                                         format_byte_rate(s.compute.memory_bandwidth.bytes_per_s) +
                                         " is below any device's (an A100 has 2TB/s)");
  // A projection evaluates nothing: a training scenario's evaluation keys stay readable (so
  // that --set workload.train=false projects any scenario) but are said to do nothing.
  if (!s.workload.train) {
    const WorkloadSection dw;
    const WorkloadSection& w = s.workload;
    const OptimizerSection dopt;
    const OptimizerSection& o = s.optimizer;
    struct Unread {
      const char* key;
      bool given;
      const char* why;
    };
    const char* evaluates = "it evaluates nothing";
    const char* no_samples = "it loads no samples";
    // The optimizer's name and SGD's momentum set the update's memory traffic; its numbers do not.
    const char* no_update = "it updates no weights (the optimizer's name and momentum still set the update's cost)";
    for (const Unread& u :
         {Unread{"workload.eval_every", w.eval_every != dw.eval_every, evaluates},
          {"workload.eval_samples", w.eval_samples != dw.eval_samples, evaluates},
          {"workload.shifts", !w.shifts.empty(), evaluates},
          {"workload.correlation_pairs", w.correlation_pairs != dw.correlation_pairs, "it compares no replicas"},
          {"workload.partition", w.partition.kind != dw.partition.kind || w.partition.alpha != dw.partition.alpha,
           no_samples},
          {"workload.classes", !w.classes.empty(), no_samples},
          {"workload.init", w.init != dw.init, "it sets no weights"},
          {"optimizer.lr", o.lr != dopt.lr, no_update},
          {"optimizer.weight_decay", o.weight_decay != dopt.weight_decay, no_update},
          {"optimizer.beta1", o.beta1 != dopt.beta1, no_update},
          {"optimizer.beta2", o.beta2 != dopt.beta2, no_update},
          {"optimizer.damping", o.damping.has_value(), no_update},
          {"optimizer.kl_clip", o.kl_clip != dopt.kl_clip, no_update},
          {"optimizer.factor_decay", o.factor_decay != dopt.factor_decay, no_update},
          {"optimizer.kfac_batch_size", o.kfac_batch_size != dopt.kfac_batch_size, no_update}})
      if (u.given)
        warn(u.key, "'" + std::string(u.key) + "' has no effect in a projection (workload.train false): " + u.why);
  }
  // compute.memory_check warn: the overrun said, the run goes on (the model is built again).
  if (s.compute.memory_check == MemoryCheck::Warn && s.compute.reads_device()) {
    for (const auto& overrun : device_memory_overruns(s, check_model(s)))
      warn("compute.memory_check", overrun + ": more than the device holds, modelled on as asked");
  }
  return warnings;
}

}  // namespace testbed
