// The physical properties of one network link, in base units.
#pragma once

#include <vector>

namespace testbed {

// From time_s (simulated seconds) on, the link carries bps each way.
struct RateChange {
  double time_s = 0;
  double bps = 0;
};

struct LinkSpec {
  double bandwidth_bps = 100e6;      // bits per second, from the lower-index end to the higher (and back, unless below)
  double latency_s = 0.0;            // one-way propagation delay
  double loss = 0.0;                 // probability that a packet is dropped, in [0, 1)
  double reverse_bandwidth_bps = 0;  // from the higher-index end to the lower; 0: bandwidth_bps (symmetric)
  // Gilbert-Elliott burst loss instead of independent drops: each packet first moves the
  // link's state (good -> bad with p_good_bad, bad -> good with p_bad_good), then drops with
  // `loss` in the good state and loss_bad in the bad one. The chain spends
  // p_good_bad / (p_good_bad + p_bad_good) of the packets in the bad state.
  bool gilbert_elliott = false;
  double p_good_bad = 0;
  double p_bad_good = 0.5;
  double loss_bad = 1;
  // Bandwidth over time (a CSV trace, times increasing): until the first change the rates
  // above hold; each change then sets both directions. Only the ns3 backend follows it.
  std::vector<RateChange> trace = {};

  // The fastest rate the link ever carries in any direction.
  double max_rate_bps() const {
    double fastest = bandwidth_bps > reverse_bandwidth_bps ? bandwidth_bps : reverse_bandwidth_bps;
    for (const auto& change : trace) fastest = change.bps > fastest ? change.bps : fastest;
    return fastest;
  }
  // Extra propagation delay of each packet, uniform in [0, jitter_s], drawn per packet and
  // direction; a packet still never arrives before the one sent ahead of it (ns3_jitter.h).
  double jitter_s = 0;

  // The long-run fraction of packets dropped.
  double mean_loss() const {
    if (!gilbert_elliott || p_good_bad <= 0) return loss;
    const double bad = p_good_bad / (p_good_bad + p_bad_good);
    return (1 - bad) * loss + bad * loss_bad;
  }

  // The rate from vertex `from` to vertex `to`, the link's two ends.
  double rate_bps(int from, int to) const {
    return from > to && reverse_bandwidth_bps > 0 ? reverse_bandwidth_bps : bandwidth_bps;
  }
  // The slower direction's rate.
  double min_rate_bps() const {
    return reverse_bandwidth_bps > 0 && reverse_bandwidth_bps < bandwidth_bps ? reverse_bandwidth_bps : bandwidth_bps;
  }
};

}  // namespace testbed
