// The federated loop: rounds of download, local steps and upload on the event clock; the
// server's average once the round's uploads are in (or its deadline has passed).
#include "sim/core/federated/federated_run.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "netmodels/event_clock.h"
#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "sim/core/error_text.h"
#include "sim/core/evaluation/evaluation.h"
#include "sim/core/federated/client_devices.h"
#include "sim/core/federated/client_state_store.h"
#include "sim/core/network_factory.h"
#include "topologies/builders.h"
#include "training/algorithms/common.h"
#include "training/models/checkpoint.h"
#include "training/seed_streams.h"
#include "training/vhl.h"

namespace testbed {

namespace {
// The mean of the tensors weighted by their weights, in float64 (summed in the order given),
// and the weights' sum; zeros when they sum to nothing.
std::pair<torch::Tensor, double> weighted_mean(const std::vector<std::pair<const torch::Tensor*, double>>& parts,
                                               int64_t size) {
  torch::NoGradGuard no_grad;
  auto sum = torch::zeros({size}, torch::kFloat64);
  double total = 0;
  for (const auto& [tensor, weight] : parts) {
    sum.add_(tensor->to(torch::kFloat64), weight);
    total += weight;
  }
  if (total > 0) sum.div_(total);
  return {sum, total};
}
}  // namespace

FederatedRun::FederatedRun(const Scenario& scenario, const Dataset& data, EngineHooks hooks)
    : scenario_(scenario), data_(data), hooks_(std::move(hooks)), clients_(scenario.nodes) {
  const auto* given = std::get_if<FedAvgOptions>(&scenario.algorithm.options);
  const FedAvgOptions o = given ? *given : FedAvgOptions{};
  picked_ = std::min(o.picked(clients_), clients_);
  H_ = o.H;
  rounds_ = scenario.workload.steps / H_;
  server_ = o.server < 0 ? clients_ : o.server;
  per_cluster_ = clients_per_cluster(scenario);
  if (per_cluster_ > 0)
    server_ =
        std::max(1, scenario.topology.clusters) * (per_cluster_ + 1);  // after every cluster's clients and aggregator
  server_lr_ = o.server_lr;
  server_momentum_ = o.server_momentum;
  deadline_ = o.deadline ? o.deadline->s : 0;
  local_epochs_ = o.local_epochs;
  schedule_ = o.schedule;
  devices_.resize(static_cast<size_t>(o.devices));
  vhl_ = o.vhl;
  client_state_ = std::make_unique<ClientStateStore>(o.client_state, clients_, scenario.output.path + ".clients");
  configure_host(scenario);
  samplers_ = make_samplers(scenario, data);
  if (vhl_) virtual_ = std::make_unique<VirtualData>(make_vhl_data(scenario, data));
  batches_.assign(clients_, 0);
  eval_model_ = make_model(scenario);
  eval_model_->to(torch::Device(scenario.device));
  parameters_ = count_parameters(*eval_model_);
  trainable_ = count_parameters(*eval_model_, true);
  global_ = flatten_parameters(*eval_model_).clone();
  if (server_momentum_ > 0) momentum_ = torch::zeros({parameters_}, torch::kFloat64);
  compute_ =
      std::make_unique<ComputeModel>(scenario.compute, training_work(scenario, *eval_model_), clients_, scenario.seed);
  evaluator_ = std::make_unique<Evaluator>(scenario, data, eval_model_);
  clock_ = std::make_unique<EventClock>();
  topology_ = std::make_unique<Topology>(build_topology(topology_spec(scenario)));
  network_ = std::make_unique<TimedNetwork>(make_network(scenario, *clock_, *topology_, hooks_.captures), times_);
  summary_.model_parameters = parameters_;
}

FederatedRun::~FederatedRun() {
  network_.reset();
  clock_.reset();
}

RunInfo FederatedRun::run_info() const {
  RunInfo info;
  info.scenario_yaml = to_yaml(scenario_);
  info.nodes = picked_;  // the tables' columns are the round's picked clients (ParticipationRow names them)
  info.model_parameters = parameters_;
  info.trainable_parameters = trainable_;
  info.device = scenario_.device;
  info.deterministic = compute_->deterministic();
  for (int c = 0; c < clients_; ++c) info.node_speeds.push_back(compute_->speed(c));
  for (const auto& v : data_.test_variants) info.test_variants.push_back(v.name);
  info.federated = true;
  return info;
}

RunSummary FederatedRun::run(Recorder& recorder) {
  recorder_ = &recorder;
  summary_.status = RunStatus::Running;
  {
    HostTimer timer(times_.run);
    clock_->schedule(0, [this] { start_round(); });
    try {
      clock_->run(hooks_.interrupted);
    } catch (const std::exception& e) {
      summary_.status = RunStatus::Failed;
      summary_.error = error_sentence(e) + " (at simulated time " + std::to_string(clock_->now()) + " s)";
    }
  }
  // A signal mid-round stops the clock between two events (EventClock::run).
  if (summary_.status == RunStatus::Running && hooks_.interrupted && hooks_.interrupted->load()) {
    summary_.status = RunStatus::Failed;
    summary_.error = "interrupted by a signal";
  }
  if (summary_.status == RunStatus::Running) {
    summary_.status = round_ == rounds_ ? RunStatus::Completed : RunStatus::Failed;
    if (round_ != rounds_) summary_.error = "the event queue ran dry in round " + std::to_string(round_);
  }
  if (summary_.status == RunStatus::Completed && !scenario_.output.checkpoint.empty()) {
    load_flat_parameters(*eval_model_, global_);
    save_checkpoint(*eval_model_, scenario_.output.checkpoint);
  }
  summary_.total_bytes = total_bytes_;
  summary_.host_time_s = times_.run;
  summary_.steps_completed = round_ * H_;
  recorder_->finish(summary_);
  return summary_;
}

// The round's clients, ascending: a seeded choice of picked_ of them, the same for the same
// scenario whatever happened in earlier rounds.
std::vector<int> FederatedRun::pick(int round) const {
  auto order =
      seeded_permutation(clients_, stream_seed(scenario_.seed, "fedavg_clients", static_cast<uint64_t>(round)));
  std::vector<int> chosen(order.begin(), order.begin() + picked_);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

// Every message carries a model: the trainable parameters in float32 (an aggregate adds its
// weight, a float64).
void FederatedRun::send(int src, int dst, const char* kind, std::function<void(double)> delivered,
                        uint64_t extra_bytes) {
  Message m;
  m.id = next_message_id_++;
  m.src = src;
  m.dst = dst;
  m.bytes = static_cast<uint64_t>(trainable_) * 4 + extra_bytes;
  total_bytes_ += m.bytes;
  // TimedNetwork charges the delivery callback to times_.engine.
  network_->send(m, [this, kind, delivered = std::move(delivered)](const Delivery& d) {
    recorder_->message({d.message.src, d.message.dst, d.message.bytes, d.t_send, d.t_recv, d.lost_bytes, kind});
    delivered(d.t_recv);
  });
}

void FederatedRun::start_round() {
  HostTimer timer(times_.engine);
  if (hooks_.interrupted && hooks_.interrupted->load()) {
    summary_.status = RunStatus::Failed;
    summary_.error = "interrupted by a signal";
    return clock_->stop();
  }
  if (round_ == rounds_) return;
  round_over_ = false;
  round_start_ = clock_->now();
  auto& slots = slots_[round_];
  const double batch = scenario_.workload.batch_size;
  for (int client : pick(round_)) {
    Slot slot;
    slot.client = client;
    const double samples = static_cast<double>(samplers_[client].shard_size());
    slot.steps = local_epochs_ > 0 ? std::max(1, static_cast<int>(std::ceil(local_epochs_ * samples / batch))) : H_;
    slots.push_back(std::move(slot));
  }
  // Which executor each client trains on, by the work known before the round (straggler noise is not).
  std::vector<double> work;
  for (const Slot& slot : slots) work.push_back(slot.steps / compute_->speed(slot.client));
  const auto device = assign_devices(work, static_cast<int>(devices_.size()), schedule_);
  for (size_t k = 0; k < slots.size() && !devices_.empty(); ++k) slots[k].device = device[k];
  // The model the clients download is the one at the round's start: a late download still
  // carries it after the server has moved on.
  auto model = std::make_shared<const torch::Tensor>(global_.clone());
  if (per_cluster_ > 0) {
    // One copy to each aggregator with picked clients, which passes it on to them.
    auto& aggregators = aggregators_[round_];
    aggregators.assign(static_cast<size_t>(std::max(1, scenario_.topology.clusters)), Aggregator{});
    for (size_t k = 0; k < slots.size(); ++k)
      aggregators[static_cast<size_t>(slots[k].client / per_cluster_)].slots.push_back(k);
    for (size_t c = 0; c < aggregators.size(); ++c) {
      aggregators[c].pending = aggregators[c].slots.size();
      if (aggregators[c].slots.empty()) continue;
      send(server_, aggregator_host(static_cast<int>(c)), "download", [this, c, round = round_, model](double) {
        for (size_t k : aggregators_.at(round)[c].slots) {
          send(aggregator_host(static_cast<int>(c)), host(slots_.at(round)[k].client), "download",
               [this, k, round, model](double t) { downloaded(round, k, t, model); });
        }
      });
    }
  } else {
    for (size_t k = 0; k < slots.size(); ++k) {
      send(server_, host(slots[k].client), "download",
           [this, k, round = round_, model](double t) { downloaded(round, k, t, model); });
    }
  }
  if (deadline_ > 0) {
    clock_->schedule(deadline_, [this, round = round_] {
      HostTimer t(times_.engine);
      if (round == round_ && !round_over_) end_round();
    });
  }
}

// The virtual rows of a client's next local step: drawn anew every step from its own stream.
uint64_t FederatedRun::vhl_batch_seed(int client) const {
  const auto index = (static_cast<uint64_t>(client) << 32) | static_cast<uint64_t>(batches_[client]);
  return stream_seed(scenario_.seed, "vhl_batches", index);
}

void FederatedRun::downloaded(int round, size_t k, double t, std::shared_ptr<const torch::Tensor> model) {
  Slot& slot = slots_.at(round)[k];
  slot.t_download = t;
  slot.model = std::move(model);
  if (slot.device < 0) return train(round, k);
  Device& device = devices_[static_cast<size_t>(slot.device)];
  if (device.busy) {
    device.waiting.emplace_back(round, k);
    return;
  }
  device.busy = true;
  train(round, k);
}

void FederatedRun::train(int round, size_t k) {
  Slot& slot = slots_.at(round)[k];
  slot.t_start = clock_->now();
  // A client holds a replica only while it trains: built from the round's model with a fresh
  // optimizer (stateless clients), its shard's sampler carried over from its last round.
  Replica replica(make_model(scenario_), optimizer_config(scenario_), samplers_[slot.client],
                  torch::Device(scenario_.device), data_.task);
  load_flat_parameters(replica.model(), *slot.model);
  slot.model.reset();
  client_state_->restore(slot.client, replica.optimizer());
  double seconds = 0, loss = 0;
  for (int h = 0; h < slot.steps; ++h) {
    double host_seconds = 0;
    {
      HostTimer compute_timer(host_seconds);
      const int batch = scenario_.workload.batch_size;
      // VHL's virtual batch is as large as the real one (the reference's 128 and 128).
      loss += virtual_ ? vhl_local_step(replica, data_, batch, *virtual_, batch, vhl_batch_seed(slot.client),
                                        vhl_->weight, vhl_->augment == VhlAugment::CropFlip)
                       : local_sgd_step(replica, data_, batch);
    }
    times_.local_compute += host_seconds;
    // The straggler noise of the client's n-th local step of the run.
    seconds += compute_->step_seconds(slot.client, static_cast<int>(batches_[slot.client]), host_seconds);
    ++batches_[slot.client];
  }
  samplers_[slot.client] = replica.sampler();
  client_state_->keep(slot.client, replica.optimizer());
  slot.loss = loss / slot.steps;
  slot.t_compute = slot.t_start + seconds;
  slot.upload = flatten_parameters(replica.model());
  if (!std::isfinite(slot.loss)) {
    summary_.status = RunStatus::Diverged;
    summary_.error =
        "client " + std::to_string(slot.client) + " has a non-finite loss in round " + std::to_string(round);
    return clock_->stop();
  }
  clock_->schedule(seconds, [this, round, k] {
    HostTimer timer(times_.engine);
    const Slot& done = slots_.at(round)[k];
    if (per_cluster_ > 0) {
      send(host(done.client), aggregator_host(done.client / per_cluster_), "upload",
           [this, round, k](double t) { at_aggregator(round, k, t); });
    } else {
      send(host(done.client), server_, "upload", [this, round, k](double t) { uploaded(round, k, t); });
    }
    if (done.device < 0) return;
    Device& device = devices_[static_cast<size_t>(done.device)];
    if (device.waiting.empty()) {
      device.busy = false;
      return;
    }
    const auto [next_round, next] = device.waiting.front();
    device.waiting.erase(device.waiting.begin());
    train(next_round, next);
  });
}

void FederatedRun::uploaded(int round, size_t k, double t) {
  auto& slots = slots_.at(round);
  slots[k].t_upload = t;
  slots[k].arrived = true;
  const bool all = std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return s.arrived; });
  if (round != round_ || round_over_) {  // after the deadline: not applied
    record(round, slots[k], true);
    forget_if_done(round);
    return;
  }
  if (all) end_round();
}

