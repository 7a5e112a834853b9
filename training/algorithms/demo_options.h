// DeMo's scenario keys (demo_decoupled_momentum.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// How an index travels: as the reference code sends it (int64, 8 bytes), or as a compact
// in-block index (16 bits: a block holds at most chunk^2 <= 65536 coefficients).
enum class DemoIndex { Int64, Int16 };

template <>
struct EnumNames<DemoIndex> {
  static const std::vector<std::pair<DemoIndex, std::string>>& all() {
    static const std::vector<std::pair<DemoIndex, std::string>> names = {{DemoIndex::Int64, "int64"},
                                                                         {DemoIndex::Int16, "int16"}};
    return names;
  }
};

struct DemoOptions {
  double beta = 0.999;  // compression_decay: the decay of the residual delta
  int chunk = 64;       // target block side: each dimension splits by its largest divisor <= chunk
  int k = 32;           // coefficients kept per block (clamped to the block's size)
  bool sign = true;     // step by lr x the sign of the decoded update (as published); false: by the update
  DemoIndex index = DemoIndex::Int64;  // an index's width on the wire

  template <class V>
  void fields(V& v) {
    v.field("beta", beta, Range{0, 1, false, true});
    v.field("chunk", chunk, Range{1, 256});
    v.field("k", k, Range{1, 1 << 16});
    v.field("sign", sign);
    v.field("index", index);
  }
  std::optional<OptionError> check() const { return std::nullopt; }
  bool operator==(const DemoOptions&) const = default;
};

}  // namespace testbed
