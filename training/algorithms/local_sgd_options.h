// Local SGD's scenario keys (local_sgd.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct LocalSgdOptions {
  int H = 1;              // local steps between averages
  double fraction = 1.0;  // share of nodes in each round

  template <class V>
  void fields(V& v) {
    v.field("H", H, Range{1, 1e9});
    v.field("fraction", fraction, Range{0, 1, true});
  }
  // A round of a fraction below 1 averages over its own subset of nodes: a plan per round.
  int64_t plans_held(int, int nodes, int steps) const { return fraction < 1 && nodes > 1 ? std::max(1, steps / H) : 1; }
  bool operator==(const LocalSgdOptions&) const = default;
};

}  // namespace testbed
