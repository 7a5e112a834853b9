// DiLoCo (arXiv 2311.08105) and Streaming DiLoCo (arXiv 2501.18512): H steps of the inner
// optimizer (never synced), then the outer step of outer_sync.h. Streaming DiLoCo syncs
// fragments on a staggered schedule, quantises the outer gradients and overlaps them.
#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/outer_sync.h"

namespace testbed {
namespace {

class Diloco : public Algorithm {
 public:
  Diloco(std::string name, const AlgorithmSettings& s, const OuterSyncOptions& options)
      : name_(std::move(name)), batch_(s.batch_size), outer_(s.nodes, options) {
    for (int64_t n : s.tensor_sizes) d_ += n;
  }
  std::string name() const override { return name_; }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    outer_.start(node, replica);
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    outer_.issue(node, step, replica, plan.comm);
    return plan;
  }
  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    outer_.project(step, d_, plan.comm);
    return plan;
  }
  void apply(int node, int, Replica& replica, CommOp& op) override { outer_.apply(node, replica, op); }
  AlgorithmState state(int node) const override {
    AlgorithmState s;
    outer_.save(node, s);
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override { outer_.load(node, s); }

 private:
  std::string name_;
  int batch_;
  int64_t d_ = 0;  // trainable parameters
  OuterSync outer_;
};

}  // namespace

std::unique_ptr<Algorithm> make_diloco(const AlgorithmSettings& s) {
  return std::make_unique<Diloco>("diloco", s, std::get<OuterSyncOptions>(s.options));
}

std::unique_ptr<Algorithm> make_streaming_diloco(const AlgorithmSettings& s) {
  return std::make_unique<Diloco>("streaming_diloco", s, std::get<StreamingOptions>(s.options).outer);
}

}  // namespace testbed
