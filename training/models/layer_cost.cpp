// Builders for the layer kinds every model shares, and which layer owns each trainable tensor.
#include "training/models/layer_cost.h"

#include <stdexcept>
#include <string>

namespace testbed {

LayerCost linear_cost(const std::string& name, double in, double out, double rows, bool bias, bool trains) {
  LayerCost c;
  c.name = name;
  c.flops = 2.0 * in * out * rows;
  c.weights = in * out + (bias ? out : 0.0);
  c.tensors = bias ? 2 : 1;
  c.trains = trains;
  c.inputs = in * rows;
  c.outputs = out * rows;
  c.kernels = 1;  // one addmm; dX = dY W needs no saved input
  return c;
}

LayerCost elementwise_cost(const std::string& name, double in, double out, int kernels, bool grad_reads_input) {
  LayerCost c;
  c.name = name;
  c.inputs = in;
  c.outputs = out;
  c.kernels = kernels;
  c.grad_reads_input = grad_reads_input;
  return c;
}

std::vector<int> gradient_layers(const TrainingWork& work, const std::vector<std::string>& trainable_names) {
  std::vector<int> layer_of;
  for (const auto& name : trainable_names) {
    int owner = -1;
    for (size_t l = 0; l < work.layers.size(); ++l) {
      const std::string& layer = work.layers[l].name;
      const bool owns = name == layer || (name.size() > layer.size() && name.compare(0, layer.size(), layer) == 0 &&
                                          name[layer.size()] == '.');
      if (work.layers[l].trains && owns && (owner < 0 || layer.size() > work.layers[owner].name.size()))
        owner = static_cast<int>(l);
    }
    if (owner < 0) throw std::logic_error("no training layer of the model's costs owns parameter '" + name + "'");
    layer_of.push_back(owner);
  }
  return layer_of;
}

void append_attention_costs(std::vector<LayerCost>& c, const std::string& prefix, double T, double C, double heads,
                            bool causal) {
  const double scores = heads * T * T;
  LayerCost qk = elementwise_cost(prefix + ".qk", 2 * T * C, scores);
  qk.flops = 2 * T * T * C;  // heads x T x T x head size multiply-adds
  qk.grad_operands = 2;
  c.push_back(qk);
  c.push_back(elementwise_cost(prefix + ".scale", scores, scores, 1, false));
  if (causal) c.push_back(elementwise_cost(prefix + ".mask", scores, scores, 1, false));
  c.push_back(elementwise_cost(prefix + ".softmax", scores, scores));
  LayerCost av = elementwise_cost(prefix + ".av", scores + T * C, T * C);
  av.flops = 2 * T * T * C;
  av.grad_operands = 2;
  c.push_back(av);
  c.push_back(elementwise_cost(prefix + ".merge_heads", T * C, T * C, 1, false));  // transpose().contiguous()
}

}  // namespace testbed
