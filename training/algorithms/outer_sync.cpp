// The outer step: Nesterov SGD on the mean pseudo-gradient, fragment by fragment.
#include "training/algorithms/outer_sync.h"

#include <stdexcept>

#include <torch/torch.h>

#include "training/algorithms/common.h"

namespace testbed {
namespace {
const std::string kTagPrefix = "pseudo_gradient";
}

OuterSync::OuterSync(int nodes, const OuterSyncOptions& options)
    : nodes_(nodes), options_(options), global_(nodes), momentum_(nodes) {
  if (options.H < 1) throw std::invalid_argument("H must be >= 1");
  if (options.fragments < 1) throw std::invalid_argument("fragments must be >= 1");
  if (options.tau < 0) throw std::invalid_argument("tau must be >= 0");
}

void OuterSync::start(int node, Replica& replica) {
  if (global_[node].defined()) return;
  global_[node] = replica.parameters().clone();
  momentum_[node] = torch::zeros_like(global_[node]);
}

std::pair<int64_t, int64_t> OuterSync::fragment(int f, int64_t d) const {
  return {f * d / options_.fragments, (f + 1) * d / options_.fragments};
}

std::vector<int> OuterSync::due(int step) const {
  const int H = options_.H, P = options_.fragments;
  std::vector<int> fragments;
  for (int f = 0; f < P; ++f) {
    // Fragment f's syncs are staggered by f H / P steps, so the P fragments share the
    // network evenly instead of all landing every H steps.
    const int offset = f * H / P;
    if ((step + 1 + offset) % H == 0) fragments.push_back(f);
  }
  return fragments;
}

CommOp OuterSync::fragment_op(int f, torch::Tensor wire) const {
  const int P = options_.fragments;
  auto op =
      make_op(CommKind::AllReduce, kTagPrefix + (P > 1 ? "/" + std::to_string(f) : ""), std::move(wire), options_.tau);
  op.bytes_per_element = wire_bytes(options_.dtype);
  return op;
}

void OuterSync::issue(int node, int step, Replica& replica, std::vector<CommOp>& comm) const {
  const int64_t d = global_[node].numel();
  for (int f : due(step)) {
    auto [begin, end] = fragment(f, d);
    torch::NoGradGuard no_grad;
    auto delta = global_[node].slice(0, begin, end) - replica.parameters().slice(0, begin, end);
    comm.push_back(fragment_op(f, to_wire(delta, options_.dtype)));
  }
}

void OuterSync::project(int step, int64_t d, std::vector<CommOp>& comm) const {
  for (int f : due(step)) {
    auto [begin, end] = fragment(f, d);
    comm.push_back(fragment_op(f, shape_only(end - begin)));
  }
}

bool OuterSync::owns(const CommOp& op) { return op.tag.rfind(kTagPrefix, 0) == 0; }

void OuterSync::apply(int node, Replica& replica, CommOp& op) {
  torch::NoGradGuard no_grad;
  const int f = op.tag.size() > kTagPrefix.size() ? std::stoi(op.tag.substr(kTagPrefix.size() + 1)) : 0;
  auto [begin, end] = fragment(f, global_[node].numel());
  auto global = global_[node].slice(0, begin, end);
  auto momentum = momentum_[node].slice(0, begin, end);
  auto delta = op.buffer.div_(nodes_);  // the mean pseudo-gradient
  // PyTorch's SGD with Nesterov: buf = mu buf + g; step = g + mu buf.
  momentum.mul_(options_.momentum).add_(delta);
  auto step = options_.momentum > 0 ? delta + options_.momentum * momentum : delta;
  global.sub_(step, options_.lr);
  auto local = replica.parameters().slice(0, begin, end);
  if (options_.tau > 0) {
    // The node trained on while the fragment was in flight: keep part of that progress.
    local.mul_(options_.alpha).add_(global, 1.0 - options_.alpha);
  } else {
    local.copy_(global);
  }
}

void OuterSync::save(int node, AlgorithmState& state) const {
  if (!global_[node].defined()) return;  // before the node's first step
  state.tensors["outer/global"] = global_[node];
  state.tensors["outer/momentum"] = momentum_[node];
}

void OuterSync::load(int node, const AlgorithmState& state) {
  auto global = state.tensors.find("outer/global");
  global_[node] = global == state.tensors.end() ? torch::Tensor() : global->second.clone();
  momentum_[node] = global == state.tensors.end() ? torch::Tensor() : state.tensors.at("outer/momentum").clone();
}

}  // namespace testbed
