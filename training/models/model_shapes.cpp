// Shapes read off a built module.
#include "training/models/model_shapes.h"

#include <stdexcept>

#include "training/models/models.h"
#include "training/replica.h"

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
  m.built_parameters = m.parameters;
  m.layers = model.layer_costs();
  if (const CutValues* cut = const_cast<Model&>(model).cut()) {
    for (size_t l = 0; l < m.layers.size(); ++l)
      if (m.layers[l].name == cut->back_first) m.cut_layer = static_cast<int>(l);
    if (m.cut_layer < 0) throw std::logic_error("the cut's back half begins at '" + cut->back_first + "', not a layer");
    m.cut_values_per_sample = cut->values_per_sample;
  }
  // layer_taps() hands out the taps to write into; here they are only read.
  const auto trainable = trainable_parameters(model);
  for (const LayerTap* tap : const_cast<Model&>(model).layer_taps()) {
    SecondOrderLayer l{tap->name, -1, tap->d_a(), tap->d_g(), 1};
    if (tap->conv()) {  // its output positions from its cost's outputs (d_g x positions a sample)
      for (const auto& cost : m.layers)
        if (cost.name == tap->name) l.positions = static_cast<int64_t>(cost.outputs) / tap->d_g();
    }
    for (size_t i = 0; i < trainable.size(); ++i)
      if (trainable[i].unsafeGetTensorImpl() == tap->weight.unsafeGetTensorImpl())
        l.weight_tensor = static_cast<int>(i);
    if (l.weight_tensor < 0) continue;  // a frozen layer: nothing to precondition
    m.second_order.push_back(l);
  }
  return m;
}

}  // namespace testbed
