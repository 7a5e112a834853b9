// Measured per-layer times of one training step (compute.model: profile): the CSV that
// `python3 -m analysis.profile_layers` writes on the user's GPU, and which of a model's layers
// each of its rows times.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "training/models/layer_cost.h"

namespace testbed {

// One row: a module's forward and backward seconds in a step (its own name, or a dotted prefix
// of the layers it holds: "layer1.0" times every layer of that block). The row "*" holds what
// the step spent outside the named modules (functional ops, the loss).
struct ProfileRow {
  std::string layer;
  double forward_s = 0, backward_s = 0;
};

struct LayerProfile {
  std::string path;
  std::vector<ProfileRow> rows;       // file order, "*" among them if given
  std::optional<double> optimizer_s;  // the "optimizer" row: the update's seconds
};

// Reads `path`: lines starting with '#' are comments (the script writes the model, batch,
// device and versions there), then the header `layer,forward_ms,backward_ms`, then a row a
// module with finite non-negative milliseconds, each name once, and optionally
// `optimizer,<ms>,0`. Throws std::invalid_argument "path:line: why".
LayerProfile read_layer_profile(const std::string& path);

// For each of `layers` (forward order), the index in profile.rows of the row that times it: the
// row named as the layer or as the longest dotted prefix of its name; else the "*" row. Throws
// std::invalid_argument naming the rows that time no layer, or the layers no row times (no "*").
// A "*" row that takes no layer is spread over all of them (index -1 marks none here).
std::vector<int> profile_owners(const LayerProfile& profile, const std::vector<LayerCost>& layers);

}  // namespace testbed
