// Seeded, platform-independent shuffling for shards and batches.
#include "training/partition.h"

#include <stdexcept>
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

ShardSampler::ShardSampler(std::vector<int64_t> shard, uint64_t seed) : shard_(std::move(shard)), rng_(seed) {
  if (shard_.empty()) throw std::invalid_argument("a node's data shard is empty");
  reshuffle();
}

void ShardSampler::reshuffle() {
  shuffle(shard_, rng_);
  cursor_ = 0;
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
