// The run loop. Every action is an event on the one clock: a step starts (real LibTorch
// compute happens here), its modelled compute ends, its messages go out and arrive.
#include "sim/engine.h"

#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "netmodels/ns3_network.h"
#include "sim/scenario_loader.h"
#include "sim/seed_streams.h"
#include "sim/workload.h"
#include "training/checkpoint.h"
#include "training/metrics.h"

namespace testbed {
namespace {

// Adds the host seconds of a scope to a counter.
class HostTimer {
 public:
  explicit HostTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~HostTimer() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// Charges delivery callbacks to the engine and send() calls to the network, so the
// benchmark can split host time between the testbed and ns-3.
class TimedNetwork : public Network {
 public:
  TimedNetwork(std::unique_ptr<Network> inner, HostTimes& times) : inner_(std::move(inner)), times_(times) {}
  void send(const Message& message, OnDelivered on_delivered) override {
    HostTimer timer(times_.network_send);
    inner_->send(message, [this, on_delivered = std::move(on_delivered)](const Delivery& d) {
      HostTimer engine_timer(times_.engine);
      on_delivered(d);
    });
  }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<Network> inner_;
  HostTimes& times_;
};

bool is_eval_step(int steps_done, const Scenario& s) {
  return steps_done % s.workload.eval_every == 0 || steps_done == s.workload.steps;
}

}  // namespace

Engine::Engine(const Scenario& scenario, const Dataset& data, EngineHooks hooks)
    : scenario_(scenario), data_(data), hooks_(std::move(hooks)), nodes_(scenario.nodes) {
  configure_host(scenario);
  torch::Device device(scenario.device);

  auto samplers = make_samplers(scenario, data);
  for (int n = 0; n < nodes_; ++n) {
    replicas_.push_back(std::make_unique<Replica>(make_model(scenario), optimizer_config(scenario),
                                                  std::move(samplers[n]), device, data.task));
  }
  eval_model_ = make_model(scenario);
  eval_model_->to(device);
  parameters_ = count_parameters(*eval_model_);
  algorithm_ = make_algorithm(scenario);
  compute_ = std::make_unique<ComputeModel>(
      scenario.compute, training_flops_per_sample(*eval_model_) * scenario.workload.batch_size, nodes_,
      scenario.seed);

  int64_t eval_count = scenario.workload.eval_samples > 0
                           ? std::min<int64_t>(scenario.workload.eval_samples, data.test_size())
                           : data.test_size();
  eval_inputs_ = data.test_inputs.slice(0, 0, eval_count);
  eval_targets_ = data.test_targets.slice(0, 0, eval_count);

  clock_ = std::make_unique<EventClock>();
  topology_ = build_topology(topology_spec(scenario));
  Ns3Options options;
  options.transport = scenario.network.transport;
  options.mtu = scenario.network.mtu;
  options.queue_packets = scenario.network.queue_packets;
  options.min_rto_s = scenario.network.min_rto.s;
  options.seed = stream_seed(scenario.seed, "network");
  network_ = std::make_unique<TimedNetwork>(make_ns3_network(*clock_, topology_, options), times_);
  state_.resize(nodes_);
  summary_.model_parameters = parameters_;
}

Engine::~Engine() {
  collectives_.clear();
  network_.reset();
  clock_.reset();
}

RunInfo Engine::run_info() const {
  RunInfo info;
  info.scenario_yaml = to_yaml(scenario_);
  info.nodes = nodes_;
  info.model_parameters = parameters_;
  info.trainable_parameters = count_parameters(*eval_model_, true);
  info.device = scenario_.device;
  info.deterministic = compute_->deterministic();
  for (int n = 0; n < nodes_; ++n) info.node_speeds.push_back(compute_->speed(n));
  for (const auto& v : data_.test_variants) info.test_variants.push_back(v.name);
  return info;
}

RunSummary Engine::run(Recorder& recorder) {
  recorder_ = &recorder;
  summary_.status = "running";
  {
    HostTimer timer(times_.run);
    for (int n = 0; n < nodes_; ++n) clock_->schedule(0, [this, n] { start_step(n); });
    try {
      clock_->run();
    } catch (const std::exception& e) {
      summary_.status = "failed";
      summary_.error = e.what();
    }
  }
  // Rows that not every node finished (a diverged or stopped run) still go out, NaN-padded.
  for (const auto& [step, pending] : rows_) recorder_->train(pending.row);
  rows_.clear();
  if (summary_.status == "running") {
    bool all_done = true;
    for (const auto& s : state_) all_done = all_done && s.finished;
    summary_.status = all_done ? "completed" : "failed";
    if (!all_done) summary_.error = "the event queue ran dry before every node finished (a message was never delivered)";
  }
  // The last eval left the averaged model in eval_model_.
  if (summary_.status == "completed" && !scenario_.output.checkpoint.empty()) {
    save_checkpoint(*eval_model_, scenario_.output.checkpoint);
  }
  summary_.projected_time_s = clock_->now();
  summary_.total_bytes = total_bytes_;
  summary_.host_time_s = times_.run;
  int done = scenario_.workload.steps;
  for (const auto& s : state_) done = std::min(done, s.step);
  summary_.steps_completed = done;
  recorder_->finish(summary_);
  return summary_;
}

void Engine::stop(const std::string& status, const std::string& error) {
  if (summary_.status != "running") return;
  summary_.status = status;
  summary_.error = error;
  clock_->stop();
}

void Engine::start_step(int node) {
  HostTimer timer(times_.engine);
  if (hooks_.interrupted && hooks_.interrupted->load()) return stop("failed", "interrupted by a signal");
  auto& s = state_[node];
  if (s.step == scenario_.workload.steps) {
    s.finished = true;
    return;
  }
  StepPlan plan;
  double host_seconds = 0;
  {
    HostTimer compute_timer(host_seconds);
    plan = algorithm_->local_step(node, s.step, *replicas_[node], data_);
  }
  times_.local_compute += host_seconds;
  s.loss = plan.loss;
  s.compute_time = compute_->step_seconds(node, s.step, host_seconds);
  s.comm = std::move(plan.comm);
  if (!std::isfinite(plan.loss)) {
    record_step(node);
    return stop("diverged", "node " + std::to_string(node) + " has a non-finite loss at step " +
                                std::to_string(s.step));
  }
  clock_->schedule(s.compute_time, [this, node] { issue_comm(node); });
}

void Engine::issue_comm(int node) {
  HostTimer timer(times_.engine);
  auto& s = state_[node];
  if (s.comm.empty()) return finish_step(node);
  s.comm_pending = static_cast<int>(s.comm.size());
  for (size_t i = 0; i < s.comm.size(); ++i) {
    auto& op = s.comm[i];
    collective(s.step, static_cast<int>(i), op.buffer.numel(), op.tag).enter(node, op.buffer);
  }
}

CollectiveRun& Engine::collective(int step, int index, int64_t elements, const std::string& tag) {
  auto& slot = collectives_[{step, index}];
  if (slot) return *slot;
  auto& plan = plans_[elements];
  if (!plan) plan = std::make_shared<const CollectivePlan>(ring_all_reduce(nodes_, elements, sizeof(float)));
  std::vector<int> hosts(nodes_);
  for (int n = 0; n < nodes_; ++n) hosts[n] = n;
  CollectiveHooks hooks;
  hooks.rank_done = [this, step, index](int rank) {
    if (--state_[rank].comm_pending == 0) {
      // A fresh event, so the step ends outside the network's delivery callback.
      clock_->schedule(0, [this, rank] { finish_step(rank); });
    }
    auto it = collectives_.find({step, index});
    if (it != collectives_.end() && it->second->finished()) {
      clock_->schedule(0, [this, step, index] { collectives_.erase({step, index}); });
    }
  };
  hooks.sent = [this, step](int host, uint64_t bytes) {
    pending_row(step).row.bytes[host] += bytes;
    total_bytes_ += bytes;
  };
  hooks.delivered = [this, tag](const Delivery& d) {
    recorder_->message({d.message.src, d.message.dst, d.message.bytes, d.t_send, d.t_recv, d.lost_bytes, tag});
  };
  slot = std::make_unique<CollectiveRun>(plan, hosts, *network_, next_message_id_, std::move(hooks));
  return *slot;
}

void Engine::finish_step(int node) {
  HostTimer timer(times_.engine);
  auto& s = state_[node];
  {
    HostTimer compute_timer(times_.local_compute);
    algorithm_->apply(node, s.step, *replicas_[node], s.comm);
  }
  s.comm.clear();
  record_step(node);
  int steps_done = ++s.step;
  if (is_eval_step(steps_done, scenario_)) snapshot_for_eval(node, steps_done);
  clock_->schedule(0, [this, node] { start_step(node); });
}

Engine::PendingRow& Engine::pending_row(int step) {
  auto& pending = rows_[step];
  if (pending.row.loss.empty()) {
    pending.row.step = step;
    pending.row.loss.assign(nodes_, std::nan(""));
    pending.row.time.assign(nodes_, std::nan(""));
    pending.row.compute_time.assign(nodes_, 0.0);
    pending.row.bytes.assign(nodes_, 0);
  }
  return pending;
}

void Engine::record_step(int node) {
  const auto& s = state_[node];
  auto& pending = pending_row(s.step);
  pending.row.loss[node] = s.loss;
  pending.row.time[node] = clock_->now();
  pending.row.compute_time[node] = s.compute_time;
  ++pending.filled;
  // Rows leave in step order, once every node has finished that step.
  while (!rows_.empty() && rows_.begin()->second.filled == nodes_) {
    const auto& row = rows_.begin()->second.row;
    recorder_->train(row);
    if (hooks_.progress) {
      double mean_loss = 0;
      for (double l : row.loss) mean_loss += l / nodes_;
      hooks_.progress({row.step + 1, scenario_.workload.steps, mean_loss, clock_->now()});
    }
    rows_.erase(rows_.begin());
  }
}

void Engine::snapshot_for_eval(int node, int steps_done) {
  auto& snaps = snapshots_[steps_done];
  if (snaps.empty()) snaps.resize(nodes_);
  snaps[node] = flatten_parameters(replicas_[node]->model());  // torch::cat: already a copy
  for (const auto& t : snaps) {
    if (!t.defined()) return;
  }
  auto ready = std::move(snaps);
  snapshots_.erase(steps_done);
  run_eval(steps_done, ready);
}

void Engine::run_eval(int steps_done, const std::vector<torch::Tensor>& snapshots) {
  HostTimer timer(times_.eval);
  torch::Device device(scenario_.device);
  EvalRow row;
  row.step = steps_done;
  const size_t n = snapshots.size();
  // A replica equal to its predecessor shares its evaluation. When all are equal (DDP),
  // the averaged model is that replica, and it is evaluated once for everything.
  std::vector<bool> same_as_previous(n, false);
  bool all_same = true;
  for (size_t i = 1; i < n; ++i) {
    same_as_previous[i] = torch::equal(snapshots[i], snapshots[i - 1]);
    all_same = all_same && same_as_previous[i];
  }
  if (!all_same) {
    for (size_t i = 0; i < n; ++i) {
      if (same_as_previous[i]) {
        row.replica_loss.push_back(row.replica_loss.back());
        continue;
      }
      load_flat_parameters(*eval_model_, snapshots[i]);
      row.replica_loss.push_back(evaluate(*eval_model_, data_.task, eval_inputs_, eval_targets_, device).loss);
    }
  }
  torch::Tensor average = snapshots[0];
  if (!all_same) {
    // Summed into one double vector: O(d) beside the snapshots, no N x d stack.
    auto sum = snapshots[0].to(torch::kFloat64);
    for (size_t i = 1; i < n; ++i) sum.add_(snapshots[i]);
    average = sum.div_(static_cast<double>(n)).to(snapshots[0].scalar_type());
  }
  load_flat_parameters(*eval_model_, average);  // left there for the final checkpoint
  auto averaged = evaluate(*eval_model_, data_.task, eval_inputs_, eval_targets_, device);
  if (all_same) row.replica_loss.assign(n, averaged.loss);
  row.loss = averaged.loss;
  row.accuracy = averaged.accuracy;
  row.perplexity = data_.task == Task::Language ? std::exp(averaged.loss) : std::nan("");
  for (const auto& variant : data_.test_variants) {
    auto inputs = variant.inputs.slice(0, 0, eval_inputs_.size(0));
    auto result = evaluate(*eval_model_, data_.task, inputs, eval_targets_, device);
    row.variants.push_back({variant.name, result.loss, result.accuracy});
  }
  // The agreement is over what the replicas train: the whole snapshot unless adapters
  // freeze part of the model, then the trainable parameters' ranges within it.
  std::vector<torch::Tensor> trainable = snapshots;  // shares storage, copies nothing
  if (count_parameters(*eval_model_, true) != parameters_) {
    std::vector<std::pair<int64_t, int64_t>> ranges;  // offset, count
    int64_t offset = 0;
    for (const auto& p : eval_model_->parameters()) {
      if (p.requires_grad()) ranges.emplace_back(offset, p.numel());
      offset += p.numel();
    }
    for (auto& t : trainable) {
      std::vector<torch::Tensor> parts;
      for (auto [begin, count] : ranges) parts.push_back(t.narrow(0, begin, count));
      t = torch::cat(parts);
    }
  }
  auto agreement = replica_agreement(trainable, scenario_.workload.correlation_pairs,
                                     stream_seed(scenario_.seed, "correlation_pairs", steps_done));
  row.correlation = agreement.mean_correlation;
  row.min_correlation = agreement.min_correlation;
  row.distance = agreement.mean_distance;
  row.correlation_matrix = std::move(agreement.matrix);
  recorder_->eval(row);
  summary_.final_eval_loss = row.loss;
  summary_.final_accuracy = row.accuracy;
  summary_.final_perplexity = row.perplexity;
  summary_.eval_samples = eval_inputs_.size(0);
}

}  // namespace testbed
