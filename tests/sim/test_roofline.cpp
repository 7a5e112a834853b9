// The flops compute model as a roofline: the models' layer costs against hand-counted FLOPs
// and bytes, and the roofline's rules (max per pass, launches, frozen layers, dtype).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sim/core/compute/compute_model.h"
#include "training/models/bert.h"
#include "training/models/gpt.h"
#include "training/models/layer_cost.h"
#include "training/models/models.h"
#include "training/replica.h"

namespace testbed {
namespace {

// Counting roof: 1 FLOP/s, 1 B/s, no launches; fp32 elements.
const Roof kCount{1, 1, 0, 4};

StepCost cost_of(const Model& model, int batch, OptimizerKind optimizer = OptimizerKind::AdamW) {
  return roofline(TrainingWork{model.layer_costs(), batch, optimizer, false}, kCount);
}

double total_weights(const Model& model) {
  double w = 0;
  for (const auto& l : model.layer_costs()) w += l.weights;
  return w;
}

// --- the models' costs, counted by hand -------------------------------------------------

// make_mlp(784, 128, 10): 784 -> 256 -> 128 -> 10 with ReLUs, then the loss; fp32, AdamW.
TEST(Roofline, MlpFlopsBytesAndKernelsMatchHandCount) {
  auto model = make_mlp(784, 128, 10);
  const double B = 64;
  const double f1 = 2.0 * 784 * 256, f2 = 2.0 * 256 * 128, f3 = 2.0 * 128 * 10;
  const double w1 = 784 * 256 + 256, w2 = 256 * 128 + 128, w3 = 128 * 10 + 10;
  EXPECT_DOUBLE_EQ(model->forward_flops_per_sample(), f1 + f2 + f3);
  EXPECT_DOUBLE_EQ(total_weights(*model), 235146);

  auto c = cost_of(*model, 64);
  // forward + weight gradients of all three + input gradients of fc2 and fc3 (fc1's input is data)
  EXPECT_DOUBLE_EQ(c.flops, B * ((f1 + f2 + f3) + (f1 + f2 + f3) + (f2 + f3)));

  // elements moved per pass (W read once per batch, activations per sample)
  const double forward = (w1 + B * (784 + 256)) + B * (256 + 256) + (w2 + B * (256 + 128)) + B * (128 + 128) +
                         (w3 + B * (128 + 10)) + B * (10 + 10);
  const double input_grad = B * (256 * 3)             // relu1: dY, saved X, dX
                            + (w2 + B * (128 + 256))  // fc2: W, dY, dX
                            + B * (128 * 3)           // relu2
                            + (w3 + B * (10 + 128))   // fc3
                            + B * (10 * 3);           // loss
  const double weight_grad = (w1 + B * (784 + 256)) + (w2 + B * (256 + 128)) + (w3 + B * (128 + 10));
  const double adamw = 32 * (w1 + w2 + w3);  // reads p g m v, writes p m v, zeroes g
  EXPECT_DOUBLE_EQ(c.bytes, 4 * (forward + input_grad + weight_grad) + adamw);

  // forward 3 addmm + 2 relu + 2 loss; input grads 2 mm + 2 relu + 2 loss; weight grads
  // 3 x (mm + bias sum); optimizer 6 tensors + zeroing
  EXPECT_EQ(c.kernels, 7 + 6 + 6 + 7);
}

// Two 5x5 convolutions (1->16 on 28x28, 16->32 on 12x12), 2x2 pools, 512 -> 128 -> 10.
TEST(Roofline, CnnFlopsBytesAndKernelsMatchHandCount) {
  auto model = make_image_model("cnn", 10);
  const double B = 64;
  const double c1 = 2.0 * (16 * 24 * 24) * (1 * 5 * 5), c2 = 2.0 * (32 * 8 * 8) * (16 * 5 * 5);
  const double d1 = 2.0 * 512 * 128, d2 = 2.0 * 128 * 10;
  const double wc1 = 16 * 25 + 16, wc2 = 32 * 16 * 25 + 32, wd1 = 512 * 128 + 128, wd2 = 128 * 10 + 10;
  EXPECT_DOUBLE_EQ(model->forward_flops_per_sample(), c1 + c2 + d1 + d2);
  EXPECT_DOUBLE_EQ(total_weights(*model), 80202);  // the README's parameter count

  auto c = cost_of(*model, 64);
  const double fwd = c1 + c2 + d1 + d2;
  EXPECT_DOUBLE_EQ(c.flops, B * (fwd + fwd + (c2 + d1 + d2)));  // no input gradient for conv1

  const double a0 = 784, a1 = 16 * 24 * 24, p1 = 16 * 12 * 12, a2 = 32 * 8 * 8, p2 = 32 * 4 * 4;
  const double forward = (wc1 + B * (a0 + a1)) + B * (a1 + a1) + B * (a1 + p1) + (wc2 + B * (p1 + a2)) + B * (a2 + a2) +
                         B * (a2 + p2) + (wd1 + B * (p2 + 128)) + B * (128 + 128) + (wd2 + B * (128 + 10)) +
                         B * (10 + 10);
  const double input_grad = B * 3 * a1               // relu1: dY, saved X, dX
                            + B * (p1 + 2 * a1)      // pool1: dY, saved X, dX
                            + (wc2 + B * (a2 + p1))  // conv2
                            + B * 3 * a2 + B * (p2 + 2 * a2) + (wd1 + B * (128 + p2)) + B * 3 * 128 +
                            (wd2 + B * (10 + 128)) + B * 3 * 10;
  const double weight_grad =
      (wc1 + B * (a0 + a1)) + (wc2 + B * (p1 + a2)) + (wd1 + B * (p2 + 128)) + (wd2 + B * (128 + 10));
  EXPECT_DOUBLE_EQ(c.bytes, 4 * (forward + input_grad + weight_grad) + 32 * 80202);
  // forward 2 conv + 3 relu + 2 pool + 2 addmm + 2 loss = 11; input grads: all but conv1 = 10;
  // weight grads 4 layers x 2 tensors = 8; optimizer 8 tensors + zeroing = 9
  EXPECT_EQ(c.kernels, 11 + 10 + 8 + 9);
}

// Tiny GPT: 2 blocks, 4 heads, width 128, context 64, bytes vocabulary; 32 windows a step.
TEST(Roofline, GptTinyFlopsBytesAndKernelsMatchHandCount) {
  const GptConfig g = gpt_preset("tiny");
  auto model = make_gpt(g);
  const double B = 32, T = 64, C = 128, H = 4, V = 256, L = 2, S = H * T * T;  // S: attention scores
  ASSERT_EQ(g.context, 64);
  ASSERT_EQ(g.width, 128);
  EXPECT_DOUBLE_EQ(total_weights(*model), 470784);  // the README's parameter count

  // per block: qkv 3C^2, proj C^2, MLP 8C^2 multiply-adds per token; q k^T and att v 2 T^2 C each
  const double block_dense = 2 * 12 * C * C * T, attention = 2 * 2 * T * T * C, head = 2 * C * V * T;
  EXPECT_DOUBLE_EQ(model->forward_flops_per_sample(), L * (block_dense + attention) + head);
  auto c = cost_of(*model, 32);
  // weight grads: dense layers only; input grads: every layer after the embeddings, with
  // two operands' gradients for each attention product
  EXPECT_DOUBLE_EQ(c.flops, B * ((L * (block_dense + attention) + head) + (L * block_dense + head) +
                                 (L * (block_dense + 2 * attention) + head)));

  const double w_block = 12 * C * C + 13 * C, w_head = C * V + V, w_embed = V * C + T * C;
  const double TC = T * C;
  // forward, per block: ln1 2, qkv 4, qk 2, av 2, merge 2, proj 2, res 3, ln2 2, fc 5, gelu 8,
  // fc_proj 5, res 3 = 40 TC; qk 1, scale 2, mask 2, softmax 2, av 1 = 8 S
  const double forward = w_embed + B * (T + 2 * TC) + B * 3 * TC + L * (w_block + B * (40 * TC + 8 * S)) +
                         (2 * C + B * 2 * TC) + (w_head + B * (TC + V * T)) + B * 2 * V * T;
  // input grads, per block: ln1 3, qkv 4, qk 4, av 4, merge 2, proj 2, res 3, ln2 3, fc 5,
  // gelu 12, fc_proj 5, res 3 = 50 TC; qk 2, scale 2, mask 2, softmax 3, av 2 = 11 S
  const double input_grad = B * 3 * TC + L * (w_block + B * (50 * TC + 11 * S)) + (2 * C + B * 3 * TC) +
                            (w_head + B * (V * T + TC)) + B * 3 * V * T;
  // weight grads: wte, wpe, per block ln1 2 + qkv 4 + proj 2 + ln2 2 + fc 5 + fc_proj 5 = 20 TC
  const double weight_grad = (V * C + B * (T + 2 * TC)) + T * C + L * (w_block + B * 20 * TC) + (2 * C + B * 2 * TC) +
                             (w_head + B * (TC + V * T));
  EXPECT_DOUBLE_EQ(c.bytes, 4 * (forward + input_grad + weight_grad) + 32 * 470784);
  // forward: embeddings 4 + 15 per block + ln_f, head, 2 for the loss; input grads:
  // embed add 1 + 17 per block (products twice) + 4; weight grads: 2 + 12 per block + 4;
  // optimizer: 30 tensors + zeroing
  EXPECT_EQ(c.kernels, (4 + 2 * 15 + 4) + (1 + 2 * 17 + 4) + (2 + 2 * 12 + 4) + 31);
}

// --- the roofline's rules ---------------------------------------------------------------

LayerCost layer(double flops, double inputs, double outputs, int kernels = 1) {
  LayerCost l;
  l.name = "synthetic";
  l.flops = flops;
  l.inputs = inputs;
  l.outputs = outputs;
  l.kernels = kernels;
  return l;
}

TEST(Roofline, PicksTheBindingLimitPerPass) {
  const Roof roof{1e12, 1e11, 0, 4};  // 1 TFLOP/s, 100 GB/s
  // compute bound: 1e9 FLOPs against 8 bytes per sample
  TrainingWork compute{{layer(1e9, 1, 1)}, 2};
  auto c = roofline(compute, roof);
  EXPECT_DOUBLE_EQ(c.seconds(), 2e9 / 1e12);
  EXPECT_DOUBLE_EQ(c.compute_bound, 2e-3);
  EXPECT_EQ(c.memory_bound, 0);
  // memory bound: 1e6 + 1e6 fp32 elements per sample against 10 FLOPs
  TrainingWork memory{{layer(10, 1e6, 1e6)}, 2};
  auto m = roofline(memory, roof);
  EXPECT_DOUBLE_EQ(m.seconds(), 2 * 4 * 2e6 / 1e11);
  EXPECT_EQ(m.compute_bound, 0);
  // both in one model: the sum of each pass's max, more than the max of the sums
  TrainingWork both{{layer(1e9, 1, 1), layer(10, 1e6, 1e6)}, 2};
  auto b = roofline(both, roof);
  EXPECT_DOUBLE_EQ(b.seconds(), 2e-3 + 2 * 4 * 2e6 / 1e11);
  EXPECT_GT(b.seconds(), std::max(b.flops / roof.flops, b.bytes / roof.memory_bandwidth) + 1e-4);
}

TEST(Roofline, AddsLaunchLatencyPerKernel) {
  TrainingWork work{{layer(1e6, 10, 10, 3), layer(0, 10, 10, 2)}, 4};
  // the second layer's input gradient: nothing trains before it, so none; no optimizer
  auto without = roofline(work, Roof{1e12, 1e11, 0, 4});
  auto with = roofline(work, Roof{1e12, 1e11, 5e-6, 4});
  EXPECT_EQ(with.kernels, 5);
  EXPECT_DOUBLE_EQ(with.launch, 5 * 5e-6);
  EXPECT_DOUBLE_EQ(with.seconds() - without.seconds(), 25e-6);
  // a trainable first layer adds its weight gradient (1 tensor), the second layer's input
  // gradient (2 kernels) and the optimizer (1 tensor + zeroing)
  work.layers[0].weights = 100;
  work.layers[0].tensors = 1;
  work.layers[0].trains = true;
  EXPECT_EQ(roofline(work, Roof{1e12, 1e11, 5e-6, 4}).kernels, 5 + 1 + 2 + 2);
}

// Two trainable layers on a roof of 1 TFLOP/s, 100 GB/s and 5 us a launch, worked by hand:
// layer 0: 1e9 FLOPs a sample (compute bound), 100 weights in 2 tensors; layer 1: 1e3 FLOPs,
// 1e6 elements in and out (memory bound), 10 weights in 1 tensor; batch 2, SGD without momentum.
TEST(Roofline, SecondsByPassInStepOrder) {
  const Roof roof{1e12, 1e11, 5e-6, 4};
  LayerCost a = layer(1e9, 1, 1), b = layer(1e3, 1e6, 1e6);
  a.weights = 100, a.tensors = 2, a.trains = true;
  b.weights = 10, b.tensors = 1, b.trains = true;
  const TrainingWork work{{a, b}, 2, OptimizerKind::Sgd, false};
  const StepCost c = roofline(work, roof);
  ASSERT_EQ(c.forward.size(), 2u);
  ASSERT_EQ(c.backward.size(), 2u);
  // forward: 2e9 FLOPs at 1e12, one launch; 4 x (10 + 4e6) bytes at 1e11, one launch
  EXPECT_DOUBLE_EQ(c.forward[0], 2e9 / 1e12 + 5e-6);
  EXPECT_DOUBLE_EQ(c.forward[1], 4 * (10 + 4e6) / 1e11 + 5e-6);
  // layer 0: nothing trains before it, so only its weight gradient (2e9 FLOPs, 2 launches)
  EXPECT_DOUBLE_EQ(c.backward[0], 2e9 / 1e12 + 2 * 5e-6);
  // layer 1: input gradient (reads W, dY, X: 4 x (10 + 2e6 + 2e6)) and weight gradient
  // (4 x (10 + 4e6)), memory bound, one launch each
  EXPECT_DOUBLE_EQ(c.backward[1], 4 * (10 + 4e6) / 1e11 + 5e-6 + 4 * (10 + 4e6) / 1e11 + 5e-6);
  // update: SGD reads p and g and writes p (12 bytes) and zeroes g (4) for 110 weights; 3 + 1 launches
  EXPECT_DOUBLE_EQ(c.update, 110 * 16 / 1e11 + 4 * 5e-6);
  EXPECT_NEAR(c.forward[0] + c.forward[1] + c.backward[0] + c.backward[1] + c.update, c.seconds(), 1e-15);

  // As shares of the step, in order: forward 0, forward 1, backward 1, backward 0, update.
  const StepShares shares = step_shares(c);
  const double total = c.seconds();
  EXPECT_NEAR(shares.backward_done(1), (c.forward[0] + c.forward[1] + c.backward[1]) / total, 1e-12);
  EXPECT_NEAR(shares.backward_end(), 1 - c.update / total, 1e-12);
  // By FLOPs (the fixed and measured models): forward 2e9 and 2e3; backward 2e9 (weights only)
  // and 2 x 2e3 (input and weight gradients); the update none.
  const StepShares flops = step_shares(roofline(work, flop_count_roof()));
  const double all = 2e9 + 2e3 + 2e9 + 4e3;
  EXPECT_NEAR(flops.forward[0], 2e9 / all, 1e-12);
  EXPECT_NEAR(flops.backward[1], 4e3 / all, 1e-15);
  EXPECT_NEAR(flops.backward_done(1), (2e9 + 2e3 + 4e3) / all, 1e-12);
  EXPECT_EQ(flops.update, 0);
  // No FLOPs at all: the gradients exist only when the step ends.
  const StepShares none = step_shares(roofline(TrainingWork{{layer(0, 1, 1), layer(0, 1, 1)}, 2}, flop_count_roof()));
  EXPECT_EQ(none.backward_done(1), 0);
  EXPECT_EQ(none.backward_end(), 1);
}

// Which layer's backward pass produces each trainable tensor's gradient (when DDP's buckets
// may leave): by hand for the CNN and the GPT's first block; for every model, each training
// layer gets as many tensors as it says it has, holding its weights.
std::vector<std::string> trainable_names(const Model& model) {
  std::vector<std::string> out;
  for (const auto& p : model.named_parameters())
    if (p.value().requires_grad()) out.push_back(p.key());
  return out;
}

TEST(Roofline, GradientLayersFollowTheModelsTensors) {
  auto cnn = make_image_model("cnn", 10);
  // conv1 (w, b), relu1, pool1, conv2 (w, b), relu2, pool2, fc1 (w, b), relu3, fc2 (w, b), loss
  EXPECT_EQ(gradient_layers(TrainingWork{cnn->layer_costs()}, trainable_names(*cnn)),
            (std::vector<int>{0, 0, 3, 3, 6, 6, 8, 8}));
  EXPECT_THROW(gradient_layers(TrainingWork{cnn->layer_costs()}, {"conv3.weight"}), std::logic_error);
  // The GPT registers ln_f and head before its blocks, and runs them after.
  auto gpt = make_gpt(gpt_preset("tiny"));
  const auto costs = gpt->layer_costs();
  const auto layer_of = gradient_layers(TrainingWork{costs}, trainable_names(*gpt));
  const auto names = trainable_names(*gpt);
  for (size_t t = 0; t < names.size(); ++t) {
    const std::string& layer = costs[layer_of[t]].name;
    if (names[t] == "ln_f.weight") EXPECT_EQ(layer, "ln_f");
    if (names[t] == "head.weight") EXPECT_EQ(layer, "head");
    if (names[t] == "blocks.0.attn.qkv.bias") EXPECT_EQ(layer, "blocks.0.attn.qkv");
    if (names[t] == "blocks.0.ln2.weight") EXPECT_EQ(layer, "blocks.0.ln2");
  }
  AdapterConfig lora;
  lora.kind = AdapterKind::Lora;
  AdapterConfig lora_fa;
  lora_fa.kind = AdapterKind::LoraFa;
  for (const auto& model :
       {cnn, make_mlp(784, 128, 10), gpt, make_mlp(784, 128, 10, lora), make_mlp(784, 128, 10, lora_fa)}) {
    const auto layers = model->layer_costs();
    const auto tensors = trainable_parameters(*model);
    const auto owner = gradient_layers(TrainingWork{layers}, trainable_names(*model));
    std::vector<double> elements(layers.size(), 0);
    std::vector<int> count(layers.size(), 0);
    for (size_t t = 0; t < tensors.size(); ++t) {
      elements[owner[t]] += static_cast<double>(tensors[t].numel());
      ++count[owner[t]];
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      if (!layers[l].trains) continue;
      EXPECT_EQ(count[l], layers[l].tensors) << layers[l].name;
      EXPECT_EQ(elements[l], layers[l].weights) << layers[l].name;
    }
  }
}

TEST(Roofline, FrozenLayersCostNoWeightGradient) {
  LayerCost l = layer(1e6, 100, 50);
  l.weights = 5000;
  l.tensors = 2;
  l.trains = true;
  TrainingWork trained{{l}, 8};
  l.trains = false;
  TrainingWork frozen{{l}, 8};
  auto t = roofline(trained, kCount), f = roofline(frozen, kCount);
  EXPECT_DOUBLE_EQ(f.flops, 8 * 1e6);  // forward only
  EXPECT_DOUBLE_EQ(t.flops, 2 * 8 * 1e6);
  EXPECT_DOUBLE_EQ(f.bytes, 4 * (5000 + 8 * 150));
  EXPECT_DOUBLE_EQ(t.bytes - f.bytes, 4 * (5000 + 8 * 150) + 32 * 5000);  // dW pass + AdamW
  EXPECT_EQ(t.kernels - f.kernels, 2 + 3);
}

// LoRA-FA on make_mlp: bases and A factors frozen, only the B factors get weight gradients.
TEST(Roofline, LoraFaMlpChargesOnlyAdapterWeightGradients) {
  AdapterConfig a;
  a.kind = AdapterKind::LoraFa;
  a.rank = 4;
  auto model = make_mlp(784, 128, 10, a);
  const double r = 4, B = 16;
  auto dense = [&](double in, double out) { return 2 * in * out + 2 * r * in + 2 * r * out; };
  const double forward = dense(784, 256) + dense(256, 128) + dense(128, 10);
  const double weight_grad = 2 * r * 256 + 2 * r * 128 + 2 * r * 10;  // x A^T B^T: only B
  // gradients flow once fc1's B has trained: every later product needs its input gradient
  const double input_grad = dense(256, 128) + dense(128, 10);
  EXPECT_DOUBLE_EQ(cost_of(*model, 16).flops, B * (forward + weight_grad + input_grad));
  // the optimizer moves only B factors
  const double b_factors = 256 * r + 128 * r + 10 * r;
  EXPECT_DOUBLE_EQ(cost_of(*model, 16, OptimizerKind::AdamW).bytes - cost_of(*model, 16, OptimizerKind::Sgd).bytes,
                   (32 - 16) * b_factors);
}

TEST(Roofline, OptimizerBytesPerParameter) {
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::AdamW, false), 32);  // 16 read, 12 written, 4 zeroed
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::Adam, false), 32);
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::Sgd, false), 16);
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::Sgd, true), 24);
  // Eva's nine unfused kernels over the gradient, counted from the reference's statements:
  // reads and writes of 4 bytes, 1 + 1 + 2 + 3 + 2 + 3 + 1 + 2 + 2 = 17 of them.
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::Eva, true), 24 + 17 * 4);
  // K-FAC's five kernels: 3 + 2 + 1 + 2 + 2 = 10 accesses of 4 bytes.
  EXPECT_EQ(optimizer_bytes_per_parameter(OptimizerKind::Kfac, true), 24 + 10 * 4);
}

