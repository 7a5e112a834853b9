// The run loop: N replicas train on the event clock while their messages cross the network.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "comm/tensors/communicator.h"
#include "netmodels/host_times.h"
#include "netmodels/network.h"
#include "sim/config/scenario.h"
#include "sim/core/engine/op_schedule.h"
#include "sim/core/network_factory.h"
#include "sim/dist/placement.h"
#include "sim/dist/plan_wire.h"
#include "sim/output/recorder.h"
#include "topologies/topology.h"
#include "training/algorithm.h"
#include "training/algorithms/merged_gradient_buckets.h"
#include "training/data/dataset.h"
#include "training/models/model_shapes.h"
#include "training/optimizers/kfac.h"
#include "training/replica.h"

namespace testbed {

class ComputeModel;
struct Checkpoint;
class EventClock;
class Evaluator;
class ProcessGroup;

struct Progress {
  int step = 0, steps = 0;
  double loss = 0;
  double projected_time_s = 0;
};

struct EngineHooks {
  const std::atomic<bool>* interrupted = nullptr;  // checked before every step
  std::function<void(const Progress&)> progress;   // after every completed step row
  NetworkCaptures captures;                        // packet captures of the ns3 backend
  // Checkpoints every output.resume_every steps go to this folder (empty: none are written).
  std::string checkpoint_dir;
  // Continue from this checkpoint: the recorder already holds the rows it counts.
  const Checkpoint* resume = nullptr;
  int kill_in_checkpoint = 0;  // fault injection for tests: SIGKILL halfway through writing the n-th
  // The run's processes (docs/scale-out.md): this one trains its share of the replicas and
  // simulates everything. Null: one process trains them all.
  ProcessGroup* group = nullptr;
  // A warning for the user (the CLI prints it on stderr): an ns-3 step of host minutes.
  std::function<void(const std::string&)> warn;
};

class Engine {
 public:
  Engine(const Scenario& scenario, const Dataset& data, EngineHooks hooks = {});
  ~Engine();

  // What the recorder's file header needs to know about this run.
  RunInfo run_info() const;
  // Runs to the end (or divergence, or interruption), streaming results to `recorder`.
  RunSummary run(Recorder& recorder);

  const std::vector<std::unique_ptr<Replica>>& replicas() const { return replicas_; }
  const Algorithm& algorithm() const { return *algorithm_; }
  const HostTimes& host_times() const { return times_; }
  int64_t model_parameters() const { return parameters_; }
  double flops_per_step() const;

 private:
  // An op a node issued, until it is applied.
  struct InFlight {
    int issued_step = 0;
    int due_step = 0;  // applied before this step starts (the run's end at the latest)
    CommOp op;
    torch::Tensor work;     // this rank's buffer in the collective
    int blocks = 1;         // of op.buffer's size in `work`
    torch::Tensor arrived;  // lossy exchanges: which elements of `work` arrived (CollectiveRun::enter)
    int rank = 0;           // the node's rank among the op's participants
    bool entered = true;    // false while it queues behind the node's previous op (backward's stream)
    bool complete = false;
  };
  struct NodeState {
    int step = 0;
    double compute_time = 0, loss = 0;
    double extra_time = 0;          // of compute_time: the algorithm's extra work, after backward
    size_t round = 0;               // of the step's communication rounds, the next to start
    bool computing = false;         // between start_step and compute_done
    int64_t compute_end_ticks = 0;  // when compute_done runs (clock ticks): the end of backward
                                    // when the step issues ops during backward, else of the step
    std::vector<CommOp> to_issue;   // the step's ops issued when its compute ends
    // A step that issues ops during backward: the update's ticks, spent once its due ops are
    // complete (0 once spent, and for every other step: their compute time includes it).
    int64_t update_ticks = 0;
    std::vector<InFlight> in_flight;  // in issue order
    // The step after one whose ops gate its forward (CommOp::before_forward): its forward runs
    // gate by gate before its compute does (start_step), each gate's layer waiting for its op.
    size_t gate = 0;                // of those ops, in issue order, the next the forward reaches
    bool at_gate = false;           // reached, its op not complete
    bool gates_end_step = false;    // the run's last step waits for its gates before it ends
    double next_passes = 0;         // seconds of the gated step's passes (0 after the last step)
    int64_t gate_update_ticks = 0;  // the previous step's update, spread over the gates
    int64_t forward_ticks = 0;      // of the step's passes, what ran at the gates before start_step
    bool waiting = false;           // idle until the ops due at the next step complete
    bool finished = false;
  };
  struct PendingRow {
    TrainRow row;
    int filled = 0;
  };