// The aggregator's part: once its last client is in, their mean weighted by samples (float64,
// sent as float32 with its weight) goes to the server.
void FederatedRun::at_aggregator(int round, size_t k, double t) {
  auto& slots = slots_.at(round);
  slots[k].t_upload = t;
  const auto cluster = static_cast<size_t>(slots[k].client / per_cluster_);
  Aggregator& a = aggregators_.at(round)[cluster];
  if (--a.pending > 0) return;
  std::vector<std::pair<const torch::Tensor*, double>> uploads;
  for (size_t j : a.slots)
    uploads.emplace_back(&slots[j].upload, static_cast<double>(samplers_[slots[j].client].shard_size()));
  const auto [mean, weight] = weighted_mean(uploads, parameters_);
  a.aggregate = mean.to(torch::kFloat32);
  a.weight = weight;
  send(
      aggregator_host(static_cast<int>(cluster)), server_, "aggregate",
      [this, round, cluster](double) { aggregate_arrived(round, cluster); }, 8);
}

void FederatedRun::aggregate_arrived(int round, size_t cluster) {
  Aggregator& a = aggregators_.at(round)[cluster];
  a.arrived = true;
  auto& slots = slots_.at(round);
  for (size_t k : a.slots) slots[k].arrived = true;
  if (round != round_ || round_over_) {  // after the deadline: its clients are dropped
    for (size_t k : a.slots) record(round, slots[k], true);
    forget_if_done(round);
    return;
  }
  const auto& all = aggregators_.at(round);
  if (std::all_of(all.begin(), all.end(), [](const Aggregator& x) { return x.slots.empty() || x.arrived; }))
    end_round();
}

