// One collective in flight: sends a plan's messages as their dependencies arrive and
// moves the real tensor chunks beside them (docs/architecture.md, decision 3).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "comm/plan_runner.h"
#include "netmodels/network.h"

namespace testbed {

struct CollectiveHooks {
  std::function<void(int rank)> rank_done;         // the rank's buffer holds the result
  std::function<void(const Delivery&)> delivered;  // every message, for the log
  // A run spread over processes (docs/scale-out.md): every process moves every rank's values
  // (so each rank's result is the one-process result, bit for bit), with another process's
  // rank entering with a buffer that is still arriving from there: `await` is called once per
  // such rank before its buffer is first read or written. `values` false: no participant is
  // this process's, and no value is moved.
  std::function<void(int rank)> await;
  bool values = true;
  // The clock, for plans whose messages hold (PlanRunner::Hooks::later).
  std::function<void(double seconds, std::function<void()>)> later;
};

class CollectiveRun {
 public:
  // `hosts[r]` is the network host of rank r; `next_message_id` numbers messages run-wide.
  CollectiveRun(std::shared_ptr<const CollectivePlan> plan, std::vector<int> hosts, Network& network,
                uint64_t& next_message_id, CollectiveHooks hooks, MessageTransport transport = {});

  // The rank's local buffer (1-D, reduced in place) is ready at the current time. `arrived`
  // (bool, the buffer's size, all true; needed when messages may lose parts) is cleared
  // where a message's elements were lost: those elements of the buffer keep their value.
  void enter(int rank, torch::Tensor buffer, torch::Tensor arrived = {});
  bool finished() const { return runner_.all_delivered() && ranks_done_ == plan_->ranks; }
  // Per message: its values as sent, while they have not landed (undefined otherwise). A
  // checkpoint saves them; a resumed run writes them back into the replay's copies.
  std::vector<torch::Tensor>& payloads() { return payloads_; }

 private:
  void arrive(int message, const Delivery& delivery);
  void apply(int message);
  void check_done(int rank);
  torch::Tensor& buffer(int rank);  // the rank's buffer, once it has arrived (CollectiveHooks::await)

  std::shared_ptr<const CollectivePlan> plan_;
  CollectiveHooks hooks_;
  PlanRunner runner_;  // when each message leaves; this class moves the values

  std::vector<torch::Tensor> buffers_;           // per rank; undefined until it enters
  std::vector<torch::Tensor> arrived_;           // per rank: see enter()
  std::vector<std::vector<ElementRange>> lost_;  // per message: elements the network lost
  std::vector<torch::Tensor> payloads_;          // per message: the chunk as sent
  std::vector<std::vector<int>> early_;          // per rank: arrived before the rank entered
  std::vector<size_t> applied_;                  // per rank
  std::vector<bool> done_;
  std::vector<bool> awaited_;  // per rank: its buffer has arrived
  int ranks_done_ = 0;
};

}  // namespace testbed
