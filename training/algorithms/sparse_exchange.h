// SPARTA's sparse parameter averaging, shared by sparta and sparta_diloco: after a local
// step, a fraction p of the parameters, chosen by a generator every node seeds alike (so
// no indices travel; or node 0's choice, broadcast as a mask), is averaged across all nodes
// or with topology neighbours.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/sparse_exchange_options.h"
#include "training/replica.h"

namespace testbed {

class SparseExchange {
 public:
  SparseExchange(int nodes, uint64_t seed, std::vector<std::vector<int>> neighbours, std::vector<int64_t> tensor_sizes,
                 const SparseExchangeOptions& options);
  void issue(int node, int step, Replica& replica, std::vector<CommOp>& comm);
  // index_transport broadcast: the mask is the step's first round, the values its second.
  bool broadcasts_mask() const { return options_.index_transport == IndexTransport::Broadcast; }
  void issue_after_mask(int node, Replica& replica, std::vector<CommOp>& comm);
  // The same ops from shapes alone (a projection): after `step`, and in its round after the mask.
  void project(int step, std::vector<CommOp>& comm) const;
  void project_after_mask(int step, std::vector<CommOp>& comm) const;
  static bool owns(const CommOp& op);
  void apply(int node, int issued_step, Replica& replica, CommOp& op);
  // The copies of delayed ops' values (delay > 0) that `apply` still needs.
  void save(int node, AlgorithmState& state) const;
  void load(int node, const AlgorithmState& state);
  // The indices exchanged after `step` (sorted); the same on every node.
  torch::Tensor indices(int step) const;
  // How many: indices(step).numel(), without drawing them where the count is known (all but
  // bernoulli, whose count is its draw's).
  int64_t index_count(int step) const;

 private:
  int nodes_;
  uint64_t seed_;
  std::vector<std::vector<int>> neighbours_;
  std::vector<int64_t> tensor_sizes_;
  // The values' op (delayed ones keep a copy of what they sent: `step` names it).
  void push_values(int node, int step, torch::Tensor values, std::vector<CommOp>& comm);
  CommOp values_op(torch::Tensor values) const;
  CommOp mask_op(torch::Tensor mask) const;
  int64_t k() const;  // round(p d), at least 1
  int64_t d_ = 0;
  SparseExchangeOptions options_;
  mutable std::vector<int64_t> order_;                   // shuffled_sequential: one permutation of 0..d-1, once needed
  mutable std::map<int64_t, int64_t> bernoulli_counts_;  // bernoulli: each round's count, once drawn
  std::map<std::pair<int, int>, torch::Tensor> sent_;    // (node, step) -> values sent, while delayed
  // index_transport broadcast, per node: the indices the arrived mask names, until their
  // values are sent (mask_) and until their average is applied (exchanged_).
  std::map<int, torch::Tensor> mask_, exchanged_;
};

// EXO Gym's Bernoulli mask, rand(d) < p from a generator seeded with `seed`: its indices
// (ascending) and its count, drawn `chunk` elements at a time (the same draw, in O(chunk)
// memory).
constexpr int64_t kBernoulliChunk = int64_t{1} << 22;
torch::Tensor bernoulli_indices(int64_t d, double p, uint64_t seed, int64_t chunk = kBernoulliChunk);
int64_t bernoulli_count(int64_t d, double p, uint64_t seed, int64_t chunk = kBernoulliChunk);

// Metropolis-Hastings mixing of a completed neighbour exchange: node i keeps
// 1 - sum of its neighbours' weights of its own buffer and takes 1 / (1 + max(deg i, deg j))
// of neighbour j's. The weights are symmetric and doubly stochastic. Where an element from a
// neighbour was lost (op.received_mask), that element mixes only the values that arrived,
// own included, their weights scaled to sum to one (no longer doubly stochastic there).
torch::Tensor metropolis_mix(const std::vector<std::vector<int>>& neighbours, int node, const CommOp& op);

// The uniform average of a node's buffer and its neighbours' (SPARTA's ring exchange); an
// element lost from a neighbour is averaged over the values that arrived, own included.
torch::Tensor masked_mean(const CommOp& op);

}  // namespace testbed