// --- device presets, dtype and overrides ------------------------------------------------

TEST(Roofline, Bf16UsesTheBf16PeakAndHalfTheBytes) {
  ComputeSection s;
  s.device = "a100";
  s.mfu = 0.5;
  Roof fp32 = compute_roof(s);
  EXPECT_DOUBLE_EQ(fp32.flops, 19.5e12 * 0.5);
  EXPECT_DOUBLE_EQ(fp32.memory_bandwidth, 2.039e12);
  EXPECT_DOUBLE_EQ(fp32.launch_latency, 5e-6);
  EXPECT_EQ(fp32.bytes_per_element, 4);
  s.dtype = Precision::Bf16;
  Roof bf16 = compute_roof(s);
  EXPECT_DOUBLE_EQ(bf16.flops, 312e12 * 0.5);
  EXPECT_EQ(bf16.bytes_per_element, 2);

  // a compute-bound step runs at the dtype's peak
  s.model = ComputeKind::Flops;
  TrainingWork work{{layer(1e10, 1, 1, 0)}, 1};
  EXPECT_DOUBLE_EQ(ComputeModel(s, work, 1, 0).step_seconds(0, 0, 0), 1e10 / (312e12 * 0.5));
  s.dtype = Precision::Fp32;
  EXPECT_DOUBLE_EQ(ComputeModel(s, work, 1, 0).step_seconds(0, 0, 0), 1e10 / (19.5e12 * 0.5));
}

