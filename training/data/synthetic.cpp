// Teacher-student data: a random two-layer tanh network defines the targets.
#include "training/data/synthetic.h"

#include <torch/torch.h>

namespace testbed {

Dataset make_teacher_dataset(const SyntheticOptions& o, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  auto gaussian = [&](std::vector<int64_t> shape) { return at::normal(0.0, 1.0, shape, generator); };
  // Scaled so the hidden pre-activations have unit variance and tanh stays informative.
  auto w1 = gaussian({o.inputs, o.hidden}) / std::sqrt(static_cast<double>(o.inputs));
  auto w2 = gaussian({o.hidden, o.outputs}) / std::sqrt(static_cast<double>(o.hidden));
  auto teacher = [&](const torch::Tensor& x) { return torch::tanh(x.matmul(w1)).matmul(w2); };

  Dataset d;
  d.task = o.regression ? Task::Regression : Task::Classification;
  d.outputs = o.outputs;
  d.train_inputs = gaussian({o.train_samples, o.inputs});
  d.test_inputs = gaussian({o.test_samples, o.inputs});
  auto train_values = teacher(d.train_inputs);
  auto test_values = teacher(d.test_inputs);
  if (o.regression) {
    d.train_targets = train_values;
    d.test_targets = test_values;
    // Groups for non-IID splits: the output with the largest value.
    d.train_groups = train_values.argmax(1);
  } else {
    d.train_targets = train_values.argmax(1);
    d.test_targets = test_values.argmax(1);
    d.train_groups = d.train_targets;
  }
  d.num_groups = o.outputs;
  return d;
}

Dataset make_imagenet_stand_in(int64_t train_samples, int64_t test_samples, int64_t side, uint64_t seed) {
  auto generator = at::detail::createCPUGenerator(seed);
  Dataset d;
  d.task = Task::Classification;
  d.outputs = 1000;
  d.train_inputs = at::normal(0.0, 1.0, {train_samples, 3, side, side}, generator);
  d.test_inputs = at::normal(0.0, 1.0, {test_samples, 3, side, side}, generator);
  d.train_targets = at::randint(0, 1000, {train_samples}, generator);
  d.test_targets = at::randint(0, 1000, {test_samples}, generator);
  d.train_groups = d.train_targets;
  d.num_groups = 1000;
  return d;
}

}  // namespace testbed
