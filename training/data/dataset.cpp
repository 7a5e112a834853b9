// Losses by task.
#include "training/data/dataset.h"

#include <torch/torch.h>

namespace testbed {

torch::Tensor task_loss(Task task, const torch::Tensor& outputs, const torch::Tensor& targets) {
  if (task == Task::Regression) return torch::mse_loss(outputs, targets);
  return torch::nn::functional::cross_entropy(outputs.flatten(0, -2), targets.flatten());
}

}  // namespace testbed
