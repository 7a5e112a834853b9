// What one layer of a model costs per training sample, as the roofline compute model reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/optimizers/optimizer_kind.h"

namespace testbed {

// One layer's work, described by the model that owns it (element counts, not bytes, so the
// compute model can apply the training dtype). Per-sample quantities scale with the batch;
// weights are read once per batch. Plain data: no LibTorch, so sim/ can pass it on freely.
struct LayerCost {
  std::string name;     // the module path of its parameters, as registered ("blocks.0.attn.qkv")
  double flops = 0;     // forward FLOPs per sample (2 per multiply-add; elementwise ops count 0)
  double weights = 0;   // parameter elements: read by forward and input-gradient, written by weight-gradient
  int tensors = 0;      // parameter tensors (weight, bias, ...): one weight-gradient and one optimizer kernel each
  bool trains = false;  // weights receive gradients (false when frozen, e.g. under an adapter)
  // The weights are another layer's (a head tied to the token embedding): read and given a
  // gradient here, but held and updated by their owner (counted once in the update).
  bool shared_weights = false;
  double inputs = 0;              // activation elements read per sample (all operands)
  double outputs = 0;             // activation elements written per sample
  int kernels = 1;                // forward kernel launches (the input-gradient pass launches as many per operand)
  int grad_operands = 1;          // activation operands needing a gradient, each costing the forward FLOPs
                                  // (2 for a product of two activations, such as q k^T)
  bool grad_reads_input = false;  // the input-gradient pass rereads saved activations (ReLU, softmax,
                                  // norms, pooling, activation x activation products)
  double recompute_flops = 0;     // per sample, FLOPs the input-gradient pass redoes (FlashAttention's scores)
  bool recomputed = false;        // its forward runs again before its backward (activation checkpointing)
  bool convolution = false;       // its FLOPs run as a convolution (cuDNN), not a GEMM: another efficiency
  // The inner dimension (a GEMM's K) of its forward product and of its input-gradient product;
  // 0: none known. A product with a short K spends more of its time filling and draining each
  // tile (sim/core/compute/compute_model.h, Roof::tile_depth). Weight gradients run K = the
  // batch's rows, long enough to ignore.
  double gemm_k = 0, gemm_k_backward = 0;
};

// One training step's work, as the roofline compute model needs it: the model's layers
// (forward order, per sample), the batch and the optimizer (sim/config/workload.h builds it).
struct TrainingWork {
  std::vector<LayerCost> layers;
  int batch = 1;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  bool momentum = false;     // sgd keeps a momentum buffer
  int optimizer_shards = 1;  // GPUs the optimizer's state is sharded over (ZeRO): each updates its slice
};

// Work a step does besides the model's passes (an algorithm compressing what it sends: top-k,
// transforms, matmuls), counted as a pass is: FLOPs, bytes moved, kernels launched.
struct ExtraWork {
  double flops = 0, bytes = 0;
  int64_t kernels = 0;
  ExtraWork& operator+=(const ExtraWork& o) {
    flops += o.flops, bytes += o.bytes, kernels += o.kernels;
    return *this;
  }
};

// Whether the layer named `layer` holds what is named `name`: the same name, or `layer` a dotted
// prefix of it ("fc1" holds "fc1.weight" and "fc1.lora_b", not "fc10.weight").
inline bool owns_by_prefix(const std::string& layer, const std::string& name) {
  return name == layer ||
         (name.size() > layer.size() && name.compare(0, layer.size(), layer) == 0 && name[layer.size()] == '.');
}

// For each trainable parameter, by its registered name ("fc1.weight", "fc1.lora_b"), the index
// in work.layers of the layer whose backward pass produces its gradient: the training layer
// with the longest name that is the parameter's own or a dotted prefix of it. Throws
// std::logic_error for a parameter no training layer owns.
std::vector<int> gradient_layers(const TrainingWork& work, const std::vector<std::string>& trainable_names);

// Builders for the common kinds, so every model describes them the same way.
// y = x W^T + b over `rows` rows per sample (one addmm).
LayerCost linear_cost(const std::string& name, double in, double out, double rows, bool bias, bool trains);
// An elementwise (or pooling / normalising) op reading `in` and writing `out` elements per sample.
LayerCost elementwise_cost(const std::string& name, double in, double out, int kernels = 1,
                           bool grad_reads_input = true);
// A convolution's cost: `in` channels of side x side to `out` channels with a k x k kernel,
// `stride`, `padding` and `groups` (each output element a dot product over in / groups x k x k
// inputs). Output side: floor((side + 2 padding - k) / stride) + 1.
LayerCost convolution_cost(const std::string& name, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                           int64_t groups, int64_t side, bool bias, bool trains);
int64_t convolution_side(int64_t side, int64_t k, int64_t stride, int64_t padding);

// Batch normalisation of `channels` x side x side: elementwise, with a scale and a shift a channel.
LayerCost batch_norm_cost(const std::string& name, int64_t channels, int64_t side, bool trains);
// A convolution with a kh x kw kernel over an h x w input, padded by pad_h and pad_w (Inception's
// 1 x 7 and 7 x 1 factorisations); the square form above is this with kh = kw, h = w.
struct Conv2dShape {
  int64_t in = 1, out = 1, kh = 1, kw = 1, stride = 1, pad_h = 0, pad_w = 0, groups = 1;
  bool bias = false;
};
LayerCost convolution_cost(const std::string& name, const Conv2dShape& conv, int64_t h, int64_t w, bool trains);

// A LayerNorm over `rows` rows of `width` (its scale and shift trainable).
LayerCost norm_cost(const std::string& name, double rows, double width);

// Attention between the projections, over T positions of width C in `heads` heads, as
// `prefix.qk` ... `prefix.merge_heads`: q k^T and att v (products of two activations, 2 T^2 C
// FLOPs each), the scale, the causal mask when `causal`, the softmax, the heads merged.
void append_attention_costs(std::vector<LayerCost>& costs, const std::string& prefix, double T, double C, double heads,
                            bool causal);

// The same layers with each attention (`prefix.qk` through `prefix.av`, as both the builder above
// and the GPT write them) as FlashAttention runs it (Dao et al.; FlashAttention-2's work
// partition): one kernel `prefix.flash` reading q, k and v and writing the output and a
// log-sum-exp a row and head, with no T x T tensor in memory; q k^T and att v's FLOPs (half of
// them when causal, whose masked blocks it skips), and in backward its five products, two per
// operand as any product of two activations plus the scores recomputed.
std::vector<LayerCost> fused_attention(std::vector<LayerCost> layers);

}  // namespace testbed
