// Building a run: the replicas (none in a projection), the compute models, the algorithm, the
// network and the comm layer over it, from the scenario.
#include "sim/core/engine/engine.h"

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "sim/core/evaluation/evaluation.h"
#include "sim/core/network_factory.h"
#include "sim/dist/process_group.h"
#include "topologies/routing.h"
#include "training/algorithms/ddp_options.h"
#include "training/seed_streams.h"

namespace testbed {

Engine::Engine(const Scenario& scenario, const Dataset& data, EngineHooks hooks)
    : scenario_(scenario),
      data_(data),
      hooks_(std::move(hooks)),
      nodes_(scenario.nodes),
      projection_(!scenario.workload.train),
      horovod_(collective_library(scenario) == CollectiveLibrary::Horovod),
      overlap_slowdown_(overlap_slowdown(scenario)) {
  configure_host(scenario);
  if (projection_ && hooks_.group)
    throw std::invalid_argument(
        "a projection (workload.train false) trains no replica to spread: run it in one process");
  torch::Device device(scenario.device);

  placement_ = hooks_.group ? ReplicaPlacement{nodes_, hooks_.group->world(), hooks_.group->rank()}
                            : ReplicaPlacement{nodes_, 1, 0};
  plans_exchanged_.assign(nodes_, 0);
  plan_heads_.assign(nodes_, {-1, torch::Tensor()});
  // A projection reads no sample, so its nodes need no shards (there may be more nodes than
  // samples); the shards' sizes only weight values it never computes.
  std::vector<ShardSampler> samplers;
  if (!projection_) samplers = make_samplers(scenario, data);
  std::vector<int64_t> shard_sizes;
  for (int n = 0; n < nodes_; ++n) {
    shard_sizes.push_back(projection_ ? 1 : samplers[n].shard_size());
    // Another process's replica is never built here: its plans and values come from there.
    // A projection builds none: its plans come from shapes (Algorithm::projected_step).
    replicas_.push_back(placement_.local(n) && !projection_
                            ? std::make_unique<Replica>(make_model(scenario, n), optimizer_config(scenario, n),
                                                        std::move(samplers[n]), device, data.task)
                            : nullptr);
  }
  // A projection evaluates nothing and never builds the model: its shapes are enough.
  ModelShapes shapes;
  if (projection_) {
    shapes = model_shapes(scenario);
  } else {
    eval_model_ = make_model(scenario);
    eval_model_->to(device);
    shapes = shapes_of(*eval_model_);
  }
  parameters_ = shapes.parameters;
  trainable_parameters_ = shapes.trainable();
  const TrainingWork work = training_work(scenario, shapes.layers);
  if (shapes.cut_layer < 0) {
    compute_ = std::make_unique<ComputeModel>(scenario.compute, work, nodes_, scenario.seed);
  } else {
    // A split model: the edges run the front on compute.device, the cloud the back on its own
    // (CommKind::Cut), each with its own optimizer over its own half's parameters.
    const auto cut = shapes.layers.begin() + shapes.cut_layer;
    compute_ = std::make_unique<ComputeModel>(scenario.compute, training_work(scenario, {shapes.layers.begin(), cut}),
                                              nodes_, scenario.seed);
    cloud_compute_ = std::make_unique<ComputeModel>(
        split_cloud_compute(scenario), training_work(scenario, {cut, shapes.layers.end()}), 1, scenario.seed);
  }
  if (!projection_) evaluator_ = std::make_unique<Evaluator>(scenario, data, eval_model_);

  clock_ = std::make_unique<EventClock>();
  topology_ = build_topology(topology_spec(scenario));
  network_ = make_network(scenario, *clock_, topology_, hooks_.captures);
  host_neighbours_ = host_neighbours(topology_);
  gradient_layer_ = gradient_layers(work, shapes.names);
  const PathOf path = path_of(topology_, routing_options(scenario));
  fleet_.resize(nodes_);
  for (int n = 0; n < nodes_; ++n) fleet_[n] = n;
  algorithm_ = make_algorithm(scenario, shard_sizes, shapes.shapes, host_neighbours_, gradient_layer_,
                              shapes.second_order, shapes.cut_values_per_sample, shapes.names, merge_times(path));
  if (cloud_compute_ && hooks_.group)
    throw std::invalid_argument("split fine-tuning runs in one process (its cloud is no process's node)");
  // K-FAC outside DDP's rounds preconditions alone on every node: its compute joins each step.
  if (scenario.optimizer.name == OptimizerKind::Kfac &&
      !OptimizerSection::sends_second_order_messages(scenario.algorithm.name)) {
    local_second_order_ = shapes.second_order;
    local_kfac_ = optimizer_config(scenario).kfac;
  }
  if (projection_ && !compute_->deterministic())
    throw std::invalid_argument(
        "a projection (workload.train false) runs no step to measure: it needs a compute model "
        "that knows a step's time beforehand (not measured)");
  if (algorithm_->forward_waits_for_ops() && !compute_->deterministic())
    throw std::invalid_argument(algorithm_->name() +
                                " times its forward before the step runs: it needs a compute "
                                "model that knows the step's time beforehand (not measured)");
  state_.resize(nodes_);
  schedule_.resize(nodes_);
  // Rounds are decided once a step's ops are applied, so a step's ops are not all known when
  // its first leaves.
  // Only the packet-level backend can replay (Network::held_state): elsewhere planning
  // the phases would only build plans. A library's costs move sends and hand-overs by fixed
  // amounts after what the network does, so a replay's deliveries move them the same way.
  memo_steps_ = scenario.network.memoize && scenario.network.backend == Backend::Ns3 && compute_->deterministic() &&
                !algorithm_->has_rounds() && !cloud_compute_;
  summary_.model_parameters = parameters_;

  CommSettings comm;
  comm.nodes = nodes_;
  comm.choice = collective_choice(scenario);
  comm.host_neighbours = host_neighbours_;
  comm.projection = projection_;
  comm.lanes = projection_ && scenario.network.flow_lanes && !placement_.spread();
  comm.datagrams = scenario.network.transport == Transport::Udp;
  // The cloud's hold: the back half's forward and backward (its update overlaps the return).
  if (cloud_compute_) comm.cut_hold_s = cloud_compute_->step_seconds(0, 0, 0) * cloud_compute_->shares().backward_end();
  comm.algorithm = algorithm_->name();
  comm.path = path;
  Communicator::Callbacks callbacks;
  callbacks.rank_done = [this](int node, int step, const std::string& tag) { op_complete(node, step, tag); };
  callbacks.message = [this](const MessageRecord& record) { recorder_->message(record); };
  callbacks.phase_entry = [this](int node, int step) { return phase_entry(node, step); };
  if (placement_.spread()) {
    callbacks.spread = [this](const Communicator::Key& key, Communicator::Collective& slot, CollectiveHooks& hooks,
                              const std::vector<int>& participants) {
      spread_collective(key, slot, hooks, participants);
    };
  }
  comm_ = std::make_unique<Communicator>(std::move(comm), std::move(callbacks), *clock_, *network_, times_);
  // Memoization's rule, decided before step 0 (docs/network.md#memoization): the network must be
  // one a held state describes, and no collective of the first step an uneven ring. Where it
  // fails the run keeps no phases at all and reports no replays.
  if (memo_steps_) {
    memo_steps_ = network_->hold() != nullptr && network_->hold()->can_replay();
    const StepPlan first = memo_steps_ ? algorithm_->projected_step(0, 0) : StepPlan{};
    for (const CommOp& op : first.comm)
      if (op.kind != CommKind::Cut && !plan_can_repeat(*comm_->plan_for(op, op.nodes.empty() ? fleet_ : op.nodes)))
        memo_steps_ = false;
  }
}

// What ddp's mgwfbp merges by (merged_gradient_buckets.h), as its reference code measures it
// before training: each tensor's gradient time in a step's passes, and the fleet's all-reduce
// as alpha + beta m from its alone time on this network and library (comm/alone_time.h).
MergeTimes Engine::merge_times(const PathOf& path) const {
  const auto* ddp = std::get_if<DdpOptions>(&scenario_.algorithm.options);
  if (scenario_.algorithm.name != "ddp" || !ddp || !ddp->mgwfbp) return {};
  // The scenario rules refuse mgwfbp across replica groups and under the measured compute model.
  if (scenario_.replica_group.grouped() || !compute_->deterministic())
    throw std::logic_error("mgwfbp reached the engine across replica groups or with measured compute");
  MergeTimes times;
  const double passes = compute_->step_seconds(0, 0, 0);
  for (int layer : gradient_layer_) times.ready_s.push_back(passes * compute_->shares().backward_done(layer));
  const AlphaBeta fit = all_reduce_alpha_beta(collective_options(collective_choice(scenario_), fleet_), fleet_,
                                              collective_choice(scenario_).library, path);
  times.alpha_s = fit.alpha_s;
  times.beta_s_per_byte = fit.beta_s_per_byte;
  return times;
}

Engine::~Engine() {
  comm_.reset();
  network_.reset();
  clock_.reset();
}

double Engine::flops_per_step() const { return compute_->flops_per_step(); }

RunInfo Engine::run_info() const {
  RunInfo info;
  info.scenario_yaml = to_yaml(scenario_);
  info.nodes = nodes_;
  info.model_parameters = parameters_;
  info.trainable_parameters = trainable_parameters_;
  info.device = scenario_.device;
  info.deterministic = compute_->deterministic();
  info.projection = projection_;
  for (int n = 0; n < nodes_; ++n) info.node_speeds.push_back(compute_->speed(n));
  for (const auto& v : data_.test_variants) info.test_variants.push_back(v.name);
  return info;
}

}  // namespace testbed
