// Seeded, platform-independent shuffling for shards and batches.
#include "training/data/partition.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <torch/torch.h>

namespace testbed {
namespace {

void shuffle(std::vector<int64_t>& values, std::mt19937_64& rng) {
  for (size_t i = values.size(); i > 1; --i) {
    // Rejection-free modulo is fine here: the bias at 64 bits is negligible.
    size_t j = rng() % i;
    std::swap(values[i - 1], values[j]);
  }
}

}  // namespace

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  shuffle(order, rng);
  return order;
}

std::vector<int64_t> seeded_subset(int64_t n, int64_t count, uint64_t seed) {
  if (count <= 0 || count >= n) {
    std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(n, 0)));
    for (int64_t i = 0; i < n; ++i) all[i] = i;
    return all;
  }
  auto order = seeded_permutation(n, seed);
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<std::vector<int64_t>> iid_partition(int64_t samples, int parts, uint64_t seed) {
  if (parts < 1 || samples < parts) throw std::invalid_argument("cannot split the data set into that many shards");
  auto order = seeded_permutation(samples, seed);
  int64_t per_part = samples / parts;
  std::vector<std::vector<int64_t>> shards(parts);
  for (int p = 0; p < parts; ++p) {
    shards[p].assign(order.begin() + p * per_part, order.begin() + (p + 1) * per_part);
  }
  return shards;
}

std::vector<std::vector<int64_t>> dirichlet_partition(const std::vector<int64_t>& groups, int num_groups, int parts,
                                                      double alpha, uint64_t seed) {
  if (parts < 1 || static_cast<int64_t>(groups.size()) < parts) {
    throw std::invalid_argument("cannot split the data set into that many shards");
  }
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(alpha, 1.0);
  std::vector<std::vector<int64_t>> members(num_groups);
  for (int64_t i = 0; i < static_cast<int64_t>(groups.size()); ++i) members.at(groups[i]).push_back(i);
  std::vector<std::vector<int64_t>> shards(parts);
  for (auto& group : members) {
    shuffle(group, rng);
    // Dirichlet proportions as normalised Gamma(alpha) draws; cumulative cut points.
    std::vector<double> weights(parts);
    double total = 0;
    for (auto& w : weights) total += (w = gamma(rng));
    if (total <= 0) weights.assign(parts, 1.0), total = parts;  // alpha so small every draw underflowed
    double cumulative = 0;
    size_t start = 0;
    for (int p = 0; p < parts; ++p) {
      cumulative += weights[p] / total;
      size_t end = p + 1 == parts ? group.size() : static_cast<size_t>(cumulative * group.size());
      end = std::max(end, start);
      shards[p].insert(shards[p].end(), group.begin() + start, group.begin() + end);
      start = end;
    }
  }
  for (auto& shard : shards) {
    if (!shard.empty()) continue;
    auto& largest = *std::max_element(shards.begin(), shards.end(),
                                      [](const auto& a, const auto& b) { return a.size() < b.size(); });
    shard.push_back(largest.back());
    largest.pop_back();
  }
  return shards;
}

std::vector<std::vector<int64_t>> category_partition(const std::vector<int64_t>& groups, int num_groups, int parts) {
  std::vector<std::vector<int64_t>> shards(parts);
  // Nodes that share group g (when parts > num_groups) take its samples in turn.
  std::vector<int64_t> seen(num_groups, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(groups.size()); ++i) {
    int g = static_cast<int>(groups[i]);
    int sharing = parts > num_groups ? (parts - 1 - g) / num_groups + 1 : 1;
    int node = (g + num_groups * static_cast<int>(seen[g]++ % sharing)) % parts;
    shards[node].push_back(i);
  }
  for (int p = 0; p < parts; ++p) {
    if (shards[p].empty())
      throw std::invalid_argument("the category partition left node " + std::to_string(p) + " without data");
  }
  return shards;
}

ShardSampler::ShardSampler(std::vector<int64_t> shard, uint64_t seed) : shard_(std::move(shard)), rng_(seed) {
  if (shard_.empty()) throw std::invalid_argument("a node's data shard is empty");
  reshuffle();
}

void ShardSampler::reshuffle() {
  shuffle(shard_, rng_);
  cursor_ = 0;
}

ShardSampler::State ShardSampler::state() const {
  std::ostringstream generator;
  generator << rng_;
  return {torch::tensor(shard_, torch::kInt64), static_cast<int64_t>(cursor_), generator.str()};
}

void ShardSampler::load_state(const State& state) {
  if (state.order.numel() != static_cast<int64_t>(shard_.size()) || state.cursor < 0 ||
      state.cursor > state.order.numel())
    throw std::invalid_argument("the saved sampler does not fit this node's data shard");
  auto order = state.order.contiguous();
  shard_.assign(order.data_ptr<int64_t>(), order.data_ptr<int64_t>() + order.numel());
  cursor_ = static_cast<size_t>(state.cursor);
  std::istringstream generator(state.generator);
  generator >> rng_;
  if (!generator) throw std::invalid_argument("the saved sampler's generator state does not read");
}

torch::Tensor ShardSampler::next(int batch_size) {
  auto out = torch::empty({batch_size}, torch::kInt64);
  auto* data = out.data_ptr<int64_t>();
  for (int i = 0; i < batch_size; ++i) {
    if (cursor_ == shard_.size()) reshuffle();
    data[i] = shard_[cursor_++];
  }
  return out;
}

}  // namespace testbed
