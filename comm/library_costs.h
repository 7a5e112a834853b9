// A collective library's own time on top of the network's: what NCCL, Gloo or MPI spend per
// collective (a kernel launch, a proxy thread waking) and per message at each end (a socket
// send and receive, a step's synchronisation), which the links' latency and bandwidth do not
// hold. The plan runner charges them (plan_runner.h), on every backend alike.
#pragma once

namespace testbed {

struct LibraryCosts {
  // Per collective and rank: from the rank entering to its first message being able to leave.
  double launch_s = 0;
  // Per message, at each end: the sender's before the message leaves, and the receiver's after
  // its last byte has landed, before the message counts there (its dependents may leave).
  double message_s = 0;
  bool any() const { return launch_s > 0 || message_s > 0; }
};

}  // namespace testbed
