// A collective library's own time on top of the network's: what NCCL, Gloo or MPI spend per
// collective (a kernel launch, a proxy thread waking) and per message at each end (a socket
// send and receive, a step's synchronisation), and how much of a link's rate its transport
// reaches, which the links' latency and bandwidth do not hold. The plan runner charges them
// (plan_runner.h), on every backend alike; ring lanes charge the same in closed form.
#pragma once

#include <memory>
#include <vector>

#include "netmodels/network.h"

namespace testbed {

// What one transport adds to each message it carries.
struct TransportCosts {
  // At each end: the sender's before the message leaves, and the receiver's after its last
  // byte has landed, before the message counts there (its dependents may leave).
  double message_s = 0;
  // The most of its route's rate a message reaches (Message::rate_limit): a socket
  // transport's copies and threads, not the wire, hold it below line rate.
  RateLimit rate;
  bool any() const { return message_s > 0 || rate.any(); }
};

struct LibraryCosts {
  // Per collective and rank: from the rank entering to its first message being able to leave.
  double launch_s = 0;
  TransportCosts network;  // between machines: NCCL's socket or IB transport, Gloo's TCP
  TransportCosts local;    // between GPUs of one machine: peer-to-peer, or through host memory
  // Each network host's machine (hosts of one gpu_hosts host share one); a host past its end,
  // or every host when it is null, is a machine of its own.
  std::shared_ptr<const std::vector<int>> machine_of_host;

  bool any() const { return launch_s > 0 || network.any() || local.any(); }
  // The transport a message from one host to another takes.
  const TransportCosts& between(int src_host, int dst_host) const {
    if (!machine_of_host) return network;
    const auto& m = *machine_of_host;
    const int n = static_cast<int>(m.size());
    const bool same = src_host >= 0 && dst_host >= 0 && src_host < n && dst_host < n && m[src_host] == m[dst_host];
    return same ? local : network;
  }
};

}  // namespace testbed
