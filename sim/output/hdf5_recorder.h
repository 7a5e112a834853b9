// Writes a run to HDF5 in the layout README documents, flushed at every eval.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/output/recorder.h"

namespace testbed {

class Hdf5Recorder : public Recorder {
 public:
  // Creates (or truncates) `path` and its parent folder; status is "running" until finish().
  Hdf5Recorder(const std::string& path, const RunInfo& info);
  // Reopens `path` to continue a run: rows after `keep` are dropped, status is "running" again.
  Hdf5Recorder(const std::string& path, const RunInfo& info, const RecorderMark& keep);
  ~Hdf5Recorder() override;
  void train(const TrainRow& row) override;
  void eval(const EvalRow& row) override;
  void message(const MessageRecord& record) override;
  void participation(const ParticipationRow& row) override;
  void round(const RoundRow& row) override;
  void finish(const RunSummary& summary) override;
  RecorderMark mark() override;
  // The run was ended from below (an ns-3 fatal error): what is held back is written, status
  // becomes "failed" with `error`, and the file is flushed. Nothing else is written after.
  void fail(const std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testbed
