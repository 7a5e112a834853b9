// The scenario's run loop.
#include "sim/core/run.h"

#include "netmodels/ns3/ns3_network.h"
#include "sim/core/federated/federated_run.h"
#include "training/algorithms/registry.h"
#include "training/numerics.h"

namespace testbed {
namespace {

class EngineRun : public Run {
 public:
  EngineRun(const Scenario& scenario, const Dataset& data, EngineHooks hooks)
      : engine_(scenario, data, std::move(hooks)) {}
  RunInfo run_info() const override { return engine_.run_info(); }
  RunSummary run(Recorder& recorder) override { return engine_.run(recorder); }
  const HostTimes& host_times() const override { return engine_.host_times(); }

 private:
  Engine engine_;
};

}  // namespace

std::unique_ptr<Run> make_run(const Scenario& scenario, const Dataset& data, EngineHooks hooks) {
  const AlgorithmEntry* algorithm = find_algorithm(scenario.algorithm.name);
  if (algorithm && algorithm->federated) return std::make_unique<FederatedRun>(scenario, data, std::move(hooks));
  return std::make_unique<EngineRun>(scenario, data, std::move(hooks));
}

std::vector<std::pair<std::string, std::string>> numerics_record(const Scenario& scenario) {
  auto record = numeric_environment(scenario.numerics);
  record.emplace_back("ns3_version", ns3_version());
  return record;
}

}  // namespace testbed
