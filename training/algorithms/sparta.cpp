// SPARTA: local steps, each followed by averaging a fraction p of the parameters
// (sparse_exchange.h); sparta_diloco adds DiLoCo's outer step every H steps.
#include <optional>

#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/common.h"
#include "training/algorithms/outer_sync.h"
#include "training/algorithms/sparse_exchange.h"

namespace testbed {

namespace {

class Sparta : public Algorithm {
 public:
  Sparta(std::string name, const AlgorithmSettings& s, const SparseExchangeOptions& sparse,
         std::optional<OuterSyncOptions> outer)
      : name_(std::move(name)), batch_(s.batch_size), sparse_(s.nodes, s.seed, s.neighbours, s.tensor_sizes, sparse) {
    if (outer) outer_.emplace(s.nodes, *outer);
    for (int64_t n : s.tensor_sizes) d_ += n;
  }
  std::string name() const override { return name_; }
  // index_transport broadcast: the values leave once node 0's mask has arrived.
  bool has_rounds() const override { return sparse_.broadcasts_mask(); }
  Round next_round(int node, int /*step*/, Replica& replica) override {
    Round round;
    sparse_.issue_after_mask(node, replica, round.comm);
    return round;
  }

  Round projected_round(int, int step, size_t round) override {
    Round out;
    if (round == 0) sparse_.project_after_mask(step, out.comm);
    return out;
  }
  StepPlan projected_step(int, int step) override {
    StepPlan plan;
    plan.loss = no_loss();
    sparse_.project(step, plan.comm);
    if (outer_) outer_->project(step, d_, plan.comm);
    return plan;
  }

  StepPlan local_step(int node, int step, Replica& replica, const Dataset& data) override {
    if (outer_) outer_->start(node, replica);
    StepPlan plan;
    plan.loss = local_sgd_step(replica, data, batch_);
    sparse_.issue(node, step, replica, plan.comm);
    if (outer_) outer_->issue(node, step, replica, plan.comm);
    return plan;
  }
  void apply(int node, int issued_step, Replica& replica, CommOp& op) override {
    if (SparseExchange::owns(op)) return sparse_.apply(node, issued_step, replica, op);
    outer_->apply(node, replica, op);
  }
  AlgorithmState state(int node) const override {
    AlgorithmState s;
    sparse_.save(node, s);
    if (outer_) outer_->save(node, s);
    return s;
  }
  void load_state(int node, const AlgorithmState& s) override {
    sparse_.load(node, s);
    if (outer_) outer_->load(node, s);
  }

 private:
  std::string name_;
  int batch_;
  int64_t d_ = 0;  // trainable parameters
  SparseExchange sparse_;
  std::optional<OuterSync> outer_;
};

}  // namespace

std::unique_ptr<Algorithm> make_sparta(const AlgorithmSettings& s) {
  return std::make_unique<Sparta>("sparta", s, std::get<SparseExchangeOptions>(s.options), std::nullopt);
}

std::unique_ptr<Algorithm> make_sparta_diloco(const AlgorithmSettings& s) {
  const auto& o = std::get<SpartaDilocoOptions>(s.options);
  return std::make_unique<Sparta>("sparta_diloco", s, o.sparse, o.outer);
}

}  // namespace testbed
