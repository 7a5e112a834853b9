// SPARTA's sparse parameter averaging, shared by sparta and sparta_diloco: after a local
// step, a fraction p of the parameters, chosen by a generator every node seeds alike (so
// no indices travel), is averaged across all nodes or with topology neighbours.
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
  SparseExchange(int nodes, uint64_t seed, std::vector<std::vector<int>> neighbours,
                 std::vector<int64_t> tensor_sizes, const SparseExchangeOptions& options);
  void issue(int node, int step, Replica& replica, std::vector<CommOp>& comm);
  static bool owns(const CommOp& op);
  void apply(int node, int issued_step, Replica& replica, CommOp& op);
  // The copies of delayed ops' values (delay > 0) that `apply` still needs.
  void save(int node, AlgorithmState& state) const;
  void load(int node, const AlgorithmState& state);
  // The indices exchanged after `step` (sorted); the same on every node.
  torch::Tensor indices(int step) const;

 private:
  int nodes_;
  uint64_t seed_;
  std::vector<std::vector<int>> neighbours_;
  std::vector<int64_t> tensor_sizes_;
  int64_t d_ = 0;
  SparseExchangeOptions options_;
  std::vector<int64_t> order_;  // shuffled_sequential: one permutation of 0..d-1
  std::map<std::pair<int, int>, torch::Tensor> sent_;  // (node, step) -> values sent, while delayed
};

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
