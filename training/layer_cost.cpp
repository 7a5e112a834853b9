// Builders for the layer kinds every model shares.
#include "training/layer_cost.h"

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

}  // namespace testbed
