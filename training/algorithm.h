// The interface every training algorithm implements (DESIGN decision 4): per node and
// step, local compute, then the communication it needs, then how to apply the result.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "training/dataset.h"
#include "training/replica.h"

namespace testbed {

enum class CommKind {
  AllReduce,  // sum `buffer` across all nodes, in place
};

// One communication a node asks for. Its size is fixed by `buffer`'s shape,
// never by its values (DESIGN decision 5).
struct CommOp {
  CommKind kind = CommKind::AllReduce;
  torch::Tensor buffer;  // 1-D float32
  std::string tag;       // recorded as the message kind, e.g. "gradient"
};

struct StepPlan {
  double loss = 0;           // the node's training loss this step
  std::vector<CommOp> comm;  // empty: the step ends after local compute
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // Runs the node's local computation for `step` and says what to communicate.
  virtual StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) = 0;
  // All of the step's communication has completed; `comm` holds the results.
  virtual void apply(int node, int step, Replica& replica, std::vector<CommOp>& comm) = 0;
};

}  // namespace testbed
