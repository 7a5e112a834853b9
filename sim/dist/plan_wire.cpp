// Plans as float64 vectors (every field is an integer below 2^53, a double or a character).
#include "sim/dist/plan_wire.h"

#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

torch::Tensor encode_plan(const PlanOutline& plan) {
  std::vector<double> v{plan.loss, plan.compute_time, plan.extra_time, static_cast<double>(plan.comm.size())};
  for (const auto& op : plan.comm) {
    v.insert(v.end(), {static_cast<double>(op.kind), static_cast<double>(op.buffer.numel()), op.bytes_per_element,
                       static_cast<double>(op.delay), static_cast<double>(op.after_gradient),
                       static_cast<double>(op.before_forward), static_cast<double>(op.after_forward),
                       op.pipelined ? 1.0 : 0.0, static_cast<double>(op.nodes.size())});
    for (int n : op.nodes) v.push_back(n);
    v.push_back(static_cast<double>(op.tag.size()));
    for (char c : op.tag) v.push_back(static_cast<unsigned char>(c));
  }
  return torch::tensor(v, torch::kFloat64);
}

PlanOutline decode_plan(const torch::Tensor& wire) {
  const auto w = wire.contiguous();
  const double* v = w.data_ptr<double>();
  const int64_t size = w.numel();
  int64_t i = 0;
  auto next = [&]() {
    if (i >= size) throw std::runtime_error("a peer's plan ended early (" + std::to_string(size) + " values)");
    return v[i++];
  };
  auto count = [&]() { return static_cast<int64_t>(next()); };
  PlanOutline plan;
  plan.loss = next();
  plan.compute_time = next();
  plan.extra_time = next();
  const int64_t ops = count();
  for (int64_t k = 0; k < ops; ++k) {
    CommOp op;
    op.kind = static_cast<CommKind>(count());
    const int64_t elements = count();
    op.bytes_per_element = next();
    op.delay = static_cast<int>(count());
    op.after_gradient = static_cast<int>(count());
    op.before_forward = static_cast<int>(count());
    op.after_forward = static_cast<int>(count());
    op.pipelined = count() != 0;
    const int64_t nodes = count();
    for (int64_t n = 0; n < nodes; ++n) op.nodes.push_back(static_cast<int>(count()));
    const int64_t chars = count();
    for (int64_t c = 0; c < chars; ++c) op.tag.push_back(static_cast<char>(count()));
    // One float, seen `elements` times: the size without the memory.
    op.buffer = torch::zeros({1}, torch::kFloat32).expand({elements});
    plan.comm.push_back(std::move(op));
  }
  if (i != size) throw std::runtime_error("a peer's plan has " + std::to_string(size - i) + " values too many");
  return plan;
}

}  // namespace testbed
