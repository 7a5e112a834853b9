// Every algorithm by name: its options (scenario keys, with defaults and ranges) and its
// factory. Without LibTorch, so the scenario holds typed options and `validate` sees them.
// Adding an algorithm: its .cpp (with its factory), its *_options.h when it takes keys, the
// factory's declaration and its line in registry.cpp, and its options type in the variant.
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
#include "training/algorithms/topk_options.h"

namespace testbed {

class Algorithm;
struct AlgorithmSettings;

// lofi takes no keys.
struct NoOptions {
  template <class V> void fields(V&) {}
  bool operator==(const NoOptions&) const = default;
};
// gossip takes no keys but needs topology neighbours.
struct GossipOptions {
  template <class V> void fields(V&) {}
  std::optional<std::string> neighbour_key() const { return "name"; }
  bool operator==(const GossipOptions&) const = default;
};

using AlgorithmOptions = std::variant<NoOptions, GossipOptions, LocalSgdOptions, FedAvgOptions, OuterSyncOptions, StreamingOptions,
                                      SparseExchangeOptions, SpartaDilocoOptions, DemoOptions, DdpOptions, TopkOptions, SignOptions,
                                      PowerSgdOptions, AcpSgdOptions, DearOptions>;

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
};

// The collective plans a run builds and keeps (the engine caches one per participants and
// size): one per fragment, per tensor of a layerwise selection, per sampled subset of clients;
// a neighbour exchange where the options exchange with neighbours.
struct HeldPlans {
  SyncCollective collective = SyncCollective::AllReduce;
  int64_t count = 1;
};
std::vector<HeldPlans> held_plans(const AlgorithmEntry& entry, const AlgorithmOptions& options,
                                  int parameter_tensors, int nodes, int steps);

const std::vector<AlgorithmEntry>& algorithm_registry();
const AlgorithmEntry* find_algorithm(const std::string& name);  // nullptr when unknown
std::vector<std::string> algorithm_names();                     // in registry order

// Each algorithm's factory, defined in the algorithm's own file.
std::unique_ptr<Algorithm> make_ddp(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_topk(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_signsgd(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_powersgd(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_acpsgd(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_dear(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_lofi(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_local_sgd(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_streaming_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_sparta(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_sparta_diloco(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_demo(const AlgorithmSettings&);
std::unique_ptr<Algorithm> make_gossip(const AlgorithmSettings&);

}  // namespace testbed
