// Split fine-tuning's scenario keys (split.cpp): where the model is cut and what runs behind it.
#pragma once

#include <string>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct SplitOptions {
  int layer = 6;               // the block the cut falls in, from 1 (the reference's --split)
  int rank = 8;                // W1's truncated SVD (the reference's --rank); 0: a plain cut, no SVD
  bool residual = false;       // keep the split feed-forward's residual link (its input crosses too)
  std::string cloud = "a100";  // the cloud's device preset; the edges' is compute.device

  template <class V>
  void fields(V& v) {
    v.field("layer", layer, Range{1, 1e6});
    v.field("rank", rank, Range{0, 1e6});
    v.field("residual", residual);
    v.field("cloud", cloud);
  }
  bool operator==(const SplitOptions&) const = default;
};

}  // namespace testbed
