// Reads back what a run wrote to HDF5: its status and /summary numbers, for sweeps and reports.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/output/recorder.h"

namespace testbed {

struct RunFile {
  std::string status;  // running | completed | diverged | failed (a killed run stays "running")
  bool is(RunStatus s) const { return status == status_name(s); }
  std::string error;
  std::string scenario;     // the resolved scenario's YAML
  bool projection = false;  // workload.train false: no loss, no accuracy
  double projected_time_s = NAN, final_eval_loss = NAN, final_accuracy = NAN, final_perplexity = NAN;
  double host_time_s = NAN, total_bytes = NAN, steps_completed = NAN;
  // Sum over steps of the mean over nodes of /train/compute_time; NaN without that dataset.
  double compute_time_s = NAN;
  // The last step in /train/step (what a cut run reached); NaN without rows.
  double last_step = NAN;
  // A federated run's /rounds/accuracy and /rounds/eval_loss, a value per round (NaN where the
  // round had no evaluation); empty for other runs.
  std::vector<double> round_accuracy, round_eval_loss;
  // /numerics as written (what produced the bits); empty for files older than it.
  std::vector<std::pair<std::string, std::string>> numerics;
};

// nullopt when there is no file or HDF5 cannot read it (such as one cut mid-write).
std::optional<RunFile> read_run_file(const std::string& path);

}  // namespace testbed
