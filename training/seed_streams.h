// Named random streams derived from the scenario seed (docs/architecture.md, decision 6).
#pragma once

#include <cstdint>
#include <string_view>

namespace testbed {

// splitmix64 finaliser: decorrelates nearby inputs.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The seed of stream `name` (and optional index, e.g. a node) for a scenario seed.
constexpr uint64_t stream_seed(uint64_t seed, std::string_view name, uint64_t index = 0) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix64(mix64(seed ^ h) + index);
}

}  // namespace testbed