// Each precision takes the preset's own datasheet peak: TF32 keeps 4-byte elements, FP16 and
// BF16 take 2; a precision the device lacks has no peak (the loader refuses it at the key).
TEST(Roofline, EveryDtypeTakesItsOwnPeak) {
  ComputeSection s;
  s.mfu = 1;
  struct Case {
    const char* device;
    Precision dtype;
    double peak;
    int bytes;
  };
  for (const Case& c : {Case{"a100", Precision::Tf32, 156e12, 4}, Case{"a100", Precision::Fp16, 312e12, 2},
                        Case{"h200", Precision::Bf16, 989.5e12, 2}, Case{"b200", Precision::Tf32, 1.1e15, 4},
                        Case{"mi300x", Precision::Fp16, 1307.4e12, 2}, Case{"v100", Precision::Fp16, 125e12, 2},
                        Case{"a100_40gb", Precision::Fp32, 19.5e12, 4}}) {
    s.device = c.device;
    s.dtype = c.dtype;
    const Roof roof = compute_roof(s);
    EXPECT_EQ(roof.flops, c.peak) << c.device << " " << enum_name(c.dtype);
    EXPECT_EQ(roof.bytes_per_element, c.bytes) << c.device << " " << enum_name(c.dtype);
  }
  s.device = "a100_40gb";
  EXPECT_EQ(compute_roof(s).memory_bandwidth, 1.555e12);
  s.device = "a100_pcie";
  EXPECT_EQ(compute_roof(s).memory_bandwidth, 1.935e12);
  s.device = "v100";
  s.dtype = Precision::Bf16;
  EXPECT_THROW(compute_roof(s), std::invalid_argument);
  s.peak_flops = FlopRate{1e14};  // an explicit peak needs no datasheet figure
  EXPECT_EQ(compute_roof(s).flops, 1e14);
}

