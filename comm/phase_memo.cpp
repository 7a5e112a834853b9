// Phase memoization: record a collective's deliveries from a held network, replay them when the
// same phase starts again from the same state. Why this is exact: ns-3 time is integer ticks,
// so a phase started later from the same state is the same phase shifted in time, and so is
// the world it leaves behind.
#include "comm/phase_memo.h"

#include <algorithm>
#include <stdexcept>

namespace testbed {

constexpr size_t kMaxPhases = 256;

// Sends to the real network and writes down when each message left and arrived.
class PhaseMemo::RecordingNetwork final : public Network {
 public:
  RecordingNetwork(EventClock& clock, Network& network, std::shared_ptr<PhaseRecord> record, int64_t start)
      : clock_(clock), network_(network), record_(std::move(record)), start_(start) {}
  void send(const Message& message, OnDelivered on_delivered) override {
    const int index = static_cast<int>(record_->sends.size());
    const int64_t now = clock_.now_ticks();
    record_->sends.push_back({message, now - start_, -1});
    if (!in_handover_ && now == handover_tick_) deferred_send_ = true;
    network_.send(message, [this, record = record_, index, on_delivered = std::move(on_delivered)](const Delivery& d) {
      const int64_t at = clock_.now_ticks();
      if (at == handover_tick_ && deferred_send_) record->replayable = false;
      if (at != handover_tick_) deferred_send_ = false;
      handover_tick_ = at;
      record->sends[index].delivered = at - start_;
      record->delivery_order.push_back(index);
      in_handover_ = true;
      on_delivered(d);
      in_handover_ = false;
    });
  }
  std::string name() const override { return network_.name(); }

 private:
  EventClock& clock_;
  Network& network_;
  std::shared_ptr<PhaseRecord> record_;
  int64_t start_;
  // The replay's order within a tick (PhaseRecord::replayable): the last hand-over's tick,
  // whether a send outside a hand-over followed it at that tick, and whether one is running.
  int64_t handover_tick_ = -1;
  bool deferred_send_ = false, in_handover_ = false;
};

// Hands each message back at its recorded time, in the recorded order, without the network.
class PhaseMemo::Replay final : public Network {
 public:
  Replay(EventClock& clock, const PhaseRecord& record, int64_t start) : clock_(clock), record_(record), start_(start) {
    state_->callbacks.resize(record.sends.size());
    state_->deliveries.resize(record.sends.size());
  }
  void send(const Message& message, OnDelivered on_delivered) override {
    const size_t k = state_->sent++;
    const int64_t now = clock_.now_ticks();
    if (k >= record_.sends.size()) throw std::logic_error("memoized phase: more messages than recorded");
    const auto& expected = record_.sends[k];
    if (expected.message.src != message.src || expected.message.dst != message.dst ||
        expected.message.bytes != message.bytes || expected.sent != now - start_)
      throw std::logic_error("memoized phase: message " + std::to_string(k) + " differs from its record");
    state_->callbacks[k] = std::move(on_delivered);
    state_->deliveries[k] = Delivery{message, clock_.now(), 0, 0, {}};
    // ns-3 hands a message over in an event scheduled from the packet's arrival, at that
    // tick: so does the replay, and the one it hands over is the next in recorded order.
    clock_.schedule_ticks(start_ + expected.delivered - now, [this, state = state_] {
      clock_.schedule_ticks(0, [this, state] {
        const int j = record_.delivery_order.at(state->handed++);
        if (!state->callbacks[j]) throw std::logic_error("memoized phase: a delivery before its send");
        Delivery d = state->deliveries[j];
        d.t_recv = clock_.now();
        auto callback = std::move(state->callbacks[j]);
        callback(d);
      });
    });
  }
  std::string name() const override { return "memo"; }

 private:
  struct State {
    size_t sent = 0, handed = 0;
    std::vector<OnDelivered> callbacks;
    std::vector<Delivery> deliveries;
  };
  EventClock& clock_;
  const PhaseRecord& record_;  // phases_ never drops an entry
  int64_t start_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

namespace {

class Direct final : public Network {
 public:
  explicit Direct(Network& network) : network_(network) {}
  void send(const Message& message, OnDelivered on_delivered) override {
    network_.send(message, std::move(on_delivered));
  }
  std::string name() const override { return network_.name(); }

