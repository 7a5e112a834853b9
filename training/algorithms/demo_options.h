// DeMo's scenario keys (demo_decoupled_momentum.cpp).
#pragma once

#include <optional>
#include <string>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct DemoOptions {
  double beta = 0.999;  // momentum decay
  int chunk = 64;       // DCT chunk size
  int k = 32;           // coefficients kept per chunk
  bool sign = true;     // apply the sign of the decoded update

  template <class V> void fields(V& v) {
    v.field("beta", beta, Range{0, 1, false, true});
    v.field("chunk", chunk, Range{1, 1 << 16});
    v.field("k", k, Range{1, 1 << 16});
    v.field("sign", sign);
  }
  std::optional<OptionError> check() const {
    if (k > chunk) return OptionError{{"k"}, "k must not exceed chunk (" + std::to_string(chunk) + ")"};
    return std::nullopt;
  }
  bool operator==(const DemoOptions&) const = default;
};

}  // namespace testbed
