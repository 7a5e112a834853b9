// A collective's alpha-beta time alone: its dependency chains' latencies and its ranks' bytes.
#include "comm/alone_time.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "comm/ring_lanes.h"

namespace testbed {
namespace {

struct Hop {
  double latency_s = 0;        // the route's, plus the library's per-message cost at both ends
  double seconds_per_bit = 0;  // at the transport's rate on the route's bottleneck
};

Hop hop(int src_host, int dst_host, const LibraryCosts& library, const PathOf& path) {
  const PathProperties p = path(src_host, dst_host);
  const TransportCosts& t = library.between(src_host, dst_host);
  if (!(p.bottleneck_bps > 0))
    throw std::invalid_argument("alone time: no rate between hosts " + std::to_string(src_host) + " and " +
                                std::to_string(dst_host));
  return {p.latency_s + 2 * t.message_s, 1.0 / t.rate.of(p.bottleneck_bps)};
}

// One walk of a plan: its longest dependency chain and the most seconds any rank sends for.
struct Walk {
  double chain_s = 0;
  double sending_s = 0;
};

Walk walk(const CollectivePlan& plan, const std::vector<int>& hosts, const LibraryCosts& library, const PathOf& path) {
  if (plan.messages.empty()) return {};
  if (static_cast<int>(hosts.size()) != plan.ranks)
    throw std::invalid_argument("alone time: " + std::to_string(hosts.size()) + " hosts for a plan of " +
                                std::to_string(plan.ranks) + " ranks");
  std::map<std::pair<int, int>, Hop> hops;
  std::vector<double> arrival(plan.messages.size(), 0);
  std::vector<double> sending(plan.ranks, 0);  // seconds each rank's bytes take on the wire
  Walk w;
  // Plans list a message after the messages it waits for.
  for (size_t i = 0; i < plan.messages.size(); ++i) {
    const CollectiveMessage& m = plan.messages[i];
    auto [it, fresh] = hops.try_emplace({m.src, m.dst});
    if (fresh) it->second = hop(hosts[m.src], hosts[m.dst], library, path);
    double ready = 0;
    for (int dep : m.after) {
      if (dep >= static_cast<int>(i))
        throw std::logic_error("alone time: a plan lists a message before one it waits for");
      ready = std::max(ready, arrival[dep]);
    }
    arrival[i] = ready + (plan.hold_s.empty() ? 0 : plan.hold_s[i]) + it->second.latency_s;
    w.chain_s = std::max(w.chain_s, arrival[i]);
    sending[m.src] += static_cast<double>(m.bytes) * 8 * it->second.seconds_per_bit;
  }
  w.sending_s = *std::max_element(sending.begin(), sending.end());
  return w;
}

}  // namespace

double plan_latency_chain(const CollectivePlan& plan, const std::vector<int>& hosts, const LibraryCosts& library,
                          const PathOf& path) {
  return walk(plan, hosts, library, path).chain_s;
}

double plan_alone_time(const CollectivePlan& plan, const std::vector<int>& hosts, const LibraryCosts& library,
                       const PathOf& path) {
  if (plan.messages.empty()) return 0;
  const Walk w = walk(plan, hosts, library, path);
  return library.launch_s + w.chain_s + w.sending_s;
}

double ring_all_reduce_alone_time(const std::vector<int>& hosts, int64_t elements, double element_bytes, int slices,
                                  const LibraryCosts& library, const PathOf& path) {
  const int p = static_cast<int>(hosts.size());
  if (p < 2 || elements == 0) return 0;
  const std::vector<uint64_t> bytes = ring_all_reduce_bytes_per_rank(p, elements, element_bytes, slices);
  std::vector<double> latency(p);
  double sending = 0, ring = 0;
  for (int r = 0; r < p; ++r) {
    const Hop h = hop(hosts[r], hosts[(r + 1) % p], library, path);
    latency[r] = h.latency_s;
    ring += h.latency_s;
    sending = std::max(sending, static_cast<double>(bytes[r]) * 8 * h.seconds_per_bit);
  }
  // 2(p - 1) hops from rank s: the whole ring once and then p - 2 more from s, so the longest
  // chain starts where p - 2 consecutive hops are longest (a window slid round the ring).
  const int w = p - 2;
  double window = 0;
  for (int j = 0; j < w; ++j) window += latency[j];
  double longest = window;
  for (int s = 1; s < p; ++s) {
    window += latency[(s + w - 1) % p] - latency[s - 1];
    longest = std::max(longest, window);
  }
  return library.launch_s + ring + longest + sending;
}

AlphaBeta all_reduce_alpha_beta(const CollectiveOptions& options, const std::vector<int>& hosts,
                                const LibraryCosts& library, const PathOf& path) {
  const int p = static_cast<int>(hosts.size());
  if (p < 2) return {};
  auto alone = [&](int64_t elements) {
    return options.algorithm == CollectiveAlgorithm::Ring
               ? ring_all_reduce_alone_time(hosts, elements, 4, options.slices, library, path)
               : plan_alone_time(all_reduce(options, p, elements, 4), hosts, library, path);
  };
  // Chunks of 1 KiB and of 1 MiB a rank: whole in every algorithm's split.
  const int64_t small = int64_t{256} * p, large = int64_t{256} * 1024 * p;
  const double t_small = alone(small), t_large = alone(large);
  const double beta = (t_large - t_small) / (4.0 * static_cast<double>(large - small));
  return {t_small - beta * 4.0 * static_cast<double>(small), beta};
}

}  // namespace testbed