 private:
  Network& network_;
};

}  // namespace

void PhaseMemo::close_open(const std::optional<HeldState>& held) {
  if (!open_ || !held) return open_.reset();
  Open& open = *open_;
  PhaseRecord& record = *open.record;
  int64_t last = 0;
  for (const auto& s : record.sends) {
    if (s.delivered < 0) return open_.reset();
    last = std::max(last, s.delivered);
  }
  // Its messages were the only ones since it began: the network's state now is what it left.
  if (!record.replayable || held->messages != open.messages + record.sends.size()) return open_.reset();
  open.last = last;
  // The network held itself at the phase's last delivery and has not moved since.
  if (!open.held_key.empty() && held->held_at == open.start + last) {
    record.held = last;
    record.held_state = held->state;
  }
}

void PhaseMemo::close_quiet(const std::optional<QuietState>& quiet) {
  if (!open_) return;
  Open open = std::move(*open_);
  open_.reset();
  PhaseRecord& record = *open.record;
  // Its traffic (ACKs too) drained before this phase began, leaving the pairs as it found them.
  if (quiet && !open.quiet_key.empty()) {
    const auto after = quiet_state(open.pairs);
    if (after && after->state == open.quiet_state) {
      record.quiet = std::max(open.last, after->quiet_since_ticks - open.start);
      for (int64_t t : after->last_sent_ticks) record.last_sent.push_back(t > open.start ? t - open.start : -1);
    }
  }
  store(open);
}

void PhaseMemo::store(const Open& open) {
  // Phases that never repeat (stragglers draw new entry times every step) must not pile up.
  if (open.record->held >= 0 && phases_.size() < kMaxPhases) phases_.emplace(open.held_key, open.record);
  if (open.record->quiet >= 0 && phases_.size() < kMaxPhases) phases_.emplace(open.quiet_key, open.record);
}

std::shared_ptr<Network> PhaseMemo::begin(const std::string& signature, const std::vector<HostPair>& pairs,
                                          const ReplayCheck& may_replay) {
  const int64_t now = clock_.now_ticks();
  if (replay_held_ >= 0 && now < replay_held_)
    throw std::logic_error("memoization: a phase started while a replayed one still owned the network");
  // 1. The network as it held itself after the last delivery, ACKs still on their way included,
  // and how long ago: with the phase's plans and entry ticks, everything its messages will meet.
  const auto held = hold_ ? hold_->held_state(pairs) : std::nullopt;
  close_open(held);
  std::string held_key;
  if (!signature.empty() && held) {
    held_key = "held|" + signature + '|' + held->state + '|' + std::to_string(now - held->held_at);
    auto it = phases_.find(held_key);
    // A replay leaves the held world where it is, standing for the world at the replayed phase's
    // last delivery: true where the phase ends in the state it began in (and nothing reaches
    // the network before then: may_replay).
    if (it != phases_.end() && it->second->held >= 0 && it->second->held_state == held->state &&
        may_replay(*it->second, it->second->held)) {
      if (open_) store(*open_), open_.reset();
      return replay(*it->second, held->held_at, now + it->second->held, nullptr, {});
    }
  }
  // 2. The network caught up to now: where everything has drained, the old quiescent phases
  // (the ACK tail left out, as it is over; idle times in the key).
  if (hold_) hold_->settle();
  const auto quiet = quiet_state(pairs);
  close_quiet(quiet);
  std::string quiet_key;
  if (!signature.empty() && quiet) {
    quiet_key = "quiet|" + signature + '|' + quiet->state + '|';
    for (int64_t idle : quiet->idle_ticks) quiet_key += std::to_string(idle) + ',';
    auto it = phases_.find(quiet_key);
    if (it != phases_.end() && it->second->quiet >= 0 && may_replay(*it->second, it->second->quiet)) {
      std::vector<int64_t> last_sent;
      for (int64_t t : it->second->last_sent) last_sent.push_back(t < 0 ? -1 : now + t);
      return replay(*it->second, now, now + it->second->quiet, &pairs, last_sent);
    }
  }
  if (held_key.empty() && quiet_key.empty()) {
    ++stats_.simulated;
    return std::make_shared<Direct>(network_);
  }
  // Recorded each way it can be keyed, but not replayable now: simulated. Recorded only one way
  // so far: recorded again, for the other (store() keeps the first record of each key).
  if ((held_key.empty() || phases_.count(held_key)) && (quiet_key.empty() || phases_.count(quiet_key))) {
    ++stats_.simulated;
    return std::make_shared<Direct>(network_);
  }
  ++stats_.recorded;
  auto record = std::make_shared<PhaseRecord>();
  open_ =
      Open{held_key, quiet_key, quiet ? quiet->state : std::string(), pairs, now, held ? held->messages : 0, 0, record};
  return std::make_shared<RecordingNetwork>(clock_, network_, record, now);
}

std::shared_ptr<Network> PhaseMemo::replay(const PhaseRecord& record, int64_t held_at, int64_t until,
                                           const std::vector<HostPair>* quiet_pairs,
                                           const std::vector<int64_t>& last_sent) {
  ++stats_.replayed;
  const int64_t now = clock_.now_ticks();
  replay_held_ = until;
  // The held world now stands for the world at `until`, when the replayed phase is over.
  // Only a held state (a NetworkHold's) leads here.
  if (!quiet_pairs)
    hold_->shift_held(until - held_at);
  else
    hold_->shift_quiet(until - held_at, *quiet_pairs, last_sent);
  return std::make_shared<Replay>(clock_, record, now);
}

}  // namespace testbed
