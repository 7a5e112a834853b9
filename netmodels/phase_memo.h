// Memoization of network phases: messages that start on a quiescent network in a state seen
// before, from the same plans at the same entry times (a step's collectives), replay the
// recorded deliveries.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"

namespace testbed {

// What one phase did, relative to its start (ticks), in the order things happened.
struct PhaseRecord {
  struct Send {
    Message message;          // id aside: ids are the caller's numbering
    int64_t sent = 0;         // when send() was called
    int64_t delivered = -1;   // when the delivery callback ran
  };
  std::vector<Send> sends;        // in send order
  std::vector<int> delivery_order;  // indices into sends, in delivery order
  int64_t quiet = 0;              // when its traffic was over: its last delivery or ACK
  std::vector<int64_t> last_sent;  // per pair: the connection's last data, -1 if it sent none
  // A replay hands over a tick's messages before anything those hand-overs scheduled at that
  // tick runs (phase_memo.cpp): a phase where, at one tick, such a deferred send came between
  // two hand-overs would replay in another order, and is never replayed.
  bool replayable = true;
};

class PhaseMemo {
 public:
  // Says whether a replay of `record` may stand in for the phase: nothing else may reach the
  // network before record.quiet (the replay leaves nothing for the real network to collide with).
  using ReplayCheck = std::function<bool(const PhaseRecord& record)>;

  PhaseMemo(EventClock& clock, Network& network) : clock_(clock), network_(network) {}

  // The network a phase's messages go through (all of them, whichever collective sends): a
  // replay of an identical recorded phase, a recorder of this one (when the network is
  // quiescent), or the network itself. `signature` names the plans, sizes and relative entry
  // times; `pairs` are the (src, dst) hosts they use. While a replay or recording is open,
  // nothing else may send (the caller guarantees it). An empty signature marks a phase that
  // cannot be memoized: it simply goes to the network.
  std::shared_ptr<Network> begin(const std::string& signature, const std::vector<HostPair>& pairs,
                                 const ReplayCheck& may_replay);

  struct Stats {
    int replayed = 0, recorded = 0, simulated = 0;  // phases
  };
  const Stats& stats() const { return stats_; }

 private:
  class RecordingNetwork;
  class Replay;
  struct Open {  // the last recorded phase, until the network is next seen quiescent
    std::string key;
    std::string state;  // the network state it started from
    std::vector<HostPair> pairs;
    int64_t start = 0;
    std::shared_ptr<PhaseRecord> record;
  };
  void close_open(bool quiescent);

  EventClock& clock_;
  Network& network_;
  std::map<std::string, PhaseRecord> phases_;
  std::optional<Open> open_;
  int64_t replay_quiet_ = -1;  // until when a replayed phase owns the (virtual) network
  Stats stats_;
};

}  // namespace testbed
