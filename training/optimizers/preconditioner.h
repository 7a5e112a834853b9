// A second-order preconditioner: it reads each Linear and Conv2d layer's inputs and output
// gradients during a training pass and rewrites the gradients before the first-order optimizer
// (SGD) applies them, as the K-FAC family's reference code runs beside torch.optim.SGD.
#pragma once

#include <map>
#include <string>

#include <torch/types.h>

namespace testbed {

class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  // After a training pass's backward: fold the pass's layer statistics into the running ones.
  virtual void observe() = 0;
  // Before the optimizer step, on the gradients it will apply; `lr` is the step's learning rate.
  virtual void precondition(double lr) = 0;
  // Everything later steps read (running statistics, counters), by name, for checkpoints.
  virtual std::map<std::string, torch::Tensor> state() const = 0;
  virtual void load_state(const std::map<std::string, torch::Tensor>& state) = 0;
};

}  // namespace testbed
