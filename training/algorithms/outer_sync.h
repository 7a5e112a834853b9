// DiLoCo's outer step, shared by diloco, streaming_diloco and sparta_diloco: every H steps a
// node's pseudo-gradient (global minus local parameters) is all-reduced, and an outer
// Nesterov SGD moves the global parameters, which the node then adopts. Streaming DiLoCo
// splits the parameters into fragments synced on a staggered schedule, may overlap a
// fragment's sync with `tau` steps of training, then mixes local and global with `alpha`.
#pragma once

#include <string>
#include <vector>

#include "training/algorithm.h"
#include "training/algorithms/outer_sync_options.h"
#include "training/replica.h"

namespace testbed {

class OuterSync {
 public:
  OuterSync(int nodes, const OuterSyncOptions& options);
  // Before a node's first step: its starting parameters are the global ones.
  void start(int node, Replica& replica);
  // The ops due after `step` (the fragments whose turn it is), appended to `comm`.
  void issue(int node, int step, Replica& replica, std::vector<CommOp>& comm) const;
  // The same ops from shapes alone (a projection): `d` trainable parameters.
  void project(int step, int64_t d, std::vector<CommOp>& comm) const;
  // True for the ops issue() makes.
  static bool owns(const CommOp& op);
  void apply(int node, Replica& replica, CommOp& op);
  void save(int node, AlgorithmState& state) const;
  void load(int node, const AlgorithmState& state);

 private:
  std::pair<int64_t, int64_t> fragment(int f, int64_t d) const;  // [begin, end)
  // The fragments whose sync is due after `step`, ascending.
  std::vector<int> due(int step) const;
  // Fragment f's op, `wire` its values (already in the wire format).
  CommOp fragment_op(int f, torch::Tensor wire) const;

  int nodes_;
  OuterSyncOptions options_;
  std::vector<torch::Tensor> global_, momentum_;  // per node: flat, like Replica::parameters()
};

}  // namespace testbed
