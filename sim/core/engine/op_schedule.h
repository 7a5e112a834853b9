// What every node computed and sent at every step, without the values: the record a resumed
// run replays to bring the network back to where the checkpoint left it (message sizes and
// compute times never depend on tensor values, docs/architecture.md, decision 5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace testbed {

struct ScheduledOp {
  int kind = 0;  // CommKind
  std::string tag;
  int64_t elements = 0;
  double bytes_per_element = 4;
  int delay = 0;
  std::vector<int> nodes;
  int after_gradient = -1;
  int before_forward = -1;
  int after_forward = -1;
  bool pipelined = false;
};

// A later round of a step's communication (Algorithm::next_round), after its extra work.
struct ScheduledRound {
  double extra_time = 0;
  std::vector<ScheduledOp> ops;
};

struct ScheduledStep {
  double compute_time = 0;  // modelled seconds (so `measured` compute replays exactly too)
  double extra_time = 0;    // of it, the algorithm's extra work (compressing)
  std::vector<ScheduledOp> ops;
  std::vector<ScheduledRound> rounds;
};

// [node][step], each node's steps in order from 0.
using OpSchedule = std::vector<std::vector<ScheduledStep>>;

// Text, one step a line; doubles in hexadecimal, so they read back to the same bits.
std::string encode_schedule(const OpSchedule& schedule);
OpSchedule decode_schedule(const std::string& text);

}  // namespace testbed
