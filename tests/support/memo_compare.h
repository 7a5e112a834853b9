// Test helper: two whole runs in memory compared bit for bit (rows, messages, evaluations and
// final parameters): memoize on against off, a resumed run against an uninterrupted one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "sim/core/engine/engine.h"

namespace testbed {

struct Outcome {
  MemoryRecorder record;
  RunSummary summary;
  std::vector<torch::Tensor> parameters;
};

inline Outcome run_outcome(const Scenario& s, const Dataset& data) {
  Outcome o;
  Engine engine(s, data);
  o.summary = engine.run(o.record);
  for (const auto& replica : engine.replicas()) o.parameters.push_back(replica->parameters().contiguous().clone());
  return o;
}

// Bitwise equality of doubles: NaN equals NaN (a perplexity of a classifier), -0 differs from 0.
inline bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
inline bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

// Every difference between the two runs, first few of each kind; empty when identical.
inline std::string differences(const Outcome& on, const Outcome& off) {
  std::ostringstream out;
  int reported = 0;
  auto report = [&](const std::string& what) {
    if (reported++ < 8) out << "  " << what << "\n";
  };
  if (on.summary.status != off.summary.status)
    report(std::string("status ") + status_name(on.summary.status) + " (" + on.summary.error + ") vs " +
           status_name(off.summary.status) + " (" + off.summary.error + ")");
  if (!same(on.summary.projected_time_s, off.summary.projected_time_s)) report("projected_time_s");
  if (on.summary.total_bytes != off.summary.total_bytes) report("total_bytes");
  if (on.summary.steps_completed != off.summary.steps_completed) report("steps_completed");

  const auto& a = on.record;
  const auto& b = off.record;
  if (a.train_rows.size() != b.train_rows.size()) report("train row count");
  for (size_t i = 0; i < std::min(a.train_rows.size(), b.train_rows.size()); ++i) {
    const TrainRow &x = a.train_rows[i], &y = b.train_rows[i];
    if (x.step != y.step || !same(x.loss, y.loss) || !same(x.time, y.time) || !same(x.compute_time, y.compute_time) ||
        x.bytes != y.bytes)
      report("train row " + std::to_string(i) + " (step " + std::to_string(x.step) + ")");
  }
  if (a.messages.size() != b.messages.size())
    report("message count " + std::to_string(a.messages.size()) + " vs " + std::to_string(b.messages.size()));
  for (size_t i = 0; i < std::min(a.messages.size(), b.messages.size()); ++i) {
    const MessageRecord &x = a.messages[i], &y = b.messages[i];
    if (x.src != y.src || x.dst != y.dst || x.bytes != y.bytes || !same(x.t_send, y.t_send) ||
        !same(x.t_recv, y.t_recv) || x.kind != y.kind || x.lost_bytes != y.lost_bytes) {
      std::ostringstream m;
      m.precision(17);
      m << "message " << i << ": " << x.src << "->" << x.dst << " " << x.bytes << " B " << x.kind << " sent "
        << x.t_send << " recv " << x.t_recv << " vs " << y.src << "->" << y.dst << " " << y.bytes << " B " << y.kind
        << " sent " << y.t_send << " recv " << y.t_recv;
      report(m.str());
    }
  }
  if (a.eval_rows.size() != b.eval_rows.size()) report("eval row count");
  for (size_t i = 0; i < std::min(a.eval_rows.size(), b.eval_rows.size()); ++i) {
    const EvalRow &x = a.eval_rows[i], &y = b.eval_rows[i];
    if (x.step != y.step || !same(x.loss, y.loss) || !same(x.accuracy, y.accuracy) ||
        !same(x.perplexity, y.perplexity) || !same(x.replica_loss, y.replica_loss) ||
        !same(x.replica_accuracy, y.replica_accuracy) || !same(x.correlation, y.correlation) ||
        !same(x.min_correlation, y.min_correlation) || !same(x.distance, y.distance) ||
        !same(x.correlation_matrix, y.correlation_matrix))
      report("eval row " + std::to_string(i) + " (step " + std::to_string(x.step) + ")");
  }
  if (on.parameters.size() != off.parameters.size()) report("replica count");
  for (size_t n = 0; n < std::min(on.parameters.size(), off.parameters.size()); ++n) {
    const auto &p = on.parameters[n], &q = off.parameters[n];
    if (p.numel() != q.numel() || p.dtype() != q.dtype() ||
        std::memcmp(p.data_ptr(), q.data_ptr(), static_cast<size_t>(p.numel()) * p.element_size()) != 0)
      report("final parameters of replica " + std::to_string(n));
  }
  if (reported > 8) out << "  ... " << reported - 8 << " more\n";
  return out.str();
}

}  // namespace testbed