TEST(Roofline, OverridesReplacePresetFigures) {
  ComputeSection s;
  s.device = "h100";
  s.mfu = 1;
  s.peak_flops = FlopRate{2e12};
  s.memory_bandwidth = ByteRate{1e9};
  s.launch_latency = Duration{1e-3};
  Roof roof = compute_roof(s);
  EXPECT_EQ(roof.flops, 2e12);
  EXPECT_EQ(roof.memory_bandwidth, 1e9);
  EXPECT_EQ(roof.launch_latency, 1e-3);
  s.launch_latency = Duration{0};  // zero is a valid override, not "unset"
  EXPECT_EQ(compute_roof(s).launch_latency, 0);
}

// --- calibrated kernels (docs/compute.md) ---------------------------------------------------

// Without compute.mfu the roof is the preset's calibrated figures, written out here for the
// A100 in bf16: GEMMs at 0.661 of 312 TFLOP/s, convolutions at 0.727 of that, memory at 0.84 of
// 2.039 TB/s, a wave of 108 SMs x 2 x 128^3, 128-deep tiles, NCHW transposes on tensor cores
// only; with compute.mfu, the flat model and none of those terms. Slips caught: the fp32
// figure used for a tensor dtype, the convolution factor applied to GEMMs, transposes charged
// to fp32 or channels_last, the flat model keeping a calibrated term.
TEST(Roofline, CalibratedRoofIsThePresetsFigures) {
  ComputeSection s;
  s.device = "a100";
  s.dtype = Precision::Bf16;
  const Roof r = compute_roof(s);
  EXPECT_DOUBLE_EQ(r.flops, 312e12 * 0.661);
  EXPECT_DOUBLE_EQ(r.convolution_flops, 312e12 * 0.661 * 0.727);
  EXPECT_DOUBLE_EQ(r.memory_bandwidth, 2.039e12 * 0.84);
  EXPECT_DOUBLE_EQ(r.wave_flops, 108 * 2.0 * 128 * 128 * 128);
  EXPECT_EQ(r.tile_depth, 128);
  EXPECT_TRUE(r.convolution_transposes);
  s.memory_format = MemoryFormat::ChannelsLast;
  EXPECT_FALSE(compute_roof(s).convolution_transposes);
  s.memory_format = MemoryFormat::Nchw;
  s.dtype = Precision::Fp32;  // CUDA cores: the fp32 figure, NCHW as it is
  EXPECT_DOUBLE_EQ(compute_roof(s).flops, 19.5e12 * 0.92);
  EXPECT_FALSE(compute_roof(s).convolution_transposes);
  s.gemm_efficiency = 0.5;  // an override replaces the preset's figure, the convolution's follows
  EXPECT_DOUBLE_EQ(compute_roof(s).flops, 19.5e12 * 0.5);
  EXPECT_DOUBLE_EQ(compute_roof(s).convolution_flops, 19.5e12 * 0.5 * 0.727);
  s.gemm_efficiency.reset();
  s.mfu = 0.4;
  const Roof flat = compute_roof(s);
  EXPECT_DOUBLE_EQ(flat.flops, 19.5e12 * 0.4);
  EXPECT_EQ(flat.convolution_flops, 0);
  EXPECT_EQ(flat.memory_bandwidth, 2.039e12);
  EXPECT_EQ(flat.wave_flops, 0);
  EXPECT_EQ(flat.tile_depth, 0);
  // A device of figures alone has no calibration: all three efficiencies, or mfu.
  ComputeSection bare;
  bare.device = "tpu";
  bare.peak_flops = FlopRate{1e14};
  bare.memory_bandwidth = ByteRate{1e12};
  bare.launch_latency = Duration{0};
  EXPECT_THROW(compute_roof(bare), std::invalid_argument);
  bare.gemm_efficiency = bare.convolution_efficiency = bare.memory_efficiency = 0.5;
  EXPECT_DOUBLE_EQ(compute_roof(bare).flops, 0.5e14);
  // Ada (the RTX 4090) runs tensor-core convolutions on NCHW without the transposes, at its own
  // convolution factor (R8). Slip caught: the device's flag ignored, or the A100's factor kept.
  ComputeSection ada;
  ada.device = "rtx4090";
  ada.dtype = Precision::Fp16;
  const Roof a = compute_roof(ada);
  EXPECT_FALSE(a.convolution_transposes);
  EXPECT_DOUBLE_EQ(a.flops, 165.2e12 * 0.661);
  EXPECT_DOUBLE_EQ(a.convolution_flops, 165.2e12 * 0.661 * 0.673);
}

