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
  c.gemm_k = in;
  c.gemm_k_backward = out;
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

int64_t convolution_side(int64_t side, int64_t k, int64_t stride, int64_t padding) {
  return (side + 2 * padding - k) / stride + 1;
}

LayerCost convolution_cost(const std::string& name, const Conv2dShape& v, int64_t h, int64_t w, bool trains) {
  const double out_positions = static_cast<double>(convolution_side(h, v.kh, v.stride, v.pad_h)) *
                               static_cast<double>(convolution_side(w, v.kw, v.stride, v.pad_w));
  const double per_output = static_cast<double>(v.in / v.groups * v.kh * v.kw);
  LayerCost c;
  c.name = name;
  c.flops = 2.0 * static_cast<double>(v.out) * out_positions * per_output;
  c.weights = static_cast<double>(v.out) * per_output + (v.bias ? static_cast<double>(v.out) : 0.0);
  c.tensors = v.bias ? 2 : 1;
  c.trains = trains;
  c.inputs = static_cast<double>(v.in * h * w);
  c.outputs = static_cast<double>(v.out) * out_positions;
  c.convolution = true;
  c.gemm_k = per_output;                                                    // implicit GEMM: in / groups x kh x kw
  c.gemm_k_backward = static_cast<double>(v.out / v.groups * v.kh * v.kw);  // the data gradient: out / groups x kh x kw
  return c;
}

LayerCost convolution_cost(const std::string& name, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                           int64_t groups, int64_t side, bool bias, bool trains) {
  return convolution_cost(name, Conv2dShape{in, out, k, k, stride, padding, padding, groups, bias}, side, side, trains);
}

LayerCost batch_norm_cost(const std::string& name, int64_t channels, int64_t side, bool trains) {
  const double elements = static_cast<double>(channels * side * side);
  LayerCost c = elementwise_cost(name, elements, elements);
  c.weights = 2.0 * static_cast<double>(channels);
  c.tensors = 2;
  c.trains = trains;
  return c;
}

LayerCost norm_cost(const std::string& name, double rows, double width) {
  LayerCost c = elementwise_cost(name, rows * width, rows * width);
  c.weights = 2 * width;
  c.tensors = 2;
  c.trains = true;
  return c;
}

std::vector<int> gradient_layers(const TrainingWork& work, const std::vector<std::string>& trainable_names) {
  std::vector<int> layer_of;
  for (const auto& name : trainable_names) {
    int owner = -1;
    for (size_t l = 0; l < work.layers.size(); ++l) {
      const std::string& layer = work.layers[l].name;
      if (work.layers[l].trains && owns_by_prefix(layer, name) &&
          (owner < 0 || layer.size() > work.layers[owner].name.size()))
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
  qk.gemm_k = C / heads;  // q k^T over a head's width; dq = dS k and dk = dS^T q over T
  qk.gemm_k_backward = T;
  c.push_back(qk);
  c.push_back(elementwise_cost(prefix + ".scale", scores, scores, 1, false));
  if (causal) c.push_back(elementwise_cost(prefix + ".mask", scores, scores, 1, false));
  c.push_back(elementwise_cost(prefix + ".softmax", scores, scores));
  LayerCost av = elementwise_cost(prefix + ".av", scores + T * C, T * C);
  av.flops = 2 * T * T * C;
  av.grad_operands = 2;
  av.gemm_k = T;  // att v over T; d att = dY v^T over a head's width (dv over T)
  av.gemm_k_backward = C / heads;
  c.push_back(av);
  c.push_back(elementwise_cost(prefix + ".merge_heads", T * C, T * C, 1, false));  // transpose().contiguous()
}

std::vector<LayerCost> fused_attention(std::vector<LayerCost> layers) {
  auto ends_with = [](const std::string& name, const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  std::vector<LayerCost> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!ends_with(layers[i].name, ".qk")) {
      out.push_back(std::move(layers[i]));
      continue;
    }
    const LayerCost& qk = layers[i];
    const std::string prefix = qk.name.substr(0, qk.name.size() - 3);
    size_t j = i + 1;
    bool causal = false;
    for (; j < layers.size() && layers[j].name != prefix + ".av"; ++j) {
      const std::string& n = layers[j].name;
      if (n != prefix + ".scale" && n != prefix + ".mask" && n != prefix + ".softmax" && n != prefix + ".att_dropout")
        throw std::logic_error("fused_attention: '" + n + "' between " + qk.name + " and its .av");
      causal = causal || n == prefix + ".mask";
    }
    if (j == layers.size()) throw std::logic_error("fused_attention: " + qk.name + " has no " + prefix + ".av");
    const LayerCost& av = layers[j];
    const double TC = av.outputs, T = qk.flops / (2 * TC), heads_T = qk.outputs / T;  // qk: 2 T^2 C, h T^2 scores
    const double share = causal ? 0.5 : 1.0;
    LayerCost flash = elementwise_cost(prefix + ".flash", 3 * TC, TC + heads_T);
    flash.flops = share * (qk.flops + av.flops);
    flash.recompute_flops = share * qk.flops;
    flash.grad_operands = 2;
    flash.gemm_k = flash.gemm_k_backward = qk.gemm_k;  // its tiles' q k^T over a head's width
    out.push_back(flash);
    i = j;
  }
  return out;
}

}  // namespace testbed
