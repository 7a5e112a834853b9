// The physical properties of one network link, in base units.
#pragma once

namespace testbed {

struct LinkSpec {
  double bandwidth_bps = 100e6;  // bits per second, each direction
  double latency_s = 0.0;        // one-way propagation delay
  double loss = 0.0;             // probability that a packet is dropped, in [0, 1)
};

}  // namespace testbed
