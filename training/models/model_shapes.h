// A model as a projection sees it: its trainable parameter tensors (names and shapes, in
// registration order) and its layers' costs, with no weights. Built from a module, or, for the
// decoders too large to build here, from their configuration alone (llama.h, gpt.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/models/layer_cost.h"

namespace testbed {

class Model;

// A Linear or Conv2d layer as a second-order optimizer's messages see it (Model::layer_taps).
struct SecondOrderLayer {
  std::string name;
  int weight_tensor = 0;     // its weight's index among the trainable tensors
  int64_t d_a = 0, d_g = 0;  // its input vector's length (a bias adds one) and its output's
  int64_t positions = 1;     // a Conv2d's output positions (K-FAC's factor rows a sample); 1 for Linear
};

struct ModelShapes {
  std::vector<std::string> names;            // trainable parameters, registration order
  std::vector<std::vector<int64_t>> shapes;  // theirs
  int64_t parameters = 0;                    // every parameter, frozen ones included
  // Parameters of the module built to read these shapes: all of them, one block's worth for a
  // projection that repeats a block, 0 for shapes from a configuration (no module).
  int64_t built_parameters = 0;
  std::vector<LayerCost> layers;               // forward order, per sample (Model::layer_costs)
  std::vector<SecondOrderLayer> second_order;  // forward order (Model::layer_taps)
  // A model cut for split fine-tuning (Model::split): the first of `layers` its back half
  // runs, and the values a sample sends across; -1 and 0 when it is whole.
  int cut_layer = -1;
  int64_t cut_values_per_sample = 0;

  int64_t trainable() const;
};

// What a built model holds.
ModelShapes shapes_of(const Model& model);

// Elements of a tensor of this shape.
int64_t elements(const std::vector<int64_t>& shape);

}  // namespace testbed
