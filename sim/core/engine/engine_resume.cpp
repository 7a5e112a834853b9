// Checkpoint and resume of a run (issue 15). A checkpoint holds every value that decides the
// future (replicas with their optimizer and sampler, algorithm state, ops waiting to be issued
// or in flight with the copies their messages carry, rows not yet written, eval snapshots, the
// global generator) and the op schedule; not the network. A resumed run rebuilds the network's
// state by replaying the schedule from step 0 without training, with the same events in the
// same order, so at the checkpoint's moment every structure is as it was and only the values
// are missing: those are written back into place (copy_, so every view and alias stays valid).
// What the network decides (timings, which elements a lossy exchange lost) the replay rebuilds
// by itself and is not saved.
#include "sim/core/engine/engine.h"

#include <sstream>
#include <stdexcept>

#include <torch/torch.h>

#include "netmodels/event_clock.h"
#include "sim/output/resume_file.h"
#include "training/models/checkpoint.h"

namespace testbed {
namespace {

std::string key(const std::string& prefix, std::initializer_list<int64_t> parts) {
  std::ostringstream k;  // TorchScript attribute names: letters, digits and underscores
  k << prefix;
  for (int64_t p : parts) k << '_' << p;
  return k.str();
}

torch::Tensor read_tensor(torch::serialize::InputArchive& a, const std::string& k) {
  torch::Tensor t;
  a.read(k, t);
  return t;
}

c10::IValue read_value(torch::serialize::InputArchive& a, const std::string& k) {
  c10::IValue v;
  a.read(k, v);
  return v;
}

// Writes the saved value into the tensor the replay built: saved exactly where the replay built
// one, of its shape.
void restore(torch::serialize::InputArchive& a, const std::string& k, torch::Tensor& into) {
  if (!into.defined()) {
    torch::Tensor saved;
    if (a.try_read(k, saved))
      throw std::runtime_error("resume: '" + k + "' is saved but the replay did not rebuild it");
    return;
  }
  if (!read_into(a, k, into)) throw std::runtime_error("resume: '" + k + "' was rebuilt by the replay but not saved");
}

torch::Tensor doubles(const std::vector<double>& v) { return torch::tensor(v, torch::kFloat64); }

std::vector<double> doubles(const torch::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

// The checkpoint's archive is read once: its schedule now, its values at the checkpoint's moment.
void Engine::start_replay() {
  resume_archive_ = std::make_unique<torch::serialize::InputArchive>();
  resume_archive_->load_from(hooks_.resume->payload.data(), hooks_.resume->payload.size());
  schedule_ = decode_schedule(read_value(*resume_archive_, "schedule").toStringRef());
  schedule_.resize(nodes_);
  discard_ = std::make_unique<DiscardingRecorder>();
  recorder_ = discard_.get();
  replaying_ = true;
}

std::vector<ScheduledOp> Engine::scheduled_ops(const std::vector<CommOp>& ops) {
  std::vector<ScheduledOp> out;
  for (const auto& op : ops)
    out.push_back({static_cast<int>(op.kind), op.tag, op.buffer.numel(), op.bytes_per_element, op.delay, op.nodes,
                   op.after_gradient, op.before_forward, op.after_forward, op.pipelined});
  return out;
}

std::vector<CommOp> Engine::replayed_ops(const std::vector<ScheduledOp>& ops) {
  std::vector<CommOp> out;
  for (const auto& s : ops) {
    CommOp op;
    op.kind = static_cast<CommKind>(s.kind);
    op.tag = s.tag;
    op.buffer = torch::zeros({s.elements}, torch::kFloat32);
    op.bytes_per_element = s.bytes_per_element;
    op.delay = s.delay;
    op.nodes = s.nodes;
    op.after_gradient = s.after_gradient;
    op.before_forward = s.before_forward;
    op.after_forward = s.after_forward;
    op.pipelined = s.pipelined;
    out.push_back(std::move(op));
  }
  return out;
}

StepPlan Engine::replayed_step(int node, int step) {
  if (static_cast<size_t>(step) >= schedule_[node].size())
    throw std::logic_error("resume: node " + std::to_string(node) + " replays step " + std::to_string(step) +
                           " past the saved schedule");
  StepPlan plan;
  plan.comm = replayed_ops(schedule_[node][step].ops);
  return plan;
}

void Engine::at_checkpoint(int steps_done) {
  if (replaying_) {
    if (steps_done != hooks_.resume->step) return;
    load_state(*resume_archive_);
    resume_archive_.reset();
    replaying_ = false;
    recorder_ = output_;
    return;
  }
  if (hooks_.checkpoint_dir.empty()) return;
  Checkpoint c;
  c.step = steps_done;
  c.fingerprint = scenario_fingerprint(scenario_);
  c.mark = recorder_->mark();  // the file holds every row so far before the checkpoint names them
  c.payload = save_state();
  ++checkpoints_written_;
  write_checkpoint(hooks_.checkpoint_dir, c, checkpoints_written_ == hooks_.kill_in_checkpoint);
}

std::string Engine::save_state() {
  torch::serialize::OutputArchive a;
  a.write("schedule", c10::IValue(encode_schedule(schedule_)));
  a.write("generator", at::detail::getDefaultCPUGenerator().get_state());
  for (int n = 0; n < nodes_; ++n) {
    torch::serialize::OutputArchive replica(a.compilation_unit());
    replicas_[n]->save(replica);
    a.write(key("replica", {n}), replica);

    const AlgorithmState state = algorithm_->state(n);
    std::string names;
    int i = 0;
    for (const auto& [name, tensor] : state.tensors) {
      names += name + "\n";
      a.write(key("algorithm", {n, i++}), tensor);
    }
    a.write(key("algorithm_names", {n}), c10::IValue(names));
    std::string counters;
    for (const auto& [name, value] : state.counters) counters += name + " " + std::to_string(value) + "\n";
    a.write(key("algorithm_counters", {n}), c10::IValue(counters));

    const auto& s = state_[n];
    a.write(key("loss", {n}), c10::IValue(s.loss));
    for (size_t j = 0; j < s.to_issue.size(); ++j)
      a.write(key("to_issue", {n, static_cast<int64_t>(j)}), s.to_issue[j].buffer);
    for (size_t j = 0; j < s.in_flight.size(); ++j) {
      const auto& f = s.in_flight[j];
      const auto J = static_cast<int64_t>(j);
      a.write(key("in_flight_work", {n, J}), f.work);
      a.write(key("in_flight_buffer", {n, J}), f.op.buffer);
    }
  }
  int c = 0;
  for (auto& [k, collective] : comm_->collectives()) {
    auto& payloads = collective.run->payloads();
    for (size_t m = 0; m < payloads.size(); ++m) {
      if (payloads[m].defined()) a.write(key("payload", {c, static_cast<int64_t>(m)}), payloads[m]);
    }
    ++c;
  }
  std::string rows;
  for (const auto& [step, pending] : rows_) {
    rows += std::to_string(step) + " " + std::to_string(pending.filled) + "\n";
    a.write(key("row_loss", {step}), doubles(pending.row.loss));
    a.write(key("row_time", {step}), doubles(pending.row.time));
    a.write(key("row_compute", {step}), doubles(pending.row.compute_time));
    std::vector<int64_t> bytes(pending.row.bytes.begin(), pending.row.bytes.end());
    a.write(key("row_bytes", {step}), torch::tensor(bytes, torch::kInt64));
  }
  a.write("rows", c10::IValue(rows));
  std::string snapshots;
  for (const auto& [step, snaps] : snapshots_) {
    for (int n = 0; n < nodes_; ++n) {
      if (!snaps[n].defined()) continue;
      snapshots += std::to_string(step) + " " + std::to_string(n) + "\n";
      a.write(key("snapshot", {step, n}), snaps[n]);
    }
  }
  a.write("snapshots", c10::IValue(snapshots));
  a.write("last_eval",
          doubles({summary_.final_eval_loss, summary_.final_accuracy, summary_.final_perplexity,
                   static_cast<double>(summary_.eval_samples), static_cast<double>(summary_.final_eval_samples)}));
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

void Engine::load_state(torch::serialize::InputArchive& a) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle: this sets the global one
  generator.set_state(read_tensor(a, "generator"));
  for (int n = 0; n < nodes_; ++n) {
    torch::serialize::InputArchive replica;
    a.read(key("replica", {n}), replica);
    replicas_[n]->load(replica);

    AlgorithmState state;
    std::istringstream names(read_value(a, key("algorithm_names", {n})).toStringRef());
    std::string name;
    for (int i = 0; std::getline(names, name); ++i) state.tensors[name] = read_tensor(a, key("algorithm", {n, i}));
    std::istringstream counters(read_value(a, key("algorithm_counters", {n})).toStringRef());
    int64_t value = 0;
    while (counters >> name >> value) state.counters[name] = value;
    algorithm_->load_state(n, state);

    auto& s = state_[n];
    s.loss = read_value(a, key("loss", {n})).toDouble();
    for (size_t j = 0; j < s.to_issue.size(); ++j)
      restore(a, key("to_issue", {n, static_cast<int64_t>(j)}), s.to_issue[j].buffer);
    for (size_t j = 0; j < s.in_flight.size(); ++j) {
      auto& f = s.in_flight[j];
      const auto J = static_cast<int64_t>(j);
      restore(a, key("in_flight_work", {n, J}), f.work);
      restore(a, key("in_flight_buffer", {n, J}), f.op.buffer);
    }
  }
  int c = 0;
  for (auto& [k, collective] : comm_->collectives()) {
    auto& payloads = collective.run->payloads();
    for (size_t m = 0; m < payloads.size(); ++m) restore(a, key("payload", {c, static_cast<int64_t>(m)}), payloads[m]);
    ++c;
  }
  std::istringstream rows(read_value(a, "rows").toStringRef());
  int step = 0, filled = 0;
  std::map<int, PendingRow> saved_rows;
  while (rows >> step >> filled) {
    PendingRow& p = saved_rows[step];
    p.filled = filled;
    p.row.step = step;
    p.row.loss = doubles(read_tensor(a, key("row_loss", {step})));
    p.row.time = doubles(read_tensor(a, key("row_time", {step})));
    p.row.compute_time = doubles(read_tensor(a, key("row_compute", {step})));
    auto bytes = read_tensor(a, key("row_bytes", {step})).contiguous();
    p.row.bytes.assign(bytes.data_ptr<int64_t>(), bytes.data_ptr<int64_t>() + bytes.numel());
  }
  if (saved_rows.size() != rows_.size()) throw std::runtime_error("resume: the replay left other rows pending");
  rows_ = std::move(saved_rows);
  std::istringstream snaps(read_value(a, "snapshots").toStringRef());
  std::map<int, std::vector<torch::Tensor>> saved_snapshots;
  int node = 0;
  while (snaps >> step >> node) {
    auto& v = saved_snapshots[step];
    if (v.empty()) v.resize(nodes_);
    v[node] = read_tensor(a, key("snapshot", {step, node}));
  }
  snapshots_ = std::move(saved_snapshots);
  const auto last = doubles(read_tensor(a, "last_eval"));
  summary_.final_eval_loss = last[0];
  summary_.final_accuracy = last[1];
  summary_.final_perplexity = last[2];
  summary_.eval_samples = static_cast<int64_t>(last[3]);
  summary_.final_eval_samples = static_cast<int64_t>(last[4]);
}

}  // namespace testbed
