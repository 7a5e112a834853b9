// Memoization of network phases: messages that start on a held network in a state seen before,
// from the same plans at the same entry times (a step's collectives), replay the recorded
// deliveries while the network's clock stays held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "netmodels/event_clock.h"
#include "netmodels/network_hold.h"

namespace testbed {

// What one phase did, relative to its start (ticks), in the order things happened.
struct PhaseRecord {
  struct Send {
    Message message;         // id aside: ids are the caller's numbering
    int64_t sent = 0;        // when send() was called
    int64_t delivered = -1;  // when the delivery callback ran
  };
  std::vector<Send> sends;          // in send order
  std::vector<int> delivery_order;  // indices into sends, in delivery order
  // How it ended, for each way a replay may stand in for it (-1: not that way). Held: the
  // network held itself at its last delivery (ticks from its start), in this state, ACKs on
  // their way included. Quiet: its traffic, ACKs too, was over at `quiet`, the pairs' state as
  // it found them, each pair's connection last sending data at last_sent (-1: never).
  int64_t held = -1;
  std::string held_state;
  int64_t quiet = -1;
  std::vector<int64_t> last_sent;
  // A replay hands over a tick's messages before anything those hand-overs scheduled at that
  // tick runs (phase_memo.cpp): a phase where, at one tick, such a deferred send came between
  // two hand-overs would replay in another order, and is never replayed.
  bool replayable = true;
};

class PhaseMemo {
 public:
  // Says whether a replay of `record` may stand in for the phase: nothing else may reach the
  // network before `until` ticks from its start (until then the held world does not stand for
  // the real one).
  using ReplayCheck = std::function<bool(const PhaseRecord& record, int64_t until)>;

  PhaseMemo(EventClock& clock, Network& network) : clock_(clock), network_(network), hold_(network.hold()) {}

  // The network a phase's messages go through (all of them, whichever collective sends): a
  // replay of an identical recorded phase, a recorder of this one (when the network is held
  // and describes itself), or the network itself. `signature` names the plans, sizes and relative entry
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
  struct Open {                       // the last recorded phase, until the next phase begins
    std::string held_key, quiet_key;  // its keys each way ("" where it could not be keyed so)
    std::string quiet_state;          // the pairs' quiet state it began from
    std::vector<HostPair> pairs;
    int64_t start = 0;
    uint64_t messages = 0;  // the network's message count as it began
    int64_t last = 0;       // its last delivery, from its start
    std::shared_ptr<PhaseRecord> record;
  };
  void close_open(const std::optional<HeldState>& held);
  void close_quiet(const std::optional<QuietState>& quiet);
  void store(const Open& open);
  std::shared_ptr<Network> replay(const PhaseRecord& record, int64_t held_at, int64_t until,
                                  const std::vector<HostPair>* quiet_pairs, const std::vector<int64_t>& last_sent);

  std::optional<QuietState> quiet_state(const std::vector<HostPair>& pairs) const {
    return hold_ ? hold_->quiet_state(pairs) : std::nullopt;
  }

  EventClock& clock_;
  Network& network_;
  NetworkHold* hold_;  // null: the network describes no held world, and nothing is memoized
  std::map<std::string, std::shared_ptr<const PhaseRecord>> phases_;
  std::optional<Open> open_;
  int64_t replay_held_ = -1;  // until when a replayed phase owns the (virtual) network
  Stats stats_;
};

}  // namespace testbed
