// The algorithm registry: a name, its options with their defaults, and its factory.
#include "training/algorithms/registry.h"

namespace testbed {

const std::vector<AlgorithmEntry>& algorithm_registry() {
  // {name, options with defaults, factory, parameter-sized state vectors per node, collective}
  static const std::vector<AlgorithmEntry> entries = {
      {"ddp", DdpOptions{}, make_ddp, 0, SyncCollective::AllReduce, false, false, true},
      {"lofi", NoOptions{}, make_lofi, 0},
      {"local_sgd", LocalSgdOptions{}, make_local_sgd, 0},
      // A server and sampled clients: its own run loop (sim/core/federated/federated_run.h), no Algorithm.
      {"fedavg", FedAvgOptions{}, nullptr, 0, SyncCollective::AllReduce, false, true},
      {"diloco", OuterSyncOptions{}, make_diloco, 2},
      {"streaming_diloco", StreamingOptions{}, make_streaming_diloco, 2},
      {"sparta", SparseExchangeOptions{}, make_sparta, 0},
      {"sparta_diloco", SpartaDilocoOptions{}, make_sparta_diloco, 2},
      {"demo", DemoOptions{}, make_demo, 1, SyncCollective::AllGather},
      {"gossip", GossipOptions{}, make_gossip, 0, SyncCollective::NeighbourExchange},
      {"topk", TopkOptions{}, make_topk, 1, SyncCollective::AllGather},
      {"signsgd", SignOptions{}, make_signsgd, 1, SyncCollective::AllGather},
      {"powersgd", PowerSgdOptions{}, make_powersgd, 1},
      {"acpsgd", AcpSgdOptions{}, make_acpsgd, 1},
      // Its reduce-scatter plans are the size of its all-gathers (plan_size.h: all_gather_size).
      {"dear", DearOptions{}, make_dear, 0, SyncCollective::AllGather, true},
      // Edges and a cloud (split.cpp): no collective over the nodes, a cut op each to the cloud.
      {"split", SplitOptions{}, make_split, 0, SyncCollective::AllReduce, false, false, false, true},
      // The worked example of docs/algorithms.md#adding-one.
      {"int8", NoOptions{}, make_int8, 0, SyncCollective::AllGather},
  };
  return entries;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const auto& e : algorithm_registry()) out.push_back(e.name);
  return out;
}

const AlgorithmEntry* find_algorithm(const std::string& name) {
  for (const auto& e : algorithm_registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::optional<OptionError> check_options(const AlgorithmOptions& options) {
  return std::visit(
      [](const auto& o) -> std::optional<OptionError> {
        if constexpr (requires { o.check(); })
          return o.check();
        else
          return std::nullopt;
      },
      options);
}

std::optional<std::string> neighbour_key(const AlgorithmOptions& options) {
  return std::visit(
      [](const auto& o) -> std::optional<std::string> {
        if constexpr (requires { o.neighbour_key(); })
          return o.neighbour_key();
        else
          return std::nullopt;
      },
      options);
}

std::vector<HeldPlans> held_plans(const AlgorithmEntry& entry, const AlgorithmOptions& options, int parameter_tensors,
                                  int nodes, int steps) {
  const SyncCollective main = neighbour_key(options) ? SyncCollective::NeighbourExchange : entry.sync;
  return std::visit(
      [&](const auto& o) {
        std::vector<HeldPlans> out{{main, 1}};
        if constexpr (requires { o.plans_held(parameter_tensors, nodes, steps); })
          out[0].count = o.plans_held(parameter_tensors, nodes, steps);
        if constexpr (requires { o.outer_all_reduce_plans(); })
          out.push_back({SyncCollective::AllReduce, o.outer_all_reduce_plans()});
        return out;
      },
      options);
}

}  // namespace testbed
