// SPARTA's scenario keys (sparse_exchange.h carries them out), and sparta_diloco's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"
#include "training/algorithms/outer_sync_options.h"

namespace testbed {

// Which parameters a round exchanges.
enum class SpartaSelection {
  Random,              // a fresh seeded draw of round(p d) indices each round
  Bernoulli,           // each element with probability p, drawn afresh each round (EXO Gym's RandomIndexSelector)
  ShuffledSequential,  // consecutive windows of one seeded permutation of the flat vector
  Partitioned,         // each tensor a seeded random partition into ceil(1/p) parts, one part a round,
                       // redrawn every cycle (EXO Gym's PartitionedIndexSelector)
  Windows,             // consecutive windows of round(p d) of the parameters in order
  Layerwise,           // a fraction p of one parameter tensor, tensors in turn
};
// How the receivers learn which parameters a round exchanges: each draws them from the seed
// every node shares (no bytes), or node 0 draws them and broadcasts the mask, a byte an
// element (EXO Gym's SPARTA: dist.broadcast of a bool mask from rank 0 before the all-reduce).
enum class IndexTransport { Seeded, Broadcast };
// With whom: everyone, or topology neighbours (uniform mean, or Metropolis-Hastings weights).
enum class SparseExchangeWith { AllReduce, Ring, Gossip };

template <>
struct EnumNames<SpartaSelection> {
  static const std::vector<std::pair<SpartaSelection, std::string>>& all() {
    static const std::vector<std::pair<SpartaSelection, std::string>> names = {
        {SpartaSelection::Random, "random"},
        {SpartaSelection::Bernoulli, "bernoulli"},
        {SpartaSelection::ShuffledSequential, "shuffled_sequential"},
        {SpartaSelection::Partitioned, "partitioned"},
        {SpartaSelection::Windows, "windows"},
        {SpartaSelection::Layerwise, "layerwise"}};
    return names;
  }
};
template <>
struct EnumNames<IndexTransport> {
  static const std::vector<std::pair<IndexTransport, std::string>>& all() {
    static const std::vector<std::pair<IndexTransport, std::string>> names = {{IndexTransport::Seeded, "seeded"},
                                                                              {IndexTransport::Broadcast, "broadcast"}};
    return names;
  }
};
template <>
struct EnumNames<SparseExchangeWith> {
  static const std::vector<std::pair<SparseExchangeWith, std::string>>& all() {
    static const std::vector<std::pair<SparseExchangeWith, std::string>> names = {
        {SparseExchangeWith::AllReduce, "allreduce"},
        {SparseExchangeWith::Ring, "ring"},
        {SparseExchangeWith::Gossip, "gossip"}};
    return names;
  }
};

struct SparseExchangeOptions {
  double p = 0.005;  // fraction of the parameters exchanged
  SpartaSelection selection = SpartaSelection::Random;
  SparseExchangeWith exchange = SparseExchangeWith::AllReduce;
  int interval = 1;  // exchange after every `interval` steps
  int delay = 0;     // apply the average this many steps late (asynchronous SPARTA)
  IndexTransport index_transport = IndexTransport::Seeded;

  template <class V>
  void fields(V& v) {
    v.field("p", p, Range{0, 1, true});
    v.field("selection", selection);
    v.field("exchange", exchange);
    v.field("interval", interval, Range{1, 1e9});
    v.field("delay", delay, Range{0, 1e9});
    v.field("index_transport", index_transport);
  }
  // The values wait for the mask within the step (a second round), so they cannot be late.
  std::optional<OptionError> check() const {
    if (index_transport == IndexTransport::Broadcast && delay > 0)
      return OptionError{{"delay", "index_transport"},
                         "index_transport broadcast sends the values once the mask has arrived, in the same step: "
                         "delay must be 0"};
    return std::nullopt;
  }
  // A layerwise selection exchanges a share of one tensor at a time: a plan per tensor.
  int64_t plans_held(int parameter_tensors, int, int) const {
    return selection == SpartaSelection::Layerwise ? parameter_tensors : 1;
  }
  // The key to blame when a node has no topology neighbour to exchange with.
  std::optional<std::string> neighbour_key() const {
    if (exchange == SparseExchangeWith::AllReduce) return std::nullopt;
    return "exchange";
  }
  bool operator==(const SparseExchangeOptions&) const = default;
};

// sparta_diloco: SPARTA's exchange every step and DiLoCo's outer step every H.
struct SpartaDilocoOptions {
  SparseExchangeOptions sparse;
  OuterSyncOptions outer;

  template <class V>
  void fields(V& v) {
    sparse.fields(v);
    outer.fields(v);
  }
  std::optional<OptionError> check() const {
    if (auto e = sparse.check()) return e;
    return outer.check();
  }
  std::optional<std::string> neighbour_key() const { return sparse.neighbour_key(); }
  // The sparse exchange's plans; the outer sync all-reduces the whole model besides.
  int64_t plans_held(int parameter_tensors, int nodes, int steps) const {
    return sparse.plans_held(parameter_tensors, nodes, steps);
  }
  int64_t outer_all_reduce_plans() const { return 1; }
  bool operator==(const SpartaDilocoOptions&) const = default;
};

}  // namespace testbed
