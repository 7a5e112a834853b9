// What a run reports as it goes; the HDF5 recorder writes it, tests may just collect it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "comm/message_record.h"

namespace testbed {

// What a recorder is told before the first row: the run's fixed facts.
struct RunInfo {
  std::string scenario_yaml;  // the resolved scenario
  int nodes = 0;
  int64_t model_parameters = 0;
  int64_t trainable_parameters = 0;  // what the replicas train and exchange
  std::string device;
  bool deterministic = true;  // false when compute time is measured on the host
  // A projection (workload.train false): times, bytes and messages from shapes; no loss, no
  // evaluation (/train/loss, /eval and /replicas are left out).
  bool projection = false;
  std::vector<double> node_speeds;         // relative compute speed of each node
  std::vector<std::string> test_variants;  // names of the extra test sets evaluated
  bool federated = false;                  // rounds of sampled clients: /participation, a /train row a round
  // What produced the bits (/numerics): kernel families, library versions, CPU, threads.
  std::vector<std::pair<std::string, std::string>> numerics;
};

struct TrainRow {
  int step = 0;
  std::vector<double> loss, time, compute_time;  // one entry per node
  std::vector<uint64_t> bytes;
};

struct VariantResult {
  std::string name;  // e.g. a distribution shift of the test set
  double loss = 0, accuracy = 0;
};

struct EvalRow {
  int step = 0;                          // steps completed by every node
  double loss = 0, accuracy = 0;         // the averaged model
  double perplexity = 0;                 // exp(loss) for language models, NaN otherwise
  std::vector<VariantResult> variants;   // the averaged model on each test variant
  std::vector<double> replica_loss;      // one per node
  std::vector<double> replica_accuracy;  // one per node; NaN for regression
  double correlation = 1, min_correlation = 1, distance = 0;
  std::vector<double> correlation_matrix;  // N x N row-major; NaN where a pair was not sampled
};

// A federated client's part in a round (sim/core/federated/federated_run.h).
struct ParticipationRow {
  int round = 0, client = 0;
  int64_t samples = 0;  // the client's training samples: its weight in the average
  int steps = 0;        // its local steps
  int device = -1;      // the executor it trained on (algorithm.devices; -1: its own)
  double loss = 0;      // mean over its local steps
  // Simulated seconds: its download arrived, its device took it, its local steps ended, its
  // upload arrived.
  double t_download = 0, t_start = 0, t_compute = 0, t_upload = 0;
  bool dropped = false;  // its upload arrived after the round's deadline and was not applied
};

// A federated round as the server saw it.
struct RoundRow {
  int round = 0;
  double t_start = 0, t_end = 0;  // its downloads left; its average was taken
  int applied = 0, dropped = 0;   // uploads averaged; picked clients whose upload missed the end
  // Busy device-seconds within [t_start, t_end] over devices x (t_end - t_start): the share of
  // the executors' time spent training (devices: algorithm.devices, or the picked clients').
  double utilisation = 0;
  // Mean local training loss of the applied uploads' clients; the server's model after the
  // round's average on the test split (NaN in a round without an evaluation: workload.eval_every).
  double train_loss = std::numeric_limits<double>::quiet_NaN();
  double eval_loss = std::numeric_limits<double>::quiet_NaN();
  double accuracy = std::numeric_limits<double>::quiet_NaN();
};

// How a run ends. The file's /summary says it by name, and `testbed run` exits with its code
// (README: 0 completed, 1 failed or interrupted, 3 diverged; 2, bad input, never gets this far).
enum class RunStatus { Running, Completed, Diverged, Failed };

inline const char* status_name(RunStatus status) {
  switch (status) {
    case RunStatus::Running:
      return "running";
    case RunStatus::Completed:
      return "completed";
    case RunStatus::Diverged:
      return "diverged";
    case RunStatus::Failed:
      return "failed";
  }
  return "?";
}

inline int exit_code(RunStatus status) {
  return status == RunStatus::Completed ? 0 : status == RunStatus::Diverged ? 3 : 1;
}

struct RunSummary {
  RunStatus status = RunStatus::Running;
  std::string error;  // why, when not completed
  double projected_time_s = 0;
  uint64_t total_bytes = 0;
  // NaN until an evaluation runs: a run that stops before its first has none to report.
  double final_eval_loss = NAN, final_accuracy = NAN, final_perplexity = NAN;
  double host_time_s = 0;
  int64_t model_parameters = 0;
  int steps_completed = 0;
  int64_t eval_samples = 0;        // test samples (windows for language models) each evaluation used
  int64_t final_eval_samples = 0;  // the last evaluation's: the whole test split
  // Steps whose communication (one network phase) was replayed from an identical earlier one (memoization),
  // and the ones the network simulated.
  int64_t phases_replayed = 0, phases_simulated = 0;
};

// How many rows a recorder holds, all of them on disk: a checkpoint keeps this, and a resumed
// run drops the rows after it before it appends (none duplicated, none lost).
struct RecorderMark {
  int64_t train_rows = 0, eval_rows = 0, messages = 0;
  uint64_t lost_bytes = 0;  // over those messages, for /summary
};

class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void train(const TrainRow& row) = 0;
  virtual void eval(const EvalRow& row) = 0;
  virtual void message(const MessageRecord& record) = 0;
  virtual void participation(const ParticipationRow&) {}  // federated runs only
  virtual void round(const RoundRow&) {}                  // federated runs only
  virtual void finish(const RunSummary& summary) = 0;
  // Writes out what is held back and says how many rows there are.
  virtual RecorderMark mark() = 0;
};

// Keeps everything in memory: for tests and benchmarks.
// Rows that are written elsewhere: a resumed run's replay (the file holds them already), a
// process of a spread run other than rank 0 (which writes the file).
class DiscardingRecorder : public Recorder {
 public:
  void train(const TrainRow&) override {}
  void eval(const EvalRow&) override {}
  void message(const MessageRecord&) override {}
  void finish(const RunSummary&) override {}
  RecorderMark mark() override { return {}; }
};

class MemoryRecorder : public Recorder {
 public:
  std::vector<TrainRow> train_rows;
  std::vector<EvalRow> eval_rows;
  std::vector<MessageRecord> messages;
  std::vector<ParticipationRow> participation_rows;
  std::vector<RoundRow> round_rows;
  RunSummary summary;
  void train(const TrainRow& row) override { train_rows.push_back(row); }
  void eval(const EvalRow& row) override { eval_rows.push_back(row); }
  void message(const MessageRecord& record) override { messages.push_back(record); }
  void participation(const ParticipationRow& row) override { participation_rows.push_back(row); }
  void round(const RoundRow& row) override { round_rows.push_back(row); }
  void finish(const RunSummary& s) override { summary = s; }
  RecorderMark mark() override {
    RecorderMark m{static_cast<int64_t>(train_rows.size()), static_cast<int64_t>(eval_rows.size()),
                   static_cast<int64_t>(messages.size()), 0};
    for (const auto& r : messages) m.lost_bytes += r.lost_bytes;
    return m;
  }
  // Drops the rows after `m`, as a resumed HDF5 file does.
  void truncate(const RecorderMark& m) {
    train_rows.resize(static_cast<size_t>(m.train_rows));
    eval_rows.resize(static_cast<size_t>(m.eval_rows));
    messages.resize(static_cast<size_t>(m.messages));
  }
};

}  // namespace testbed
