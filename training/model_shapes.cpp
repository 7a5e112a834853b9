// Shapes read off a built module.
#include "training/model_shapes.h"

#include "training/models.h"

namespace testbed {

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t side : shape) n *= side;
  return n;
}

int64_t ModelShapes::trainable() const {
  int64_t n = 0;
  for (const auto& shape : shapes) n += elements(shape);
  return n;
}

ModelShapes shapes_of(const Model& model) {
  ModelShapes m;
  for (const auto& p : model.named_parameters()) {
    m.parameters += p.value().numel();
    if (!p.value().requires_grad()) continue;
    m.names.push_back(p.key());
    m.shapes.push_back(p.value().sizes().vec());
  }
  m.layers = model.layer_costs();
  return m;
}

}  // namespace testbed