// One pass of each kind against the formulas, by hand: a Linear of K = 64 at K / (K + 128) of
// the GEMM rate; a tiny product at one wave's time; a convolution at its own rate, plus under
// NCHW a read and a write of its input and output (two kernels) per pass; an elementwise pass
// at the memory rate. Slips caught: K taken from the wrong side in backward, the wave floor
// lost, the transposes charged once a layer instead of once a pass.
TEST(Roofline, EachKindOfKernelAtItsRate) {
  Roof roof{1e12, 1e11, 0, 2};
  roof.convolution_flops = 5e11;
  roof.tile_depth = 128;
  roof.wave_flops = 1e6;
  LayerCost linear = linear_cost("fc", 64, 256, 1, false, true);  // forward K 64, input gradient K 256
  const double B = 1000;
  TrainingWork work{{layer(0, 1, 1), linear}, static_cast<int>(B), OptimizerKind::Sgd, false};
  work.layers[0].trains = true;  // so the Linear's input gradient runs
  work.layers[0].weights = 1;
  const StepCost c = roofline(work, roof);
  const double F = B * 2 * 64 * 256;
  EXPECT_DOUBLE_EQ(c.forward[1], F / (1e12 * 64 / (64 + 128)));
  EXPECT_DOUBLE_EQ(c.backward[1], F / (1e12 * 256 / (256 + 128)) + F / 1e12);  // input gradient, weight gradient
  // A product smaller than a wave takes the wave's time.
  LayerCost tiny = linear_cost("tiny", 2, 2, 1, false, false);
  const StepCost t = roofline(TrainingWork{{tiny}, 1, OptimizerKind::Sgd, false}, roof);
  EXPECT_DOUBLE_EQ(t.forward[0], 1e6 / (1e12 * 2 / (2 + 128)));
  // A convolution (K = 3 x 3 x 8 = 72 forward, 3 x 3 x 16 = 144 backward) under NCHW.
  LayerCost conv;
  conv.name = "conv";
  conv.flops = 1e9;
  conv.weights = 100;
  conv.inputs = 1e3;
  conv.outputs = 2e3;
  conv.convolution = true;
  conv.gemm_k = 72;
  conv.gemm_k_backward = 144;
  conv.trains = true;
  conv.tensors = 1;
  roof.convolution_transposes = true;
  const StepCost v = roofline(TrainingWork{{layer(0, 1, 1), conv}, 10, OptimizerKind::Sgd, false}, roof);
  const double transpose = 2 * 2 * 10 * (1e3 + 2e3) / 1e11;
  EXPECT_DOUBLE_EQ(v.forward[1], 10 * 1e9 / (5e11 * 72 / 200) + transpose);
  EXPECT_DOUBLE_EQ(v.backward[1], 10 * 1e9 / 5e11 + transpose);  // weight gradient only: nothing earlier trains
  EXPECT_EQ(v.kernels, 1 + 1 + 2 + 1 + 2 + 2);  // layer 0, conv forward + 2, weight gradient + 2, update and zeroing
}

