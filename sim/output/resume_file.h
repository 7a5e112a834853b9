// Checkpoint files beside a run's output (OUT.h5.resume/): written whole or not at all, checked
// on reading, and refused when they belong to another scenario.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/config/scenario.h"
#include "sim/output/recorder.h"

namespace testbed {

struct Checkpoint {
  int step = 0;             // every node had finished this many steps
  std::string fingerprint;  // of the scenario that made it (scenario_fingerprint)
  RecorderMark mark;        // the rows the output file held then
  std::string payload;      // the engine's state (a LibTorch archive), opaque here
};

// Where the checkpoints of the run writing `output_path` live: `output_path` + ".resume".
std::string checkpoint_dir(const std::string& output_path);

// What must match for a checkpoint to continue a run: the scenario as resolved, except where
// its output goes and how often it checkpoints (neither changes a result).
std::string scenario_fingerprint(const Scenario& scenario);

// Writes `checkpoint` as DIR/step-NNNNNNNN.ckpt: to a temporary file, synced, then renamed, so
// a kill at any moment leaves either the previous checkpoint or this one; older ones are then
// removed. `kill_halfway` (a test's fault injection) sends the process SIGKILL mid-write.
void write_checkpoint(const std::string& dir, const Checkpoint& checkpoint, bool kill_halfway = false);

// The newest checkpoint in `dir`, or nothing when there is none. A truncated or corrupt file
// throws InputError naming it (it is never skipped for an older one: that would silently
// repeat work the user may think was kept).
std::optional<Checkpoint> latest_checkpoint(const std::string& dir);

// Removes `dir` and the checkpoints in it (a fresh start, or a completed run).
void remove_checkpoints(const std::string& dir);

}  // namespace testbed