  void start_step(int node);
  // start_step(node) runs in a fresh event at the current time (the replica is final now).
  void schedule_start(int node);
  // The step's plan: trained here (or earlier, while a peer was awaited), or a peer's outline.
  PlanOutline step_plan(int node);
  PlanOutline train_step(int node);
  // Before waiting for a peer: trains the local nodes whose step is due, and sends their plans.
  void train_ready_nodes();
  void send_plan(int node, const PlanOutline& plan);
  PlanOutline receive_plan(int node);
  void post_plan_head(int node);  // the receive of the node's next plan, posted ahead
  // Issues the ops that wait for a gradient at that layer's end of backward; returns the rest.
  std::vector<CommOp> schedule_backward_ops(int node, std::vector<CommOp> ops);
  void fuse_by_cycle(int node, int64_t start, std::vector<CommOp>& ops, std::vector<int64_t>& leaves);
  void compute_done(int node);
  void issue(int node, CommOp op);
  // Once, at the first step with ops: on ns-3, the packets they put on the network and the
  // host time that implies, said through hooks_.warn when it is minutes.
  void say_step_cost(int step, const std::vector<CommOp>& ops);
  // A spread run (engine_spread.cpp): the buffer a rank enters a collective with, the
  // collective's input tags and receives, and the end of the run's transfers.
  torch::Tensor spread_work_buffer(int node, const CommOp& op, int rank, int blocks, Communicator::Collective& c);
  void spread_collective(const Communicator::Key& key, Communicator::Collective& slot, CollectiveHooks& hooks,
                         const std::vector<int>& participants);
  void finish_spread();
  void op_complete(int node, int issued_step, const std::string& tag);
  void enter_next_queued(int node);
  void advance(int node);
  // The step's next round of ops (Algorithm::next_round): true when one started.
  bool start_round(int node);
  // Applies the node's in-flight ops that `which` picks, in issue order, and forgets them.
  void apply_ops(int node, const std::function<bool(const InFlight&)>& which);
  // Ends the step: its row, the eval snapshot, the next step.
  void end_step(int node);
  // The next step's forward against the ops it waits for (CommOp::before_forward): begins it,
  // reaches each gate (passing once its op is complete) and, past the last, applies them.
  void begin_forward(int node);
  void reach_gate(int node);
  void finish_forward(int node);
  InFlight& gate_op(int node, size_t gate);
  int64_t forward_ticks_to_gate(int node, size_t gate);
  void record_step(int node);
  bool eval_step(int steps_done) const;  // an evaluation follows this many steps
  void snapshot_for_eval(int node, int steps_done);
  void run_eval(int steps_done, const std::vector<torch::Tensor>& snapshots);
  void stop(RunStatus status, const std::string& error);
  // Resume (engine_resume.cpp): every output.resume_every steps the state is saved; a resumed
  // run replays the op schedule without training up to that moment, then loads the values.
  void start_replay();
  void at_checkpoint(int steps_done);
  std::string save_state();
  void load_state(torch::serialize::InputArchive& archive);
  StepPlan replayed_step(int node, int step);
  // Ops as the schedule records them (sizes, no values), and back (zero-filled buffers).
  static std::vector<ScheduledOp> scheduled_ops(const std::vector<CommOp>& ops);
  static std::vector<CommOp> replayed_ops(const std::vector<ScheduledOp>& ops);
  PendingRow& pending_row(int step);
  // What memoization needs of an op the node will issue at `at_ticks` (in an event scheduled
  // now, or in the step's compute batch at that tick).
  void plan_issue(int node, const CommOp& op, int64_t at_ticks, bool in_batch);
  // The fleet as the step's first collective opens the step's channel (memo_policy.h).
  PhaseEntry phase_entry(int node, int step) const;
  // What ddp's mgwfbp merges by (empty for every other algorithm).
  MergeTimes merge_times(const PathOf& path) const;