// A convolution whose channels differ (16 in, 64 out, 3 x 3, 8 x 8, padded) built from its shape
// and timed behind a layer that trains, so both backward passes run. By hand: each output is a
// dot product over in x 3 x 3 = 144 inputs (the forward implicit GEMM's K); the data gradient's
// each input over out x 3 x 3 = 576 (its K); the weight gradient's K is the batch's positions,
// long enough to run at the full convolution rate. Every pass is compute-bound on this roof.
// Slip caught: the data gradient's K taken from the input channels (144, as forward's) instead
// of the output channels, which makes its pass 1.54x slower here.
TEST(Roofline, ConvolutionBackwardTakesKFromTheOutputChannels) {
  Roof roof{1e12, 1e11, 0, 2};
  roof.convolution_flops = 5e11;
  roof.tile_depth = 128;
  const LayerCost conv = convolution_cost("conv", Conv2dShape{16, 64, 3, 3, 1, 1, 1, 1, false}, 8, 8, true);
  LayerCost before = layer(0, 1, 1);
  before.trains = true;
  before.weights = 1;
  const double B = 4;
  const StepCost c = roofline(TrainingWork{{before, conv}, static_cast<int>(B), OptimizerKind::Sgd, false}, roof);
  const double F = B * 2 * 64 * (8 * 8) * (16 * 3 * 3);  // 2 x out channels x positions x K
  const double k_forward = 16 * 3 * 3, k_data = 64 * 3 * 3;
  EXPECT_DOUBLE_EQ(c.forward[1], F / (5e11 * k_forward / (k_forward + 128)));
  EXPECT_DOUBLE_EQ(c.backward[1], F / (5e11 * k_data / (k_data + 128)) + F / 5e11);
}

