// Walks a collective plan's message DAG on a network: a message leaves once its sender has
// entered the collective and every message it depends on has reached that sender. The one
// scheduler for both the size-only runs (simulate_plan) and the engine's runs with real
// tensors (sim/run/collective_run.h), which carry values through the hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "comm/library_costs.h"
#include "comm/plans/collectives.h"
#include "netmodels/event_clock.h"
#include "netmodels/network.h"

namespace testbed {

// How a collective's messages travel. Only a neighbour exchange tolerates loss (its receivers
// average what arrived); reductions and gathers need every byte and always go reliably.
struct MessageTransport {
  bool datagrams = false;    // Message::datagrams: the network may lose parts
  double element_bytes = 4;  // wire bytes per element, so datagrams split on elements
  LibraryCosts library;      // the collective library's own time (library_costs.h)
};

class PlanRunner {
 public:
  struct Hooks {
    std::function<void(int message)> sending;                     // released: its content is fixed
    std::function<void(int message, const Delivery&)> delivered;  // it arrived, before dependents leave
    std::function<void(int rank)> settled;                        // after an arrival at rank was handled
    // Calls the function `seconds` later on the clock: a message with a hold
    // (CollectivePlan::hold_s) leaves then, and the library's costs pass so. Needed only by
    // plans with holds and by runs with library costs.
    std::function<void(double seconds, std::function<void()>)> later;
  };
  // `hosts[r]` is the network host of rank r; `next_message_id` numbers messages run-wide.
  PlanRunner(std::shared_ptr<const CollectivePlan> plan, std::vector<int> hosts, Network& network,
             uint64_t& next_message_id, MessageTransport transport, Hooks hooks);

  // The rank is ready: its messages whose dependencies have arrived leave now (after the
  // library's launch, when it has one).
  void enter(int rank);
  // Every rank is ready at once: the messages without dependencies leave in plan order.
  void enter_all();
  bool all_delivered() const { return delivered_ == plan_->messages.size(); }
  const CollectivePlan& plan() const { return *plan_; }

 private:
  void launched(int rank);
  void try_send(int rank);
  void send(int message);
  void transmit(int message);  // onto the network, once its hold has passed
  void arrive(int message, const Delivery& delivery);
  void handed_over(int message, const Delivery& delivery);  // the receiver's library has it
  void later(double seconds, std::function<void()> then);
  const TransportCosts& costs(int message) const;  // the library's transport between its ranks' hosts

  std::shared_ptr<const CollectivePlan> plan_;
  std::vector<int> hosts_;
  Network& network_;
  uint64_t& next_message_id_;
  MessageTransport transport_;
  Hooks hooks_;
  std::vector<bool> entered_;  // per rank
  std::vector<int> unmet_;     // per message: dependencies not yet delivered
  std::vector<bool> sent_;
  // Lists of message indices by key in two allocations, not one a key: a runner is made for
  // every collective, and most are small.
  struct IndexLists {
    std::vector<int> begin;  // key k's list is items[begin[k], begin[k + 1])
    std::vector<int> items;
    std::span<const int> operator[](size_t k) const {
      return {items.data() + begin[k], static_cast<size_t>(begin[k + 1] - begin[k])};
    }
  };
  IndexLists dependents_;  // per message, ascending
  IndexLists outgoing_;    // per rank, in plan order
  size_t delivered_ = 0;
};

// Starts every rank at the clock's current time and runs the clock until every message of
// the plan is delivered (and, with library costs, handed over). Returns the elapsed simulated seconds.
double simulate_plan(EventClock& clock, Network& network, const CollectivePlan& plan, const std::vector<int>& hosts,
                     const LibraryCosts& library = {});

}  // namespace testbed
