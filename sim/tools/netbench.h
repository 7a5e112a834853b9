// `testbed netbench`: one collective on a scenario's network, against the alpha-beta bound.
#pragma once

#include <cstdint>
#include <string>

#include "sim/config/scenario.h"

namespace testbed {

struct NetbenchResult {
  double simulated_s = 0;      // projected time of the collective
  double bound_s = 0;          // the alpha-beta formula for it (netmodels/alpha_beta.h)
  double host_s = 0;           // host seconds the simulation took
  uint64_t payload_bytes = 0;  // bytes all ranks sent
};

// `collective`: allreduce or allgather by the scenario's collective section, or p2p (rank 0
// to rank N-1), of `bytes` (per rank for allgather). The bound is the algorithm's formula
// (netbench.cpp): alpha is the largest path latency and beta the slowest bottleneck between
// the pairs the collective uses, along the paths network.routing gives them (no contention
// between them). Throws std::invalid_argument.
NetbenchResult netbench(const Scenario& scenario, const std::string& collective, double bytes);

}  // namespace testbed
