// DiLoCo's and Streaming DiLoCo's scenario keys (outer_sync.h carries them out).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "training/algorithms/option_fields.h"
#include "training/algorithms/wire_format.h"

namespace testbed {

// diloco's keys, also the outer half of sparta_diloco's.
struct OuterSyncOptions {
  int H = 500;                          // inner steps between a fragment's syncs
  double lr = 0.7, momentum = 0.9;      // the outer Nesterov SGD
  WireFormat dtype = WireFormat::Fp32;  // pseudo-gradient wire format
  int fragments = 1;                    // contiguous, near-equal ranges of the flat parameters
  int tau = 0;                          // steps the node trains while a fragment is in flight
  double alpha = 0.5;                   // tau > 0: local share when the fragment lands

  template <class V>
  void fields(V& v) {
    v.field("H", H, Range{1, 1e9});
    v.field("outer_lr", lr, Range{0, 1e3, true});
    v.field("outer_momentum", momentum, Range{0, 1, false, true});
    v.field("outer_dtype", dtype);
  }
  std::optional<OptionError> check() const {
    if (dtype == WireFormat::Fp4)
      return OptionError{{"outer_dtype"}, "fp4 outer gradients are streaming_diloco's; use fp32, bf16 or fp16"};
    return std::nullopt;
  }
  bool operator==(const OuterSyncOptions&) const = default;
};

// streaming_diloco's keys: diloco's with its own defaults, and the fragments' schedule.
struct StreamingOptions {
  OuterSyncOptions outer{100, 0.7, 0.9, WireFormat::Fp4, 4, 1, 0.5};

  template <class V>
  void fields(V& v) {
    outer.fields(v);
    v.field("fragments", outer.fragments, Range{1, 1e6});
    v.field("tau", outer.tau, Range{0, 1e9});
    v.field("alpha", outer.alpha, Range{0, 1});
  }
  // A fragment syncs every H steps; with tau >= H it would be issued again while its
  // previous sync is still in flight, against a global copy that sync has not updated yet.
  std::optional<OptionError> check() const {
    if (outer.tau >= outer.H)
      return OptionError{{"tau", "H"},
                         "tau (" + std::to_string(outer.tau) + ") must be below H (" + std::to_string(outer.H) +
                             "): a fragment's sync must land before its next one is issued"};
    return std::nullopt;
  }
  // Fragments differ in size by at most one element: a plan each, at most.
  int64_t plans_held(int, int, int) const { return outer.fragments; }
  bool operator==(const StreamingOptions&) const = default;
};

}  // namespace testbed
