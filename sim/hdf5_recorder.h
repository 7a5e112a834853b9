// Writes a run to HDF5 in the layout README documents, flushed at every eval.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/recorder.h"

namespace testbed {

struct RunInfo {
  std::string scenario_yaml;  // the resolved scenario
  int nodes = 0;
  int64_t model_parameters = 0;
  int64_t trainable_parameters = 0;  // what the replicas train and exchange
  std::string device;
  bool deterministic = true;             // false when compute time is measured on the host
  std::vector<double> node_speeds;       // relative compute speed of each node
  std::vector<std::string> test_variants;  // names of the extra test sets evaluated
};

class Hdf5Recorder : public Recorder {
 public:
  // Creates (or truncates) `path` and its parent folder; status is "running" until finish().
  Hdf5Recorder(const std::string& path, const RunInfo& info);
  ~Hdf5Recorder() override;
  void train(const TrainRow& row) override;
  void eval(const EvalRow& row) override;
  void message(const MessageRecord& record) override;
  void finish(const RunSummary& summary) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testbed