void FederatedRun::forget_if_done(int round) {
  const auto& slots = slots_.at(round);
  if (!std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return s.arrived; })) return;
  slots_.erase(round);
  aggregators_.erase(round);
}

// The eval's per-client entries are the uploads that arrived in time; the file's columns are
// the round's picked clients (slots): each entry goes to its slot, the others read NaN.
void FederatedRun::scatter_to_slots(EvalRow& row, const std::vector<size_t>& slot_of) const {
  const auto n = static_cast<size_t>(picked_);
  const size_t m = slot_of.size();
  std::vector<double> loss(n, std::nan("")), accuracy(n, std::nan("")), matrix(n * n, std::nan(""));
  for (size_t i = 0; i < m; ++i) {
    loss[slot_of[i]] = row.replica_loss[i];
    accuracy[slot_of[i]] = row.replica_accuracy[i];
    for (size_t j = 0; j < m && row.correlation_matrix.size() == m * m; ++j)
      matrix[slot_of[i] * n + slot_of[j]] = row.correlation_matrix[i * m + j];
  }
  row.replica_loss = std::move(loss);
  row.replica_accuracy = std::move(accuracy);
  row.correlation_matrix = std::move(matrix);
}

// Busy device-seconds in [from, to] over the executors' seconds there: every client that has
// started training counts (a late client of an earlier round too); one that waits does not.
double FederatedRun::utilisation(double from, double to) const {
  if (to <= from) return 0;
  double busy = 0;
  for (const auto& [round, slots] : slots_)
    for (const auto& s : slots)
      if (!std::isnan(s.t_start)) busy += std::max(0.0, std::min(s.t_compute, to) - std::max(s.t_start, from));
  const double devices = devices_.empty() ? picked_ : static_cast<double>(devices_.size());
  return busy / (devices * (to - from));
}

