// Where stateful federated clients keep their optimizer between the rounds they are picked for
// (algorithm.client_state): serialised in memory, or a file per client beside the output.
#pragma once

#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "training/algorithms/fedavg_options.h"

namespace testbed {

class ClientStateStore {
 public:
  // kind None keeps nothing; Disk writes under `directory` (made now, removed with the store).
  ClientStateStore(ClientState kind, int clients, std::string directory);
  ~ClientStateStore();
  ClientStateStore(const ClientStateStore&) = delete;
  ClientStateStore& operator=(const ClientStateStore&) = delete;

  // The client's optimizer state from its last round into `optimizer` (a fresh one the first
  // time: nothing is loaded).
  void restore(int client, torch::optim::Optimizer& optimizer) const;
  // The client's optimizer state after this round.
  void keep(int client, torch::optim::Optimizer& optimizer);

 private:
  std::string file(int client) const;

  ClientState kind_;
  std::vector<std::string> saved_;  // Memory: each client's archive
  std::string directory_;           // Disk
};

}  // namespace testbed
