// Every algorithm by name: its options (scenario keys, with defaults and ranges) and its
// factory. Without LibTorch, so the scenario holds typed options and `validate` sees them.
// Adding an algorithm (docs/algorithms.md#adding-one): its .cpp with its factory and, when it
// takes keys, its *_options.h; here, its factory in TESTBED_ALGORITHM_FACTORIES, its options
// type in the variant, and its line in registry.cpp. Builds, stand-ins and the tests' lists
// follow; tests fail until it has a projection case, a scenario and its docs rows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "training/algorithms/acpsgd_options.h"
#include "training/algorithms/ddp_options.h"
#include "training/algorithms/dear_options.h"
#include "training/algorithms/demo_options.h"
#include "training/algorithms/fedavg_options.h"
#include "training/algorithms/local_sgd_options.h"
#include "training/algorithms/outer_sync_options.h"
#include "training/algorithms/powersgd_options.h"
#include "training/algorithms/signsgd_options.h"
#include "training/algorithms/sparse_exchange_options.h"
#include "training/algorithms/split_options.h"
#include "training/algorithms/topk_options.h"

namespace testbed {

class Algorithm;
struct AlgorithmSettings;

// lofi and int8 take no keys.
struct NoOptions {
  template <class V>
  void fields(V&) {}
  bool operator==(const NoOptions&) const = default;
};
// gossip takes no keys but needs topology neighbours.
struct GossipOptions {
  template <class V>
  void fields(V&) {}
  std::optional<std::string> neighbour_key() const { return "name"; }
  bool operator==(const GossipOptions&) const = default;
};

using AlgorithmOptions =
    std::variant<NoOptions, GossipOptions, LocalSgdOptions, FedAvgOptions, OuterSyncOptions, StreamingOptions,
                 SparseExchangeOptions, SpartaDilocoOptions, DemoOptions, DdpOptions, TopkOptions, SignOptions,
                 PowerSgdOptions, AcpSgdOptions, DearOptions, SplitOptions>;

// The options' rule between keys, when they have one.
std::optional<OptionError> check_options(const AlgorithmOptions& options);
// The key to blame when a node has no topology neighbour, for options that exchange with them.
std::optional<std::string> neighbour_key(const AlgorithmOptions& options);

using AlgorithmFactory = std::unique_ptr<Algorithm> (*)(const AlgorithmSettings&);

// The collective an algorithm's exchange runs over the nodes, for the memory estimate's
// message tables (a neighbour exchange is chosen by the options: see sync_collective).
enum class SyncCollective { AllReduce, AllGather, NeighbourExchange };

struct AlgorithmEntry {
  std::string name;
  AlgorithmOptions defaults;  // its keys' alternative, with its defaults
  AlgorithmFactory make;
  // Parameter-sized vectors the algorithm keeps per node beyond the replica (outer copy and
  // momentum, DeMo's momentum), for the memory estimate a run is refused on.
  int state_vectors = 0;
  SyncCollective sync = SyncCollective::AllReduce;
  // Its next step's forward waits for its ops (CommOp::before_forward), timed before the step
  // runs: it needs a compute model that knows a step's time beforehand.
  bool forward_waits = false;
  // Runs as a server and sampled clients (sim/core/federated/federated_run.h), not on the engine's
  // nodes: the topology has a host more than `nodes`, the server's.
  bool federated = false;
  // Its only collectives are all-reduces over every node issued during backward (one stream a
  // node): a flow projection times them on lanes and keeps no plan (memory estimate).
  bool backward_all_reduces = false;
  // Its nodes are edges that talk to a host of its own after them, the cloud (split): the
  // topology has a host more than `nodes`. Their models are their own, never averaged: an
  // evaluation is the mean of theirs, not of an averaged model's.
  bool cloud = false;
};

// The collective plans a run builds and keeps (the engine caches one per participants and
// size): one per fragment, per tensor of a layerwise selection, per sampled subset of clients;
// a neighbour exchange where the options exchange with neighbours.
struct HeldPlans {
  SyncCollective collective = SyncCollective::AllReduce;
  int64_t count = 1;
};
std::vector<HeldPlans> held_plans(const AlgorithmEntry& entry, const AlgorithmOptions& options, int parameter_tensors,
                                  int nodes, int steps);

const std::vector<AlgorithmEntry>& algorithm_registry();
const AlgorithmEntry* find_algorithm(const std::string& name);  // nullptr when unknown
std::vector<std::string> algorithm_names();                     // in registry order

// Each algorithm's factory, `make_<name>`, defined in the algorithm's own file: declared here
// from this list, and stood in for from it where LibTorch is absent (tests/fuzz/).
// Kept by hand: clang-format reflows this list differently at each pass.
// clang-format off
#define TESTBED_ALGORITHM_FACTORIES(X)                                                                 \
  X(make_ddp) X(make_topk) X(make_signsgd) X(make_powersgd) X(make_acpsgd) X(make_dear) X(make_lofi)   \
  X(make_local_sgd) X(make_diloco) X(make_streaming_diloco) X(make_sparta) X(make_sparta_diloco)     \
  X(make_demo) X(make_gossip) X(make_int8) X(make_split)
// clang-format on
#define TESTBED_DECLARE_FACTORY(factory) std::unique_ptr<Algorithm> factory(const AlgorithmSettings&);
TESTBED_ALGORITHM_FACTORIES(TESTBED_DECLARE_FACTORY)
#undef TESTBED_DECLARE_FACTORY

}  // namespace testbed
