// What `testbed run` runs: the engine (every node trains every step) or the federated loop (a
// server and the clients it picks each round), behind one small interface.
#pragma once

#include <memory>

#include "netmodels/host_times.h"
#include "sim/config/scenario.h"
#include "sim/core/engine/engine.h"
#include "sim/output/recorder.h"
#include "training/data/dataset.h"

namespace testbed {

class Run {
 public:
  virtual ~Run() = default;
  virtual RunInfo run_info() const = 0;
  virtual RunSummary run(Recorder& recorder) = 0;
  virtual const HostTimes& host_times() const = 0;
};

// The scenario's run: federated for an algorithm that says so (registry.h), else the engine.
std::unique_ptr<Run> make_run(const Scenario& scenario, const Dataset& data, EngineHooks hooks);

// What produces this process's bits for the scenario (RunInfo::numerics): the kernels in
// effect (training/numerics.h) and the network simulator's version.
std::vector<std::pair<std::string, std::string>> numerics_record(const Scenario& scenario);

}  // namespace testbed
