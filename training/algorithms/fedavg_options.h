// FedAvg's scenario keys (sim/core/federated_run.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "training/algorithms/option_fields.h"

namespace testbed {

struct FedAvgOptions {
  int H = 10;                 // local steps a picked client runs from the global model each round
  int clients_per_round = 0;  // 0: round(fraction x clients), at least 1
  double fraction = 0.1;      // McMahan et al.'s C
  // The server's step on the averaged model: x <- x - server_lr m, m <- server_momentum m +
  // (x - average) (FedAvgM, Hsu et al. 2019; server_lr 1 and momentum 0 is FedAvg itself).
  double server_lr = 1.0;
  double server_momentum = 0.0;
  double deadline = 0;  // seconds from a round's start; later uploads are not applied (0: none)
  int server = -1;      // the server's host; -1: the host after the clients' (the topology has nodes + 1)

  template <class V> void fields(V& v) {
    v.field("H", H, Range{1, 1e9});
    v.field("clients_per_round", clients_per_round, Range{0, 1e9});
    v.field("fraction", fraction, Range{0, 1, true});
    v.field("server_lr", server_lr, Range{0, 1e3, true});
    v.field("server_momentum", server_momentum, Range{0, 1, false, true});
    v.field("deadline", deadline, Range{0, 1e9});
    v.field("server", server, Range{-1, 1e9});
  }
  // Clients picked a round out of `clients`.
  int picked(int clients) const {
    if (clients_per_round > 0) return clients_per_round;
    return std::max(1, static_cast<int>(std::lround(fraction * clients)));
  }
  // The run loop holds no collective plans.
  int64_t plans_held(int, int, int) const { return 0; }
  bool operator==(const FedAvgOptions&) const = default;
};

}  // namespace testbed