void FederatedRun::record(int round, const Slot& slot, bool dropped) {
  recorder_->participation({round, slot.client, samplers_[slot.client].shard_size(), slot.steps, slot.device, slot.loss,
                            slot.t_download, slot.t_start, slot.t_compute, slot.t_upload, dropped});
}

// The server's step on what arrived in time: the average weighted by samples (in float64),
// then x <- x - server_lr m with m <- server_momentum m + (x - average).
void FederatedRun::end_round() {
  round_over_ = true;
  auto& slots = slots_.at(round_);
  // What reached the server in time, with its weight: each client's upload, or each cluster's
  // aggregate.
  std::vector<std::pair<const torch::Tensor*, double>> arrived;
  if (per_cluster_ > 0) {
    for (const auto& a : aggregators_.at(round_))
      if (a.arrived) arrived.emplace_back(&a.aggregate, a.weight);
  } else {
    for (const auto& s : slots)
      if (s.arrived) arrived.emplace_back(&s.upload, static_cast<double>(samplers_[s.client].shard_size()));
  }
  const auto [average, total] = weighted_mean(arrived, parameters_);
  if (total > 0) {
    torch::NoGradGuard no_grad;
    auto x = global_.to(torch::kFloat64);
    auto step = x - average;
    if (momentum_.defined()) step = momentum_.mul_(server_momentum_).add_(step);
    global_ = x.sub_(step, server_lr_).to(torch::kFloat32);
  }
  TrainRow row;
  row.step = (round_ + 1) * H_ - 1;  // the round's last local step, so /train and /eval count alike
  std::vector<torch::Tensor> uploads;
  std::vector<size_t> slot_of;
  for (size_t k = 0; k < slots.size(); ++k) {
    const Slot& s = slots[k];
    row.loss.push_back(s.loss);
    row.time.push_back(s.t_upload);
    row.compute_time.push_back(s.t_compute - s.t_start);
    row.bytes.push_back(static_cast<uint64_t>(trainable_) * 4);
    if (s.arrived) {
      record(round_, s, false);
      uploads.push_back(s.upload);
      slot_of.push_back(k);
    }
  }
  recorder_->train(row);
  RoundRow round_row{round_,
                     round_start_,
                     clock_->now(),
                     static_cast<int>(uploads.size()),
                     static_cast<int>(slots.size() - uploads.size()),
                     utilisation(round_start_, clock_->now())};
  {
    double loss = 0;
    int trained = 0;
    for (size_t k : slot_of)
      if (std::isfinite(row.loss[k])) loss += row.loss[k], ++trained;
    if (trained > 0) round_row.train_loss = loss / trained;
  }
  forget_if_done(round_);
  summary_.projected_time_s = clock_->now();
  const int steps_done = (round_ + 1) * H_;
  if (steps_done % scenario_.workload.eval_every == 0 || round_ + 1 == rounds_) {
    const bool none = uploads.empty();  // every client late: the server's model alone
    if (none) uploads.push_back(global_);
    EvalRow eval;
    {
      HostTimer timer(times_.eval);
      eval = evaluator_->evaluate_step(steps_done, uploads, global_);
    }
    if (none) eval.replica_loss.clear(), eval.replica_accuracy.clear(), eval.correlation_matrix.clear();
    scatter_to_slots(eval, slot_of);
    round_row.eval_loss = eval.loss;
    round_row.accuracy = eval.accuracy;
    recorder_->eval(eval);
    evaluator_->summarise(eval, summary_);
  }
  recorder_->round(round_row);
  if (hooks_.progress) {
    double loss = 0;
    int trained = 0;
    for (double l : row.loss)
      if (std::isfinite(l)) loss += l, ++trained;
    hooks_.progress({steps_done, scenario_.workload.steps, trained > 0 ? loss / trained : 0, clock_->now()});
  }
  ++round_;
  clock_->schedule(0, [this] { start_round(); });
}

}  // namespace testbed
