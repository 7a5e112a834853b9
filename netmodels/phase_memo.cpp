// Phase memoization: record a collective's deliveries on a quiescent network, replay them when
// the same phase starts again from the same state. Why this is exact: ns-3 time is integer
// ticks, so a phase started later from the same state is the same phase shifted in time.
#include "netmodels/phase_memo.h"

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
  Replay(EventClock& clock, const PhaseRecord& record, int64_t start)
      : clock_(clock), record_(record), start_(start) {
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
  void send(const Message& message, OnDelivered on_delivered) override { network_.send(message, std::move(on_delivered)); }
  std::string name() const override { return network_.name(); }

 private:
  Network& network_;
};

}  // namespace

void PhaseMemo::close_open(bool quiescent) {
  if (!open_) return;
  Open open = std::move(*open_);
  open_.reset();
  if (!quiescent) return;  // its tail met the next phase: not a self-contained phase
  const auto after = network_.quiescent_state(open.pairs);
  // Only a phase that leaves the network as it found it may be replayed in its place: the
  // real network then stays valid for whatever is simulated after a run of replays.
  if (!after || after->state != open.state) return;
  if (!open.record->replayable) return;
  for (const auto& s : open.record->sends) {
    if (s.delivered < 0) return;
  }
  // Its last message, or the ACK of it: after that nothing of the phase was left to collide
  // with, though the next phase may only have begun (and asked) much later.
  int64_t quiet = after->quiet_since_ticks - open.start;
  for (const auto& s : open.record->sends) quiet = std::max(quiet, s.delivered);
  open.record->quiet = quiet;
  for (int64_t t : after->last_sent_ticks) open.record->last_sent.push_back(t > open.start ? t - open.start : -1);
  // Phases that never repeat (stragglers draw new entry times every step) must not pile up.
  if (phases_.size() < kMaxPhases) phases_.emplace(std::move(open.key), std::move(*open.record));
}

std::shared_ptr<Network> PhaseMemo::begin(const std::string& signature, const std::vector<HostPair>& pairs,
                                          const ReplayCheck& may_replay) {
  const int64_t now = clock_.now_ticks();
  if (replay_quiet_ >= 0 && now < replay_quiet_)
    throw std::logic_error("memoization: a phase started while a replayed one still owned the network");
  const auto state = network_.quiescent_state(pairs);
  close_open(state.has_value());
  if (signature.empty() || !state) {
    ++stats_.simulated;
    return std::make_shared<Direct>(network_);
  }
  std::string key = signature + '|' + state->state + '|';
  for (int64_t idle : state->idle_ticks) key += std::to_string(idle) + ',';
  auto it = phases_.find(key);
  if (it != phases_.end() && may_replay(it->second)) {
    ++stats_.replayed;
    const PhaseRecord& record = it->second;
    replay_quiet_ = now + record.quiet;
    std::vector<int64_t> last_sent;
    for (int64_t t : record.last_sent) last_sent.push_back(t < 0 ? -1 : now + t);
    network_.replayed(pairs, last_sent);
    return std::make_shared<Replay>(clock_, record, now);
  }
  if (it != phases_.end()) {  // recorded, but something could reach the network too early
    ++stats_.simulated;
    return std::make_shared<Direct>(network_);
  }
  ++stats_.recorded;
  auto record = std::make_shared<PhaseRecord>();
  open_ = Open{std::move(key), state->state, pairs, now, record};
  return std::make_shared<RecordingNetwork>(clock_, network_, record, now);
}

}  // namespace testbed
