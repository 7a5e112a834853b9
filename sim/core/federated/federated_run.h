// FedAvg as McMahan et al. (2017, Algorithm 1) run it: a server holds the global model; each
// round it sends it to a seeded sample of the clients, each picked client trains H local
// steps from it and sends its parameters back, and the server averages what arrived,
// weighted by the clients' samples (then steps with server_lr and server_momentum). Clients
// that are not picked neither compute nor send, and a client's replica exists only while it
// trains (stateless clients: built from the global model, released after its upload), so a
// run holds one replica however many clients there are. Downloads and uploads are messages
// between the server's host and the clients' over the topology; a round ends when the last
// upload arrives, or at its deadline, which drops the uploads still on their way. With
// `devices`, the picked clients' training shares that many executors (FedML Parrot's
// simulation devices): a client whose download is in waits until its device is free. On a
// hierarchical topology each cluster has an aggregator (a host of its own after the cluster's
// clients): the server sends the model once to each aggregator with picked clients, which
// passes it on; the clients upload to it, and it sends the server one aggregate (their mean
// weighted by samples, float32, with its weight) once they are all in (Parrot's local then
// global aggregation; Nebula-I's clusters).
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "sim/core/run.h"
#include "training/algorithms/fedavg_options.h"

namespace testbed {

class ComputeModel;
class EventClock;
class ClientStateStore;
class Evaluator;
struct VirtualData;
struct Topology;

class FederatedRun : public Run {
 public:
  FederatedRun(const Scenario& scenario, const Dataset& data, EngineHooks hooks = {});
  ~FederatedRun() override;
  RunInfo run_info() const override;
  RunSummary run(Recorder& recorder) override;
  const HostTimes& host_times() const override { return times_; }
  // The server's model (all parameters, flat), for tests.
  const torch::Tensor& global() const { return global_; }
  // Each client's batches so far: where its sampler stands (tests: unpicked clients untouched).
  int64_t batches_drawn(int client) const { return batches_[client]; }

 private:
  struct Slot {  // a picked client in a round
    int client = 0;
    int steps = 0;    // its local steps this round
    int device = -1;  // its executor (-1: its own)
    double loss = std::nan("");
    double t_download = std::nan(""), t_start = std::nan(""), t_compute = std::nan(""), t_upload = std::nan("");
    bool arrived = false;
    std::shared_ptr<const torch::Tensor> model;  // the round's model, from its download until it trains
    torch::Tensor upload;                        // its parameters after its local steps
  };
  struct Aggregator {           // a cluster's, in a round (hierarchical topologies)
    std::vector<size_t> slots;  // its picked clients
    size_t pending = 0;         // uploads not yet in
    bool arrived = false;       // its aggregate reached the server
    double weight = 0;          // its clients' samples
    torch::Tensor aggregate;    // their weighted mean, as it travels (float32)
  };
  struct Device {  // an executor of algorithm.devices
    bool busy = false;
    std::vector<std::pair<int, size_t>> waiting;  // (round, slot) whose download is in, in arrival order
  };

  void start_round();
  // The round's model has reached the client of `slot`: it trains once its device is free.
  void downloaded(int round, size_t slot, double t, std::shared_ptr<const torch::Tensor> model);
  // The client trains (real LibTorch) on its device from now, and uploads when done.
  void train(int round, size_t slot);
  void uploaded(int round, size_t slot, double t);
  // Hierarchical: a client's upload reached its aggregator; the aggregate reached the server.
  void at_aggregator(int round, size_t slot, double t);
  void aggregate_arrived(int round, size_t cluster);
  void forget_if_done(int round);
  double utilisation(double from, double to) const;
  uint64_t vhl_batch_seed(int client) const;
  void end_round();
  void record(int round, const Slot& slot, bool dropped);
  void scatter_to_slots(EvalRow& row, const std::vector<size_t>& slot_of) const;
  std::vector<int> pick(int round) const;
  int host(int client) const {
    if (per_cluster_ > 0) return client / per_cluster_ * (per_cluster_ + 1) + client % per_cluster_;
    return client < server_ ? client : client + 1;
  }
  int aggregator_host(int cluster) const { return cluster * (per_cluster_ + 1) + per_cluster_; }
  void send(int src, int dst, const char* kind, std::function<void(double)> delivered, uint64_t extra_bytes = 0);

  const Scenario& scenario_;
  const Dataset& data_;
  EngineHooks hooks_;
  int clients_, picked_, H_, rounds_, server_;
  double server_lr_, server_momentum_, deadline_, local_epochs_;
  ClientSchedule schedule_;
  std::optional<VhlOptions> vhl_;
  std::unique_ptr<ClientStateStore> client_state_;  // each client's optimizer between rounds (client_state)
  std::unique_ptr<VirtualData> virtual_;            // VHL's, shared by every client
  std::vector<Device> devices_;                     // empty: every client its own
  int per_cluster_ = 0;                             // hierarchical: clients per cluster (0: no aggregators)
  std::shared_ptr<Model> eval_model_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<ComputeModel> compute_;
  std::vector<ShardSampler> samplers_;
  std::vector<int64_t> batches_;
  int64_t parameters_ = 0, trainable_ = 0;
  torch::Tensor global_;    // all parameters, flat
  torch::Tensor momentum_;  // the server's, float64
  // Destruction order: the network uses the clock.
  std::unique_ptr<EventClock> clock_;
  std::unique_ptr<Topology> topology_;
  std::unique_ptr<Network> network_;
  Recorder* recorder_ = nullptr;
  int round_ = 0;
  bool round_over_ = false;
  double round_start_ = 0;
  std::map<int, std::vector<Slot>> slots_;              // by round, until every upload of it has arrived
  std::map<int, std::vector<Aggregator>> aggregators_;  // by round, with its slots (hierarchical)
  uint64_t next_message_id_ = 0;
  uint64_t total_bytes_ = 0;
  RunSummary summary_;
  HostTimes times_;
};

}  // namespace testbed
