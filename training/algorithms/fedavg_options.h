// FedAvg's scenario keys (fedavg.cpp).
#pragma once

#include "training/algorithms/option_fields.h"

namespace testbed {

struct FedAvgOptions {
  int H = 1;              // local steps between averages
  double fraction = 1.0;  // share of nodes in each round

  template <class V> void fields(V& v) {
    v.field("H", H, Range{1, 1e9});
    v.field("fraction", fraction, Range{0, 1, true});
  }
  bool operator==(const FedAvgOptions&) const = default;
};

}  // namespace testbed
