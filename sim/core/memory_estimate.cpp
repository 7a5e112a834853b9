// The memory estimate: per node, the replica's parameter-sized vectors and LibTorch's objects;
// once, the evaluation model and the data set; the collective plans the run keeps (quadratic in
// the nodes for a ring or direct all-reduce); and ns-3's nodes, links and connections. The
// constants were measured here (docs/guarantees.md, "The memory estimate").
#include "sim/core/memory_estimate.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "comm/collective_options.h"
#include "comm/plans/plan_size.h"
#include "sim/config/device_memory.h"
#include "sim/config/scenario.h"
#include "sim/config/workload.h"
#include "sim/core/network_factory.h"
#include "sim/output/recorder.h"
#include "topologies/routing.h"
#include "topologies/topology.h"
#include "training/algorithms/registry.h"
#include "training/data/dataset.h"

namespace testbed {
namespace {

double tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<double>(t.numel()) * static_cast<double>(t.element_size()) : 0.0;
}

// Adam and AdamW keep two moments per parameter; SGD one momentum buffer when momentum > 0, and
// so does the SGD under a second-order optimizer (its own state: second_order_floats,
// sim/config/device_memory.h).
int optimizer_vectors(const OptimizerSection& o) {
  if (o.name == OptimizerKind::Sgd || o.second_order()) return o.momentum > 0 ? 1 : 0;
  return 2;
}

// "/proc/meminfo"'s value for `key` in bytes (it reports kB), or 0 when absent.
double meminfo_bytes(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream rest(line.substr(key.size() + 1));
    double kb = 0;
    rest >> kb;
    return kb * 1024.0;
  }
  return 0;
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

// Measured peak RSS slopes (docs/guarantees.md): a replica's modules, autograd and optimizer
// objects beyond its parameter-sized vectors (an MLP of 1 k parameters, 128 -> 512 nodes, less
// the plans' share); an ns-3 node with its stack, a point-to-point link with its two devices and
// queues (netbench p2p on rings and meshes of 32 to 1024 hosts); a TCP connection with its
// buffers (netbench ring all-reduce, 128 -> 512 hosts, less the plans' share).
constexpr double kReplicaObjectBytes = 100e3;
constexpr double kNs3VertexBytes = 19e3;
constexpr double kNs3LinkBytes = 14e3;
constexpr double kNs3ConnectionBytes = 160e3;

// A flow projection times a whole-fleet ring all-reduce issued during backward on lanes, with
// no plan, when it has more messages than a row each (ring_lanes.h; every ring of the fleet
// has at least 2 (p - 1) p) and no two of its connections' routes share a link.
bool ring_on_lanes(const Scenario& s, const AlgorithmEntry& a, const CollectiveOptions& o, const Topology& t) {
  const int64_t p = s.nodes;
  if (s.workload.train || s.replica_group.grouped() || s.network.backend != Backend::Flow || !s.network.flow_lanes ||
      !a.backward_all_reduces || o.algorithm != CollectiveAlgorithm::Ring ||
      2 * (p - 1) * p <= static_cast<int64_t>(kMessageRowsPerCollective))
    return false;
  const RoutingOptions routing = routing_options(s);
  std::set<std::pair<int, int>> links;
  for (int r = 0; r < p; ++r) {
    const std::vector<int> path = route(t, r, static_cast<int>((r + 1) % p), routing);
    for (size_t i = 0; i + 1 < path.size(); ++i)
      if (!links.insert({path[i], path[i + 1]}).second) return false;
  }
  return true;
}

PlanSize sync_plan_size(SyncCollective collective, const CollectiveOptions& options, const Topology& topology,
                        int nodes) {
  switch (collective) {
    case SyncCollective::AllReduce:
      return all_reduce_size(options, nodes);
    case SyncCollective::AllGather:
      return all_gather_size(options, nodes);
    case SyncCollective::NeighbourExchange: {
      std::vector<int> degrees;
      for (const auto& n : host_neighbours(topology)) degrees.push_back(static_cast<int>(n.size()));
      return neighbour_exchange_size(degrees);
    }
  }
  return {};
}

}  // namespace