  const Scenario& scenario_;
  const Dataset& data_;
  Recorder* recorder_ = nullptr;  // set for the duration of run()
  EngineHooks hooks_;
  int nodes_;
  // workload.train false: no replica, plans from shapes (Algorithm::projected_step), no values
  // in the collectives, no evaluation; times, bytes and messages as a training run's.
  bool projection_ = false;
  // The collective library and its overlap slowdown, resolved once (scenario.h).
  bool horovod_ = false;
  double overlap_slowdown_ = 0;
  std::vector<int> fleet_;  // 0..nodes-1: an op's participants when it names none

  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<Algorithm> algorithm_;
  std::shared_ptr<Model> eval_model_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<ComputeModel> cloud_compute_;  // a split model's back half on the cloud (CommKind::Cut)
  int64_t parameters_ = 0, trainable_parameters_ = 0;
  std::vector<int> gradient_layer_;                   // trainable tensor -> its layer in the compute model
  std::vector<SecondOrderLayer> local_second_order_;  // K-FAC's layers when each node runs it alone
  KfacOptions local_kfac_;

  // Destruction order matters: collectives use the network, the network the clock.
  std::unique_ptr<EventClock> clock_;
  Topology topology_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<Communicator> comm_;  // the ops' collectives on network_
  std::vector<std::vector<int>> host_neighbours_;
  std::vector<NodeState> state_;
  std::map<int, PendingRow> rows_;
  std::map<int, std::vector<torch::Tensor>> snapshots_;
  // Spread over processes (hooks_.group): who trains which node; local nodes whose step is due
  // and those trained ahead; plans exchanged per node and payload tags used (both the same
  // sequence in every process, as every process runs the same events).
  ReplicaPlacement placement_;
  std::vector<int> ready_;
  std::map<int, PlanOutline> trained_ahead_;
  std::vector<uint64_t> plans_exchanged_;
  uint64_t payload_tags_ = 0;                                  // collectives' input tags used
  std::vector<std::pair<int64_t, torch::Tensor>> plan_heads_;  // per remote node: the posted receive
  uint64_t eval_tags_ = 0;
  struct ComputeBatch {
    std::vector<int> nodes;    // whose compute ends at its tick
    uint64_t event_order = 0;  // its event's (PlannedIssue::event_order)
  };
  std::map<int64_t, ComputeBatch> compute_batches_;  // by tick
  bool step_cost_said_ = false;                      // say_step_cost has looked
  // Horovod's fusion buffers in flight: each one's parts, by (node, step, fused tag).
  std::map<std::tuple<int, int, std::string>, std::vector<CommOp>> fused_parts_;
  bool memo_steps_ = false;    // memoization may replay steps (network.memoize, deterministic compute)
  uint64_t issue_events_ = 0;  // events scheduled to issue ops, so far
  uint64_t total_bytes_ = 0;
  double last_step_end_ = 0;  // projected time: when the last node finished its last step
  RunSummary summary_;
  HostTimes times_;

  OpSchedule schedule_;     // every step's ops and compute time, for checkpoints
  bool replaying_ = false;  // resuming: re-running the schedule up to the checkpoint
  std::unique_ptr<torch::serialize::InputArchive> resume_archive_;  // the checkpoint's payload, read once
  std::unique_ptr<Recorder> discard_;  // takes the rows of a replay (they are in the file already)
  Recorder* output_ = nullptr;         // the recorder given to run()
  int checkpoints_written_ = 0;
};

}  // namespace testbed
