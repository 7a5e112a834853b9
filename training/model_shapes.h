// A model as a projection sees it: its trainable parameter tensors (names and shapes, in
// registration order) and its layers' costs, with no weights. Built from a module, or, for the
// decoders too large to build here, from their configuration alone (llama.h, gpt.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/layer_cost.h"

namespace testbed {

class Model;

struct ModelShapes {
  std::vector<std::string> names;               // trainable parameters, registration order
  std::vector<std::vector<int64_t>> shapes;     // theirs
  int64_t parameters = 0;                       // every parameter, frozen ones included
  std::vector<LayerCost> layers;                // forward order, per sample (Model::layer_costs)

  int64_t trainable() const;
};

// What a built model holds.
ModelShapes shapes_of(const Model& model);

// Elements of a tensor of this shape.
int64_t elements(const std::vector<int64_t>& shape);

}  // namespace testbed