TEST(Roofline, EveryPresetHasPositiveFiguresAndBf16AtLeastFp32) {
  for (const auto& p : device_presets()) {
    EXPECT_GT(p.fp32_flops, 0) << p.name;
    // Tensor precisions are at least the vector FP32 rate where the device has them, and every
    // device has a 16-bit one.
    for (double peak : {p.tf32_flops, p.bf16_flops, p.fp16_flops})
      EXPECT_TRUE(peak == 0 || peak >= p.fp32_flops) << p.name;
    EXPECT_GT(std::max(p.bf16_flops, p.fp16_flops), 0) << p.name;
    EXPECT_GT(p.memory_bandwidth, 0) << p.name;
    EXPECT_GT(p.launch_latency, 0) << p.name;
    EXPECT_GE(p.memory_gib, 11) << p.name;  // the smallest, the RTX 2080 Ti's 11 GB
  }
  std::vector<std::string> names;
  for (const auto& p : device_presets()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"h100", "h200", "b200", "a100", "a100_40gb", "a100_pcie", "mi300x",
                                             "rtx4090", "rtx2080ti", "v100", "t4", "l4", "jetson_agx_orin", "cpu"}));
}

// FlashAttention (compute.attention: flash, fused_attention): the tiny GPT's q k^T, scale,
// causal mask, softmax and att v become one kernel of 4 T^2 C / 2 FLOPs (causal: half the
// blocks), reading q, k, v (3 T C) and writing the output and a log-sum-exp a row and head (T C
// + h T); BERT's, not causal, keeps all 4 T^2 C. Its backward is two products per operand plus
// the scores again: 2 x 4 T^2 C / 2 + 2 T^2 C / 2 on a roof of 1 FLOP/s. Slips caught: the
// causal half not taken (or taken for BERT), the recomputation left out of backward, a
// score-sized output kept, a layer other than the attention's swallowed.
TEST(Roofline, FlashAttentionFusesTheScoresAndRecomputesThemInBackward) {
  const double T = 64, C = 128, h = 4;
  const auto eager = make_gpt(gpt_preset("tiny"))->layer_costs();
  const auto flash = fused_attention(eager);
  EXPECT_EQ(eager.size() - flash.size(), 2u * 4);  // 5 layers become 1, in each of 2 blocks
  const LayerCost* fused = nullptr;
  for (const auto& l : flash) {
    const std::string tail = l.name.substr(l.name.rfind('.') + 1);
    EXPECT_TRUE(tail != "qk" && tail != "scale" && tail != "mask" && tail != "softmax" && tail != "av") << l.name;
    if (l.name == "blocks.0.attn.flash") fused = &l;
  }
  ASSERT_NE(fused, nullptr);
  EXPECT_DOUBLE_EQ(fused->flops, 4 * T * T * C / 2);
  EXPECT_DOUBLE_EQ(fused->recompute_flops, 2 * T * T * C / 2);
  EXPECT_DOUBLE_EQ(fused->inputs, 3 * T * C);
  EXPECT_DOUBLE_EQ(fused->outputs, T * C + h * T);
  EXPECT_EQ(fused->grad_operands, 2);
  const auto bert = fused_attention(make_bert(bert_preset("tiny"))->layer_costs());
  for (const auto& l : bert)
    if (l.name == "layers.0.attention.flash") EXPECT_DOUBLE_EQ(l.flops, 4 * T * T * C);
  const StepCost cost =
      roofline(TrainingWork{{linear_cost("w", 4, 4, 1, false, true), *fused}, 3, OptimizerKind::Sgd, false},
               Roof{1, std::numeric_limits<double>::infinity(), 0, 4});
  EXPECT_DOUBLE_EQ(cost.forward[1], 3 * fused->flops);
  EXPECT_DOUBLE_EQ(cost.backward[1], 3 * (2 * 4 * T * T * C / 2 + 2 * T * T * C / 2));
}

// The default scenario (rtx4090, fp32, mfu 0.4) charges the CNN more than pure FLOPs would.
TEST(Roofline, DefaultCnnStepIsNotPureArithmetic) {
  auto model = make_image_model("cnn", 10);
  ComputeSection s;  // flops model, rtx4090, fp32
  ComputeModel m(s, TrainingWork{model->layer_costs(), 64}, 1, 0);
  const double arithmetic = m.flops_per_step() / (82.6e12 * 0.4);
  EXPECT_GT(m.step_seconds(0, 0, 0), arithmetic + 38 * 5e-6);  // and its 38 launches on top
}

}  // namespace
}  // namespace testbed
