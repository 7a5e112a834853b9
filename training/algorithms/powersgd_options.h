// PowerSGD's scenario keys (powersgd.cpp).
#pragma once

#include <cstdint>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct PowerSgdOptions {
  int rank = 2;        // of each matrix's approximation (at most its rows and columns)
  int start_iter = 0;  // steps of plain all-reduce first, without error feedback (PyTorch's start_powerSGD_iter)
  // > 0: a matrix is compressed only when (rows + cols) rank x this < rows x cols, PyTorch's
  // hook's rule (its default 2); the others are all-reduced with the 1-D tensors. 0: every
  // matrix is compressed, as the paper's code does.
  double min_compression_rate = 0;

  template <class V>
  void fields(V& v) {
    v.field("rank", rank, Range{1, 1 << 16});
    v.field("start_iter", start_iter, Range{0, 1e9});
    v.field("min_compression_rate", min_compression_rate, Range{0, 1e6});
  }
  // P's, Q's and the 1-D tensors' all-reduces, and the warm-up's of the whole gradient.
  int64_t plans_held(int, int, int) const { return 4; }
  bool operator==(const PowerSgdOptions&) const = default;
};

}  // namespace testbed