MemoryEstimate estimate_memory(const Scenario& scenario, const Dataset& data, const ModelSize& model,
                               const Topology& topology) {
  MemoryEstimate e;
  const int64_t parameters = model.parameters;
  e.parameters = parameters;
  const AlgorithmEntry* algorithm = find_algorithm(scenario.algorithm.name);
  // Parameters and gradients (flat buffers), the optimizer's state, the algorithm's own state,
  // one op buffer (the vector a collective reduces) and one evaluation snapshot (each node's
  // parameters at an eval step, held until every node has reached it; the final eval always
  // runs) per node.
  e.vectors_per_replica =
      2 + optimizer_vectors(scenario.optimizer) + (algorithm ? algorithm->state_vectors : 0) + 1 + 1;
  const double vector_bytes = 4.0 * static_cast<double>(parameters);
  e.replicas_bytes = static_cast<double>(scenario.nodes) * (e.vectors_per_replica * vector_bytes + kReplicaObjectBytes);
  if (algorithm && algorithm->federated) {
    // One client's replica at a time, each picked client's upload until the round ends, and
    // the server's model and momentum (in double).
    const auto* options = std::get_if<FedAvgOptions>(&scenario.algorithm.options);
    const int picked = (options ? *options : FedAvgOptions{}).picked(scenario.nodes);
    e.replicas_bytes = e.vectors_per_replica * vector_bytes + kReplicaObjectBytes + (picked + 1 + 4) * vector_bytes;
    // Stateful clients in memory: every client's optimizer state, serialised.
    if (options && options->client_state == ClientState::Memory)
      e.client_state_bytes = static_cast<double>(scenario.nodes) * optimizer_vectors(scenario.optimizer) * vector_bytes;
  }
  if (scenario.workload.train && algorithm && !algorithm->federated)
    e.second_order_bytes = 4 * second_order_floats(scenario.optimizer, model.second_order, scenario.nodes);
  if (!scenario.workload.train) e.replicas_bytes = 0;  // a projection builds no replica: shapes only
  // The evaluation model, or a projection's one build of the model for its shapes (one block of
  // a transformer it repeats; none for the decoders described from their configuration).
  e.eval_model_bytes = scenario.workload.train ? vector_bytes : 4.0 * static_cast<double>(model.built_parameters);
  e.data_bytes = tensor_bytes(data.train_inputs) + tensor_bytes(data.train_targets) + tensor_bytes(data.test_inputs) +
                 tensor_bytes(data.test_targets) + tensor_bytes(data.train_groups);
  for (const auto& v : data.test_variants) e.data_bytes += tensor_bytes(v.inputs);

  // Plans over every node (the largest an op can have), as many as the algorithm keeps.
  std::vector<int> all(scenario.nodes);
  for (int n = 0; n < scenario.nodes; ++n) all[n] = n;
  const CollectiveOptions options = collective_options(collective_choice(scenario), all);
  int64_t connections = 0;
  const bool lanes = algorithm && ring_on_lanes(scenario, *algorithm, options, topology);
  if (algorithm) {
    for (const HeldPlans& held :
         held_plans(*algorithm, scenario.algorithm.options, model.tensors, scenario.nodes, scenario.workload.steps)) {
      if (lanes && held.collective == SyncCollective::AllReduce) continue;
      const PlanSize size = sync_plan_size(held.collective, options, topology, scenario.nodes);
      e.plan_messages += held.count * size.messages;
      e.message_tables_bytes += static_cast<double>(held.count) * plan_memory_bytes(size, scenario.nodes);
      connections = std::max(connections, size.pairs);
    }
  }
  if (scenario.network.backend == Backend::Ns3) {
    e.network_bytes = kNs3VertexBytes * topology.num_vertices() + kNs3LinkBytes * topology.num_links() +
                      kNs3ConnectionBytes * static_cast<double>(connections);
  }
  return e;
}

MachineMemory machine_memory() {
  MachineMemory m;
  m.available_bytes = meminfo_bytes("/proc/meminfo", "MemAvailable");
  m.address_space_used = meminfo_bytes("/proc/self/status", "VmSize");
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    m.address_space_limit = static_cast<double>(limit.rlim_cur);
  }
  return m;
}

std::string memory_refusal(const MemoryEstimate& e, const MachineMemory& m, int nodes) {
  std::ostringstream parts;
  parts << "the run needs about " << gib(e.total_bytes()) << " (";
  if (e.replicas_bytes > 0)
    parts << nodes << " replicas x " << e.vectors_per_replica << " vectors of " << e.parameters
          << " parameters: " << gib(e.replicas_bytes);
  else
    parts << "no replica, a projection of " << e.parameters << " parameters";
  parts << "; data " << gib(e.data_bytes) << "; evaluation model " << gib(e.eval_model_bytes)
        << "; collective plans of " << e.plan_messages << " messages: " << gib(e.message_tables_bytes) << "; network "
        << gib(e.network_bytes);
  if (e.client_state_bytes > 0) parts << "; the clients' optimizer state " << gib(e.client_state_bytes);
  if (e.second_order_bytes > 0) parts << "; " << gib(e.second_order_bytes) << " of second-order state";
  parts << ")";
  if (m.available_bytes > 0 && e.total_bytes() > m.available_bytes) {
    const bool state = e.client_state_bytes > 0 && e.total_bytes() - e.client_state_bytes <= m.available_bytes;
    return parts.str() + " but this machine has " + gib(m.available_bytes) +
           " available (/proc/meminfo MemAvailable); " +
           (state ? "spill the clients' state to disk (algorithm.client_state: disk)"
                  : "use fewer nodes or a smaller model");
  }
  if (m.address_space_limit && m.address_space_used + e.total_bytes() > *m.address_space_limit) {
    return parts.str() + " on top of the " + gib(m.address_space_used) +
           " this process maps already, but its address space is limited to " + gib(*m.address_space_limit) +
           " (ulimit -v)";
  }
  return "";
}

}  // namespace testbed
