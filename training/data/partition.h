// Splitting a training set among nodes, and each node's batch order within its shard.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <torch/types.h>

namespace testbed {

// A seeded permutation of 0..n-1 (Fisher-Yates on mt19937_64, so it is the same everywhere).
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

// `count` of the n samples 0..n-1 chosen by seed, in increasing order: an evaluation subset
// drawn from the whole split, not its first documents (all n when count >= n or count <= 0).
std::vector<int64_t> seeded_subset(int64_t n, int64_t count, uint64_t seed);

// Equal-sized IID shards (the remainder n mod parts is left out, so every node sees as many samples).
std::vector<std::vector<int64_t>> iid_partition(int64_t samples, int parts, uint64_t seed);

// Label-skewed shards: for each group, its samples are split among nodes in proportions
// drawn from Dirichlet(alpha) (smaller alpha, more skew). Every sample lands in exactly one
// shard; a node left with nothing gets one sample from the largest shard.
std::vector<std::vector<int64_t>> dirichlet_partition(const std::vector<int64_t>& groups, int num_groups, int parts,
                                                      double alpha, uint64_t seed);

// Whole groups per node: group g goes to node g mod parts (with more nodes than groups,
// a group's samples are shared round-robin among the nodes that map to it).
std::vector<std::vector<int64_t>> category_partition(const std::vector<int64_t>& groups, int num_groups, int parts);

// Draws batches from one shard without replacement, reshuffling at every epoch.
class ShardSampler {
 public:
  ShardSampler(std::vector<int64_t> shard, uint64_t seed);
  torch::Tensor next(int batch_size);  // int64 indices into the training set
  int64_t shard_size() const { return static_cast<int64_t>(shard_.size()); }

  // Where the sampler stands (the epoch's order, the cursor, the generator), for resuming.
  struct State {
    torch::Tensor order;  // int64
    int64_t cursor = 0;
    std::string generator;  // std::mt19937_64's text form
  };
  State state() const;
  void load_state(const State& state);

 private:
  std::vector<int64_t> shard_;
  std::mt19937_64 rng_;
  size_t cursor_ = 0;
  void reshuffle();
};

}  // namespace testbed
