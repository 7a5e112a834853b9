// One run's processes (docs/scale-out.md): c10d's rendezvous and Gloo process group, as tagged
// point-to-point tensors whose every wait names the peer and gives up after a timeout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <c10/util/intrusive_ptr.h>
#include <torch/types.h>

namespace c10d {
class Work;
}

namespace testbed {

// torchrun's conventions: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (or the run's options).
struct ProcessGroupOptions {
  int rank = 0;
  int world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double timeout_s = 60;  // a peer silent this long has failed
};

// Whether `address` names this machine's loopback: the rendezvous then needs no listening
// socket beyond 127.0.0.1 (a c10d FileStore beside the Gloo pairs, which bind to it).
bool is_loopback(const std::string& address);
// That rendezvous's file, one per user and port (rank 0 removes it; so does testbed launch,
// in case rank 0 was killed, since a stale file would mislead the next run on that port).
std::string rendezvous_file(int port);

class ProcessGroup {
 public:
  // Blocks until every rank has joined, or throws after the timeout.
  explicit ProcessGroup(const ProcessGroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return options_.rank; }
  int world() const { return options_.world; }

  // Returns at once; `tensor` (contiguous) is kept until the peer has taken it. Tags match a
  // send to its receive, whatever order the two sides post them in. `posted_by_now`: the peer
  // posts the receive at the event of this send or an earlier one (so waiting for the send
  // later cannot block on the peer); false: it posts it only when it needs the tensor, and the
  // send is waited for only at the end (finish_sends).
  void send(const torch::Tensor& tensor, int peer, uint32_t tag, bool posted_by_now = true);
  // Blocks until `tensor` (its size known to both sides) holds the peer's send of that tag.
  // `what` names it in the error when the peer fails or stays silent.
  void receive(torch::Tensor& tensor, int peer, uint32_t tag, const std::string& what);
  // The same in two halves: posted ahead, the transfer runs while this process goes on (a
  // receive posted late costs the peer's round trip at the moment it is needed).
  int64_t post_receive(torch::Tensor& tensor, int peer, uint32_t tag);
  void wait_receive(int64_t ticket, const std::string& what);
  // Withdraws receives whose sends will never come (posted for a plan after the last).
  void cancel_receives();
  // This process is failing: the others read why when they see it go (in their error).
  void report_failure(const std::string& why) noexcept;
  // Every send taken by its peer (before the process may exit).
  void finish_sends();
  double transfer_seconds() const { return transfer_seconds_; }  // host seconds in sends and waits
  int64_t receives() const { return receives_; }

 private:
  std::string reported_failures() const;  // what failed peers reported, or ""
  void wait_send(const std::pair<c10::intrusive_ptr<c10d::Work>, int>& send);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ProcessGroupOptions options_;
  double transfer_seconds_ = 0;
  int64_t receives_ = 0;
  int64_t next_ticket_ = 0;
};

}  // namespace testbed
