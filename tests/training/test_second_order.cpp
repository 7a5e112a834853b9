// Second-order optimizers against re-implementations written here: Eva's vectors by hand, its
// Sherman-Morrison step against a direct solve, and a CNN trained with it step by step.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "training/algorithms/common.h"
#include "training/models/model_shapes.h"
#include "training/models/models.h"
#include "training/optimizers/eva.h"
#include "training/optimizers/kfac.h"
#include "training/optimizers/kfac_traffic.h"
#include "training/replica.h"

namespace testbed {
namespace {

// A Linear layer's tap with a gradient, an input and an output gradient drawn from `seed`.
LayerTap linear_tap(int64_t in, int64_t out, int64_t rows, uint64_t seed) {
  torch::manual_seed(seed);
  LayerTap t;
  t.name = "linear";
  t.weight = torch::randn({out, in}).requires_grad_();
  t.bias = torch::randn({out}).requires_grad_();
  t.weight.mutable_grad() = torch::randn({out, in});
  t.bias.mutable_grad() = torch::randn({out});
  t.input = torch::randn({rows, in});
  t.output_grad = torch::randn({rows, out});
  return t;
}

// [weight.grad | bias.grad] as one row-major vector, in double.
torch::Tensor gradient_vector(const LayerTap& t) {
  return torch::cat({t.weight.grad(), t.bias.grad().reshape({-1, 1})}, 1).reshape({-1}).to(torch::kDouble);
}

// Eva's step is (u u^T + damping I)^-1 vec(grad), u = g (x) a, then one KL factor: solved here
// directly on a 3 x (4 + 1) layer. Slips caught: a sign or a missing term in the
// Sherman-Morrison coefficient, the bias column left out, the damping not divided through.
TEST(Eva, ShermanMorrisonIsTheDampedInverseAndKlClipScalesIt) {
  for (double kl_clip : {1e9, 0.001, 0.0}) {
    LayerTap t = linear_tap(4, 3, 5, 7);
    const torch::Tensor grad = gradient_vector(t);
    const auto a = torch::cat({t.input.mean(0), torch::ones({1})}).to(torch::kDouble);
    const auto g = t.output_grad.mean(0).to(torch::kDouble);
    const double damping = 0.03, lr = 0.1;
    const auto u = torch::kron(g, a).reshape({-1, 1});
    const auto m = u.mm(u.t()) + damping * torch::eye(u.size(0), torch::kDouble);
    const auto x = torch::linalg_solve(m, grad.reshape({-1, 1})).reshape({-1});
    // KL clipping: nu = min(1, sqrt(kl / (lr^2 x . grad))); kl_clip 0: nu = |grad| / |x|.
    const double nu = kl_clip > 0 ? std::min(1.0, std::sqrt(kl_clip / (lr * lr * (x * grad).sum().item<double>())))
                                  : std::sqrt((grad * grad).sum().item<double>() / (x * x).sum().item<double>());
    Eva eva({&t}, EvaOptions{damping, kl_clip, 0.95, 16});
    eva.observe();
    eva.precondition(lr);
    const auto got = gradient_vector(t);
    const auto want = x * nu;
    SCOPED_TRACE("kl_clip " + std::to_string(kl_clip));
    if (kl_clip == 0.001) EXPECT_LT(nu, 1);  // the default clips this layer
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-6)) << (got - want).abs().max().item<double>();
  }
}

// A padded, strided convolution's vectors by loops: a is the mean over output positions of the
// batch-mean input's patch (zeros where the patch leaves the input), channel-major then kh,
// kw, and a 1 for the bias; g the output gradient's mean over samples and positions. Slips
// caught: kw before kh, the padding ignored, the mean over all samples instead of the kept ones.
TEST(Eva, VectorsOfAPaddedStridedConvolutionByHand) {
  torch::manual_seed(3);
  LayerTap t;
  t.weight = torch::randn({2, 3, 3, 2});
  t.bias = torch::randn({2});
  t.kernel = {3, 2};
  t.stride = {2, 1};
  t.padding = {1, 0};
  t.input = torch::randn({4, 3, 5, 4});
  const int64_t oh = (5 + 2 - 3) / 2 + 1, ow = (4 - 2) / 1 + 1;  // 3 x 3
  t.output_grad = torch::randn({4, 2, oh, ow});
  const auto mean = t.input.mean(0).to(torch::kDouble);
  auto mx = mean.accessor<double, 3>();
  std::vector<double> a(3 * 3 * 2 + 1, 0.0);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 2; ++kx) {
            const int64_t iy = oy * 2 - 1 + ky, ix = ox * 1 - 0 + kx;
            const double v = iy < 0 || iy >= 5 || ix < 0 || ix >= 4 ? 0.0 : mx[c][iy][ix];
            a[(c * 3 + ky) * 2 + kx] += v / static_cast<double>(oh * ow);
          }
  a.back() = 1;
  const auto got_a = eva_vector_a(t).to(torch::kDouble);
  ASSERT_EQ(got_a.numel(), static_cast<int64_t>(a.size()));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(got_a[i].item<double>(), a[i], 1e-6) << i;
  const auto og = t.output_grad.to(torch::kDouble);
  auto gg = og.accessor<double, 4>();
  const auto got_g = eva_vector_g(t).to(torch::kDouble);
  for (int64_t f = 0; f < 2; ++f) {
    double sum = 0;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) sum += gg[n][f][y][x];
    EXPECT_NEAR(got_g[f].item<double>(), sum / (4.0 * oh * ow), 1e-6);
  }
}

// The CNN's step written out (conv, ReLU and pooling twice, two dense layers, log-softmax and
// NLL) for parameters w and b in forward order: each layer's input, the gradient at its output,
// and its weight's gradient as a d_g x d_a matrix with the bias's last.
struct CnnPass {
  std::vector<torch::Tensor> inputs, output_grads, grads;
};
CnnPass cnn_by_hand(const std::vector<torch::Tensor>& w, const std::vector<torch::Tensor>& b, const torch::Tensor& x,
                    const torch::Tensor& y) {
  std::vector<torch::Tensor> ws, bs, outs;
  for (size_t i = 0; i < 4; ++i) {
    ws.push_back(w[i].clone().requires_grad_());
    bs.push_back(b[i].clone().requires_grad_());
  }
  auto keep_out = [&](torch::Tensor o) {
    o.retain_grad();
    outs.push_back(o);
    return o;
  };
  CnnPass pass;
  auto h = x;
  pass.inputs.push_back(h);
  h = torch::max_pool2d(torch::relu(keep_out(torch::conv2d(h, ws[0], bs[0]))), 2);
  pass.inputs.push_back(h.detach());
  h = torch::max_pool2d(torch::relu(keep_out(torch::conv2d(h, ws[1], bs[1]))), 2).flatten(1);
  pass.inputs.push_back(h.detach());
  h = torch::relu(keep_out(h.mm(ws[2].t()) + bs[2]));
  pass.inputs.push_back(h.detach());
  torch::nll_loss(torch::log_softmax(keep_out(h.mm(ws[3].t()) + bs[3]), 1), y).backward();
  for (size_t i = 0; i < 4; ++i) {
    pass.output_grads.push_back(outs[i].grad());
    pass.grads.push_back(torch::cat({ws[i].grad().reshape({w[i].size(0), -1}), bs[i].grad().reshape({-1, 1})}, 1));
  }
  return pass;
}

// torch.optim.SGD (momentum, weight decay, no dampening) stepping w and b with the directions
// vs (d_g x d_a, bias last) scaled by nu.
struct SgdByHand {
  double lr, momentum, weight_decay;
  std::vector<torch::Tensor> buf_w = std::vector<torch::Tensor>(4), buf_b = std::vector<torch::Tensor>(4);
  void step(std::vector<torch::Tensor>& w, std::vector<torch::Tensor>& b, const std::vector<torch::Tensor>& vs,
            double nu, bool first) {
    for (size_t i = 0; i < 4; ++i) {
      const int64_t cols = vs[i].size(1) - 1;
      auto dw = vs[i].slice(1, 0, cols).reshape(w[i].sizes()) * nu + weight_decay * w[i];
      auto db = vs[i].slice(1, cols).reshape(b[i].sizes()) * nu + weight_decay * b[i];
      buf_w[i] = first ? dw : momentum * buf_w[i] + dw;
      buf_b[i] = first ? db : momentum * buf_b[i] + db;
      w[i] = w[i] - lr * buf_w[i];
      b[i] = b[i] - lr * buf_b[i];
    }
  }
};

// The model's parameters against w and b (forward order), within the tolerances.
void expect_parameters(const Model& model, const std::vector<torch::Tensor>& w, const std::vector<torch::Tensor>& b,
                       double rtol, double atol) {
  size_t i = 0, j = 0;
  for (const auto& p : model.named_parameters()) {
    const bool bias = p.key().find("bias") != std::string::npos;
    const auto& want = bias ? b[j++] : w[i++];
    const auto got = p.value().detach();
    EXPECT_TRUE(torch::allclose(got, want, rtol, atol)) << p.key() << ": " << (got - want).abs().max().item<double>();
  }
}

// The CNN trained with Eva under SGD at the reference's settings (damping 0.03, kl_clip 0.001,
// factor decay 0.95 on the new vector, 16 samples of a batch of 32; lr 0.1, momentum 0.9, weight
// decay 5e-4) over six steps, against the same steps written out here: the forward pass by hand,
// the vectors (a Conv2d's mean patch as shifted slices of the batch-mean input), the running
// averages, Sherman-Morrison, KL clipping and torch.optim.SGD's momentum. Slips caught: the
// decay's weight on the old vector, the whole batch instead of 16 samples, lr missing from KL,
// the preconditioner skipped or run after the optimizer.
TEST(Eva, CnnTrainsAsAPlainReimplementationOverSeveralSteps) {
  const double lr = 0.1, momentum = 0.9, weight_decay = 5e-4, damping = 0.03, kl = 0.001, decay = 0.95;
  const int64_t keep = 16, batch = 32;
  // In double throughout, so that float rounding (which dividing by the damping magnifies)
  // stays far below what any slip changes.
  const auto default_dtype = torch::get_default_dtype();
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  torch::manual_seed(11);
  auto model = make_image_model("cnn", 10);
  // The re-implementation's parameters: copies in forward order (conv1, conv2, fc1, fc2).
  std::vector<torch::Tensor> w, b;
  for (const auto& p : model->named_parameters()) {
    auto copy = p.value().detach().clone().to(torch::kDouble);
    (p.key().find("bias") != std::string::npos ? b : w).push_back(copy);
  }
  ASSERT_EQ(w.size(), 4u);
  OptimizerConfig config;
  config.name = OptimizerKind::Eva;
  config.lr = lr;
  config.momentum = momentum;
  config.weight_decay = weight_decay;
  Replica replica(model, config, ShardSampler({0}, 0), torch::kCPU);

  std::vector<torch::Tensor> ra(4), rg(4);
  SgdByHand sgd{lr, momentum, weight_decay};
  for (int step = 0; step < 6; ++step) {
    const auto x = torch::rand({batch, 1, 28, 28});
    const auto y = torch::randint(0, 10, {batch}, torch::kLong);
    replica.forward_backward({x, y});
    replica.optimizer_step();

    // By hand, in double.
    const CnnPass pass = cnn_by_hand(w, b, x, y);
    double vg = 0;
    std::vector<torch::Tensor> vs(4);
    for (int i = 0; i < 4; ++i) {
      const auto in = pass.inputs[i].slice(0, 0, keep);
      const auto og = pass.output_grads[i].slice(0, 0, keep);
      torch::Tensor a, g;
      if (i < 2) {
        const int64_t k = 5, oh = in.size(2) - k + 1, ow = in.size(3) - k + 1;
        const auto mean = in.mean(0);
        std::vector<torch::Tensor> parts;
        for (int64_t c = 0; c < in.size(1); ++c)
          for (int64_t ky = 0; ky < k; ++ky)
            for (int64_t kx = 0; kx < k; ++kx)
              parts.push_back(mean[c].slice(0, ky, ky + oh).slice(1, kx, kx + ow).mean().reshape({1}));
        a = torch::cat(parts);
        g = og.sum({0, 2, 3}) / static_cast<double>(keep * og.size(2) * og.size(3));
      } else {
        a = in.sum(0) / static_cast<double>(keep);
        g = og.sum(0) / static_cast<double>(keep);
      }
      a = torch::cat({a, torch::ones({1}, torch::kDouble)});
      ra[i] = step == 0 ? a : (1 - decay) * ra[i] + decay * a;
      rg[i] = step == 0 ? g : (1 - decay) * rg[i] + decay * g;
      const auto& grad = pass.grads[i];
      const double aa = ra[i].dot(ra[i]).item<double>(), ggn = rg[i].dot(rg[i]).item<double>();
      const double ag = rg[i].dot(grad.mv(ra[i])).item<double>();
      vs[i] = (grad - ag / (aa * ggn + damping) * torch::outer(rg[i], ra[i])) / damping;
      vg += (vs[i] * grad).sum().item<double>() * lr * lr;
    }
    sgd.step(w, b, vs, vg > 0 ? std::min(1.0, std::sqrt(kl / vg)) : 1.0, step == 0);
  }
  torch::set_default_dtype(default_dtype);
  expect_parameters(*model, w, b, 1e-10, 1e-12);
}

Scenario eva_ddp(int nodes, bool train = true, const std::string& algorithm = "{name: ddp}") {
  return parse_scenario(R"(
name: eva_ddp
seed: 5
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
network: {backend: analytical}
workload: {model: cnn, batch_size: 32, steps: 4, eval_every: 4, eval_samples: 100, train: )" +
                            (train ? "true" : "false") + R"(}
optimizer: {name: eva, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}
algorithm: )" + algorithm + R"(
compute: {model: fixed, step_time: 10ms}
)",
                        "eva_ddp");
}

// DDP with Eva sends, every step, each layer's a (d_a = inputs, + 1 for the bias) as its
// forward starts and its g (d_g = outputs) as its backward ends, fp32, beside the gradient's
// buckets; written out here for the CNN's four layers. Slips caught: the bias's 1 left out of
// d_a, a Conv2d's d_a without its kernel, a's sent at the end of backward, a layer missed.
TEST(Eva, DdpStepSendsEachLayersVectorsWhereTheReferenceDoes) {
  const Scenario s = eva_ddp(2, false);
  const ModelShapes shapes = model_shapes(s);
  auto ddp = make_algorithm(s, {1, 1}, shapes.shapes, {{1}, {0}}, {}, shapes.second_order);
  const StepPlan plan = ddp->projected_step(0, 0);
  // name, d_a, d_g, the weight's trainable index (conv1.weight 0, conv1.bias 1, conv2.weight 2, ...).
  struct Layer {
    int64_t d_a, d_g;
    int weight;
  };
  const std::vector<Layer> layers = {
      {1 * 5 * 5 + 1, 16, 0}, {16 * 5 * 5 + 1, 32, 2}, {32 * 4 * 4 + 1, 128, 4}, {128 + 1, 10, 6}};
  std::vector<const CommOp*> a_ops, g_ops;  // forward order
  int64_t gradient_elements = 0;
  for (const auto& op : plan.comm) {
    EXPECT_EQ(op.kind, CommKind::AllReduce);
    EXPECT_EQ(op.bytes_per_element, 4);
    EXPECT_EQ(op.delay, 0);
    if (op.tag.rfind("eva.a.", 0) == 0)
      a_ops.push_back(&op);
    else if (op.tag.rfind("eva.g.", 0) == 0)
      g_ops.insert(g_ops.begin(), &op);  // backward: last layer first
    else
      gradient_elements += op.buffer.numel();
  }
  EXPECT_EQ(gradient_elements, 416 + 12832 + 65664 + 1290);
  ASSERT_EQ(a_ops.size(), 4u);
  ASSERT_EQ(g_ops.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a_ops[i]->buffer.numel(), layers[i].d_a) << i;
    EXPECT_EQ(a_ops[i]->after_forward, layers[i].weight) << i;
    EXPECT_EQ(a_ops[i]->after_gradient, -1) << i;
    EXPECT_EQ(g_ops[i]->buffer.numel(), layers[i].d_g) << i;
    EXPECT_EQ(g_ops[i]->after_gradient, layers[i].weight) << i;
    EXPECT_EQ(g_ops[i]->after_forward, -1) << i;
  }
  // Issue order: the a's first (forward, first layer first), then backward's last layer first.
  EXPECT_EQ(plan.comm.front().tag, "eva.a.0");
  EXPECT_EQ(plan.comm[3].tag, "eva.a.3");
  size_t g3 = 0, g0 = 0;
  for (size_t k = 0; k < plan.comm.size(); ++k) {
    if (plan.comm[k].tag == "eva.g.3") g3 = k;
    if (plan.comm[k].tag == "eva.g.0") g0 = k;
  }
  EXPECT_LT(g3, g0);
}

// Two replicas under Eva stepped by the reference's protocol: each trains on its own batch,
// then both take the mean gradient and the mean of their running vectors (its allreduce with
// Average), then precondition and step.
std::vector<std::unique_ptr<Replica>> eva_replicas_by_hand(const Scenario& s, const Dataset& data) {
  auto samplers = make_samplers(s, data);
  std::vector<std::unique_ptr<Replica>> hand;
  for (int n = 0; n < 2; ++n)
    hand.push_back(std::make_unique<Replica>(make_model(s, n), optimizer_config(s), samplers[n], torch::kCPU));
  for (int step = 0; step < s.workload.steps; ++step) {
    for (auto& r : hand) r->forward_backward(r->next_batch(data, s.workload.batch_size));
    auto mean = [](torch::Tensor& x, torch::Tensor& y) {
      auto m = (x + y) / 2;
      x.copy_(m);
      y.copy_(m);
    };
    mean(hand[0]->gradients(), hand[1]->gradients());
    auto* e0 = dynamic_cast<Eva*>(hand[0]->preconditioner());
    auto* e1 = dynamic_cast<Eva*>(hand[1]->preconditioner());
    for (size_t i = 0; i < 4; ++i) {
      mean(e0->vector_a(i), e1->vector_a(i));
      mean(e0->vector_g(i), e1->vector_g(i));
    }
    for (auto& r : hand) r->optimizer_step();
  }
  return hand;
}

// Two nodes under DDP with Eva, through the engine, equal two replicas stepped here by hand: each
// trains on its own batch, then both take the mean gradient and the mean of their running
// vectors (the reference's allreduce with Average), then precondition and step. Together with
// the single-node re-implementation above, this holds the distributed Eva to the reference.
// Bytes: with two nodes a ring all-reduce sends each rank its whole vector once, so a node
// sends 4 x (gradient + sum of d_a + d_g) bytes a step. Slips caught: the update before the
// statistics arrive (or after the first bucket), vectors summed and not averaged, a layer's
// vectors not sent.
TEST(Eva, DdpEqualsReplicasAveragingGradientsAndVectorsByHand) {
  const Scenario s = eva_ddp(2);
  const Dataset data = load_dataset(s);
  MemoryRecorder rec;
  Engine engine(s, data);
  const RunSummary summary = engine.run(rec);
  ASSERT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
  const double per_step = 4.0 * ((416 + 12832 + 65664 + 1290) + (26 + 16 + 401 + 32 + 513 + 128 + 129 + 10));
  EXPECT_EQ(summary.total_bytes, static_cast<uint64_t>(per_step * 2 * s.workload.steps));

  const auto hand = eva_replicas_by_hand(s, data);
  for (int n = 0; n < 2; ++n) {
    const auto got = flatten_parameters(engine.replicas()[n]->model());
    const auto want = flatten_parameters(hand[n]->model());
    EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-7)) << n << ": " << (got - want).abs().max().item<double>();
  }
}

// --- K-FAC ---

// im2col by slices: [B, C, H, W] -> [B x positions, C x kh x kw] (channel-major, then kh, kw),
// unpadded, stride 1.
torch::Tensor patches_by_slices(const torch::Tensor& x, int64_t k) {
  const int64_t oh = x.size(2) - k + 1, ow = x.size(3) - k + 1;
  std::vector<torch::Tensor> columns;
  for (int64_t c = 0; c < x.size(1); ++c)
    for (int64_t ky = 0; ky < k; ++ky)
      for (int64_t kx = 0; kx < k; ++kx) columns.push_back(x.select(1, c).slice(1, ky, ky + oh).slice(2, kx, kx + ow));
  return torch::stack(columns, -1).reshape({-1, static_cast<int64_t>(columns.size())});
}

// A Linear layer over a sequence and a padded, strided Conv2d: the factors by loops over samples
// and positions. Linear: A = sum over samples of [mean_t x, 1][mean_t x, 1]^T / B, G = B sum of
// (mean_t g)(mean_t g)^T. Conv2d: every patch with a 1 appended, divided by the positions S,
// A = sum over B S patches of p p^T / B; G = sum over B S rows of (B S g)(B S g)^T / (B S).
// Slips caught: G not rescaled by the batch (or by B S), the bias's 1 not divided by S, positions
// summed instead of averaged for a sequence.
TEST(Kfac, FactorsOfASequenceLinearAndAPaddedStridedConvByHand) {
  torch::manual_seed(9);
  LayerTap lin;
  lin.weight = torch::randn({3, 4});
  lin.bias = torch::randn({3});
  lin.input = torch::randn({5, 2, 4});
  lin.output_grad = torch::randn({5, 2, 3});
  auto A = torch::zeros({5, 5}, torch::kDouble), G = torch::zeros({3, 3}, torch::kDouble);
  for (int64_t n = 0; n < 5; ++n) {
    auto a = torch::cat({lin.input[n].mean(0), torch::ones({1})}).to(torch::kDouble);
    auto g = lin.output_grad[n].mean(0).to(torch::kDouble);
    A += torch::outer(a, a) / 5.0;
    G += torch::outer(g, g) * 5.0;
  }
  EXPECT_TRUE(torch::allclose(kfac_factor_a(lin).to(torch::kDouble), A, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(kfac_factor_g(lin).to(torch::kDouble), G, 1e-4, 1e-5));

  LayerTap conv;
  conv.weight = torch::randn({2, 3, 3, 2});
  conv.bias = torch::randn({2});
  conv.kernel = {3, 2};
  conv.stride = {2, 1};
  conv.padding = {1, 0};
  conv.input = torch::randn({4, 3, 5, 4});
  const int64_t oh = 3, ow = 3, S = oh * ow, B = 4;
  conv.output_grad = torch::randn({B, 2, oh, ow});
  const auto x = conv.input.to(torch::kDouble);
  auto xa = x.accessor<double, 4>();
  auto CA = torch::zeros({3 * 3 * 2 + 1, 3 * 3 * 2 + 1}, torch::kDouble), CG = torch::zeros({2, 2}, torch::kDouble);
  const auto og = conv.output_grad.to(torch::kDouble);
  for (int64_t n = 0; n < B; ++n)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        auto p = torch::zeros({3 * 3 * 2 + 1}, torch::kDouble);
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 2; ++kx) {
              const int64_t iy = oy * 2 - 1 + ky, ix = ox + kx;
              if (iy >= 0 && iy < 5 && ix >= 0 && ix < 4) p[(c * 3 + ky) * 2 + kx] = xa[n][c][iy][ix];
            }
        p[3 * 3 * 2] = 1;
        p = p / static_cast<double>(S);
        CA += torch::outer(p, p) / static_cast<double>(B);
        const auto g = og.select(0, n).select(1, oy).select(1, ox) * static_cast<double>(B * S);
        CG += torch::outer(g, g) / static_cast<double>(B * S);
      }
  EXPECT_TRUE(torch::allclose(kfac_factor_a(conv).to(torch::kDouble), CA, 1e-5, 1e-7));
  EXPECT_TRUE(torch::allclose(kfac_factor_g(conv).to(torch::kDouble), CG, 1e-4, 1e-5));
}

// One K-FAC step on a 2 -> 2 Linear with a bias, worked by hand from the reference's update
// (lzhangbv/kfac_pytorch, inverse and inverse_dp). W = b = 0, so the softmax is (1/2, 1/2) on
// every sample; node 0's batch is x = (1,0) with label 0 and x = (0,1) with label 1, node 1's the
// same with x doubled. The batch-mean cross-entropy's output gradients are (p - y) / B:
// g = (-1/4, 1/4) and (1/4, -1/4) on both nodes; grad W = g^T x: [[-1/4, 1/4], [1/4, -1/4]]
// (node 1: twice that), grad b = 0. Then, with lambda = 0.01, kappa = 0.001, lr = 0.1:
//   A = 0.05 I + 0.95 a^T a / B with a = [x, 1]; G = 0.05 I + 0.95 B g^T g = 0.05 I + 0.95 [[1/4,-1/4],[-1/4,1/4]];
//   pi = sqrt((tr A / 3) / (tr G / 2)); A += 0.1 pi I; G += 0.1 / pi I;
//   grad's rows lie along (-1, 1, 0), an eigenvector of a^T a / B (node 0: 1/2, averaged: 5/4),
//   its columns along (1, -1), one of B g^T g (1/2), so v = grad / ((eA + 0.1 pi)(eG + 0.1 / pi));
//   nu = min(1, sqrt(kappa / |sum v . grad lr^2|)), and the gradient becomes nu v.
// Slips caught: the decay on the old factor (v00 -0.216 instead of -0.624), the damping on the
// product of the factors (-0.875), the lr left out of the clip (nu 0.040), pi upside down, the bias
// column or G's factor B dropped (each moves pi), the damping added to a copy (step 2's A00 0.50125,
// not 0.508958), and under DP-KFAC the owner's factors taken from the whole fleet's batch.
TEST(Kfac, OneStepOfALinearLayerWorkedByHand) {
  const double lambda = 0.01, kappa = 0.001, lr = 0.1;
  auto tap = [](double scale, double grad_scale) {
    LayerTap t;
    t.name = "linear";
    t.weight = torch::zeros({2, 2}, torch::kDouble).requires_grad_();
    t.bias = torch::zeros({2}, torch::kDouble).requires_grad_();
    t.weight.mutable_grad() = torch::tensor({{-0.25, 0.25}, {0.25, -0.25}}, torch::kDouble) * grad_scale;
    t.bias.mutable_grad() = torch::zeros({2}, torch::kDouble);
    t.input = torch::tensor({{1.0, 0.0}, {0.0, 1.0}}, torch::kDouble) * scale;
    t.output_grad = torch::tensor({{-0.25, 0.25}, {0.25, -0.25}}, torch::kDouble);
    return t;
  };
  // v00 and nu by hand for an A whose eigenvalue along grad's rows is `e_a`, of trace `tr_a`, and
  // a gradient whose entries are all +-`grad`.
  auto by_hand = [&](double e_a, double tr_a, double grad) {
    const double eA = 0.05 + 0.95 * e_a, eG = 0.05 + 0.95 * 0.5, tr_g = 0.1 + 0.95 * 0.5;
    const double pi = std::sqrt((tr_a / 3) / (tr_g / 2));
    const double v00 = -grad / ((eA + std::sqrt(lambda) * pi) * (eG + std::sqrt(lambda) / pi));
    const double nu = std::min(1.0, std::sqrt(kappa / (4 * grad * std::abs(v00) * lr * lr)));
    return std::pair{v00, nu};
  };
  KfacOptions options;
  options.damping = lambda;
  options.kl_clip = kappa;

  {  // one process: tr A = 0.15 + 0.95 * 2
    SCOPED_TRACE("K-FAC, one node");
    LayerTap t = tap(1, 1);
    Kfac kfac({&t}, options);
    kfac.precondition(lr);
    const auto [v00, nu] = by_hand(0.5, 0.15 + 0.95 * 2, 0.25);
    EXPECT_NEAR(v00, -0.624037, 1e-6);  // the review's hand figures (python3 on the formulas above)
    EXPECT_NEAR(nu, 0.400309, 1e-6);
    const auto g = t.weight.grad();
    EXPECT_NEAR(g[0][0].item<double>(), nu * v00, 1e-12);
    EXPECT_NEAR(g[0][1].item<double>(), -nu * v00, 1e-12);
    EXPECT_NEAR(g[1][0].item<double>(), -nu * v00, 1e-12);
    EXPECT_NEAR(t.bias.grad().abs().max().item<double>(), 0.0, 1e-15);
    // Step 2 on the same batch: the damped factor decays, 0.05 (0.525 + 0.1 pi) + 0.95 / 2.
    const double pi = std::sqrt(((0.15 + 0.95 * 2) / 3) / ((0.1 + 0.95 * 0.5) / 2));
    t.weight.mutable_grad() = torch::tensor({{-0.25, 0.25}, {0.25, -0.25}}, torch::kDouble);
    kfac.compute_factors();
    EXPECT_NEAR(kfac.factor_a(0)[0][0].item<double>(), 0.05 * (0.525 + 0.1 * pi) + 0.95 * 0.5, 1e-12);
    EXPECT_NEAR(kfac.factor_a(0)[0][0].item<double>(), 0.508958, 1e-6);
  }
  {  // DP-KFAC on two nodes: node 0 owns the layer, its factors from its own batch, the gradient
     // the average of both nodes' (-0.375 and 0.375)
    SCOPED_TRACE("DP-KFAC, the owner");
    options.distributed_preconditioning = true;
    LayerTap t = tap(1, 1.5);
    Kfac kfac({&t}, options, 2, 0);
    kfac.precondition(lr);
    const auto [v00, nu] = by_hand(0.5, 0.15 + 0.95 * 2, 0.375);
    EXPECT_NEAR(v00, -0.936055, 1e-6);
    EXPECT_NEAR(nu, 0.266872, 1e-6);
    EXPECT_NEAR(t.weight.grad()[0][0].item<double>(), nu * v00, 1e-12);
    options.distributed_preconditioning = false;
  }
  {  // D-KFAC on two nodes: the running factors all-reduced (averaged) before the owner inverts.
     // Averaged a^T a / B = [[5/4, 0, 3/4], [0, 5/4, 3/4], [3/4, 3/4, 1]]: trace 7/2, eigenvalue 5/4.
    SCOPED_TRACE("D-KFAC, the owner");
    LayerTap t0 = tap(1, 1.5), t1 = tap(2, 1.5);
    Kfac k0({&t0}, options, 2, 0), k1({&t1}, options, 2, 1);
    k0.compute_factors();
    k1.compute_factors();
    for (auto part : {&Kfac::factor_a, &Kfac::factor_g}) {
      const auto mean = ((k0.*part)(0) + (k1.*part)(0)) / 2;
      (k0.*part)(0) = mean.clone();
      (k1.*part)(0) = mean.clone();
    }
    k0.invert();
    k0.compute_preconditioned();
    k0.update_gradients(lr);
    const auto [v00, nu] = by_hand(1.25, 0.15 + 0.95 * 3.5, 0.375);
    EXPECT_NEAR(v00, -0.453600, 1e-6);
    EXPECT_NEAR(nu, 0.383370, 1e-6);
    EXPECT_NEAR(t0.weight.grad()[0][0].item<double>(), nu * v00, 1e-12);
  }
  {  // DP-KFAC's eigen variant (kfac_preconditioner_eigen_dp.py): the owner's factors as DP-KFAC's,
     // eigendecomposed; grad lies on eigenvalues 0.525 of A and of G, so v = grad / (0.525^2 +
     // lambda), no pi. Slip caught: inverse-style damping (sqrt(lambda) pi on each factor) in
     // place of the product's; the node that owns no layer keeps a zero direction until the
     // broadcast (and folds no factors in, which would need its batch's factors).
    SCOPED_TRACE("DP-KFAC eigen, the owner and the other node");
    options.distributed_preconditioning = true;
    options.variant = KfacVariant::Eigen;
    LayerTap t0 = tap(1, 1.5), t1 = tap(2, 1.5);
    Kfac k0({&t0}, options, 2, 0), k1({&t1}, options, 2, 1);
    EXPECT_EQ(k1.owner_a(0), 0);
    EXPECT_EQ(k1.owner_g(0), 0);
    k0.precondition(lr);
    k1.precondition(lr);
    const double v00 = -0.375 / (0.525 * 0.525 + lambda);
    const double nu = std::sqrt(kappa / (4 * 0.375 * std::abs(v00) * lr * lr));
    EXPECT_NEAR(v00, -1.312910, 1e-6);
    EXPECT_NEAR(nu, 0.225339, 1e-6);
    EXPECT_NEAR(t0.weight.grad()[0][0].item<double>(), nu * v00, 1e-12);
    EXPECT_EQ(t1.weight.grad().abs().max().item<double>(), 0.0);
    EXPECT_FALSE(k1.factor_a(0).defined());
  }
}

// K-FAC on the CNN in one process, both variants at the reference's defaults (damping 0.001,
// kl_clip 0.001, decay 0.95) under SGD (lr 0.1, momentum 0.9, weight decay 5e-4), four steps,
// against the steps written out here: factors from slices, running averages started at the
// identity, inverse: pi, the damping added into the running factors (so it stays in them),
// explicit inverses; eigen: eigenvalues at or under 1e-10 zeroed, damping in the denominator;
// KL clipping by |sum v . grad lr^2|. Slips caught: the average started from the first factor,
// the damping added to a copy, pi upside down, G's batch scaling dropped.
TEST(Kfac, CnnStepsAsAPlainReimplementationInBothVariants) {
  for (const KfacVariant variant : {KfacVariant::Inverse, KfacVariant::Eigen}) {
    SCOPED_TRACE(variant == KfacVariant::Inverse ? "inverse" : "eigen");
    const double lr = 0.1, momentum = 0.9, weight_decay = 5e-4, damping = 0.001, kl = 0.001, decay = 0.95;
    const int64_t batch = 16;
    const auto default_dtype = torch::get_default_dtype();
    torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
    torch::manual_seed(21);
    auto model = make_image_model("cnn", 10);
    std::vector<torch::Tensor> w, b;
    for (const auto& p : model->named_parameters())
      (p.key().find("bias") != std::string::npos ? b : w).push_back(p.value().detach().clone());
    OptimizerConfig config;
    config.name = OptimizerKind::Kfac;
    config.lr = lr;
    config.momentum = momentum;
    config.weight_decay = weight_decay;
    config.kfac.variant = variant;
    Replica replica(model, config, ShardSampler({0}, 0), torch::kCPU);

    std::vector<torch::Tensor> RA(4), RG(4);
    SgdByHand sgd{lr, momentum, weight_decay};
    for (int step = 0; step < 4; ++step) {
      const auto x = torch::rand({batch, 1, 28, 28});
      const auto y = torch::randint(0, 10, {batch}, torch::kLong);
      replica.forward_backward({x, y});
      replica.optimizer_step();

      const CnnPass pass = cnn_by_hand(w, b, x, y);
      const auto& ins = pass.inputs;
      double vg = 0;
      std::vector<torch::Tensor> vs(4);
      for (int i = 0; i < 4; ++i) {
        torch::Tensor a, g;
        if (i < 2) {
          const auto p = patches_by_slices(ins[i], 5);
          const double S = static_cast<double>(p.size(0) / batch);
          a = torch::cat({p, torch::ones({p.size(0), 1})}, 1) / S;
          g = pass.output_grads[i].permute({0, 2, 3, 1}).reshape({-1, pass.output_grads[i].size(1)}) * (batch * S);
          a = a.t().mm(a) / static_cast<double>(batch);
          g = g.t().mm(g) / static_cast<double>(g.size(0));
        } else {
          a = torch::cat({ins[i], torch::ones({batch, 1})}, 1);
          a = a.t().mm(a) / static_cast<double>(batch);
          g = pass.output_grads[i].t().mm(pass.output_grads[i]) * static_cast<double>(batch);
        }
        if (step == 0) {
          RA[i] = torch::eye(a.size(0));
          RG[i] = torch::eye(g.size(0));
        }
        RA[i] = (1 - decay) * RA[i] + decay * a;
        RG[i] = (1 - decay) * RG[i] + decay * g;
        const auto& grad = pass.grads[i];
        if (variant == KfacVariant::Inverse) {
          const double pi = std::sqrt((RA[i].trace().item<double>() / RA[i].size(0)) /
                                      (RG[i].trace().item<double>() / RG[i].size(0)));
          RA[i] = RA[i] + std::sqrt(damping) * pi * torch::eye(RA[i].size(0));  // kept in the running factor
          RG[i] = RG[i] + std::sqrt(damping) / pi * torch::eye(RG[i].size(0));
          vs[i] = torch::inverse(RG[i]).mm(grad).mm(torch::inverse(RA[i]));
        } else {
          auto [da, qa] = torch::linalg_eigh(RA[i]);
          auto [dg, qg] = torch::linalg_eigh(RG[i]);
          da = torch::where(da > 1e-10, da, torch::zeros_like(da));
          dg = torch::where(dg > 1e-10, dg, torch::zeros_like(dg));
          vs[i] = qg.mm(qg.t().mm(grad).mm(qa) / (torch::outer(dg, da) + damping)).mm(qa.t());
        }
        vg += (vs[i] * grad).sum().item<double>() * lr * lr;
      }
      sgd.step(w, b, vs, std::min(1.0, std::sqrt(kl / std::abs(vg))), step == 0);
    }
    torch::set_default_dtype(default_dtype);
    expect_parameters(*model, w, b, 1e-8, 1e-10);
  }
}

Scenario kfac_ddp(const std::string& optimizer, int nodes, bool train = true,
                  const std::string& algorithm = "{name: ddp}") {
  return parse_scenario(R"(
name: kfac_ddp
seed: 5
nodes: )" + std::to_string(nodes) +
                            R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
network: {backend: analytical}
workload: {model: cnn, batch_size: 32, steps: 3, eval_every: 3, eval_samples: 100, train: )" +
                            (train ? "true" : "false") + R"(}
optimizer: )" + optimizer + R"(
algorithm: )" + algorithm + R"(
compute: {model: flops, device: rtx4090}
)",
                        "kfac_ddp");
}

// The CNN's four layers: d_a (with the bias's 1) and d_g.
const std::vector<std::pair<int64_t, int64_t>> kCnnLayers = {{26, 16}, {401, 32}, {513, 128}, {129, 10}};

// The rounds after DDP's gradient, from the rules of kfac_pytorch, layer by layer at 4 and 8
// nodes: D-KFAC inverse all-reduces A and G (d^2 each) then broadcasts each direction (d_g d_a)
// from node m mod N; eigen at 8 nodes (more than the 4 layers) deals A to 2m and G to 2m + 1 and
// broadcasts Q (d^2) and the eigenvalues (d) of each; DP-KFAC only broadcasts directions.
// Slips caught: a factor sent as its triangle or vector, the wrong owner, DP-KFAC sending factors.
TEST(Kfac, DdpRoundsSendWhatTheReferenceSends) {
  auto rounds_of = [](const std::string& optimizer, int nodes, int step) {
    const Scenario s = kfac_ddp(optimizer, nodes, false);
    const ModelShapes shapes = model_shapes(s);
    auto ddp = make_algorithm(s, std::vector<int64_t>(nodes, 1), shapes.shapes, std::vector<std::vector<int>>(nodes),
                              {}, shapes.second_order);
    std::vector<Round> rounds;
    for (size_t r = 0;; ++r) {
      Round round = ddp->projected_round(1, step, r);
      if (round.comm.empty()) break;
      rounds.push_back(std::move(round));
    }
    return rounds;
  };
  const auto dkfac = rounds_of("{name: kfac}", 4, 0);
  ASSERT_EQ(dkfac.size(), 2u);
  ASSERT_EQ(dkfac[0].comm.size(), 8u);
  ASSERT_EQ(dkfac[1].comm.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const auto [da, dg] = kCnnLayers[i];
    EXPECT_EQ(dkfac[0].comm[2 * i].kind, CommKind::AllReduce);
    EXPECT_EQ(dkfac[0].comm[2 * i].buffer.numel(), da * da);
    EXPECT_EQ(dkfac[0].comm[2 * i + 1].buffer.numel(), dg * dg);
    EXPECT_EQ(dkfac[1].comm[i].kind, CommKind::Broadcast);
    EXPECT_TRUE(dkfac[1].comm[i].pipelined);  // NCCL's ring, as the reference's GPU tensors go
    EXPECT_EQ(dkfac[1].comm[i].buffer.numel(), dg * da);
    EXPECT_EQ(dkfac[1].comm[i].nodes.front(), static_cast<int>(i));  // layer m's owner: m mod 4
    EXPECT_EQ(dkfac[1].comm[i].nodes.size(), 4u);
  }
  // Node 1's compute: every layer's factor GEMMs in the first round (2 rows d^2, rows B S).
  double factor_flops = 0;
  const std::vector<int64_t> positions = {24 * 24, 8 * 8, 1, 1};
  for (size_t i = 0; i < 4; ++i)
    factor_flops += 2.0 * 32 * positions[i] *
                    (kCnnLayers[i].first * kCnnLayers[i].first + kCnnLayers[i].second * kCnnLayers[i].second);
  EXPECT_DOUBLE_EQ(dkfac[0].work.flops, factor_flops);

  const auto eigen = rounds_of("{name: kfac, variant: eigen}", 8, 0);
  ASSERT_EQ(eigen.size(), 2u);
  ASSERT_EQ(eigen[1].comm.size(), 16u);
  for (size_t i = 0; i < 4; ++i) {
    const auto [da, dg] = kCnnLayers[i];
    EXPECT_EQ(eigen[1].comm[4 * i].buffer.numel(), da * da);
    EXPECT_EQ(eigen[1].comm[4 * i].nodes.front(), static_cast<int>(2 * i));
    EXPECT_EQ(eigen[1].comm[4 * i + 1].buffer.numel(), da);
    EXPECT_EQ(eigen[1].comm[4 * i + 2].buffer.numel(), dg * dg);
    EXPECT_EQ(eigen[1].comm[4 * i + 2].nodes.front(), static_cast<int>(2 * i + 1));
    EXPECT_EQ(eigen[1].comm[4 * i + 3].buffer.numel(), dg);
  }
  const auto dp = rounds_of("{name: dp_kfac}", 4, 0);
  ASSERT_EQ(dp.size(), 1u);
  ASSERT_EQ(dp[0].comm.size(), 4u);
  for (const auto& op : dp[0].comm) EXPECT_EQ(op.kind, CommKind::Broadcast);
  // kfac_update_freq 2: step 1 inverts nothing, so eigen has no broadcasts then.
  EXPECT_EQ(rounds_of("{name: kfac, variant: eigen, kfac_update_freq: 2}", 4, 1).size(), 1u);
}

// K-FAC alone on a node (under the local algorithms) is charged, each step, every layer's
// factors (2 rows d^2 each, rows B S), inversions (d^3 each) and directions (2 d_g d_a (d_g +
// d_a)), written out here for the CNN; with kfac_update_freq 2, odd steps invert nothing. And
// through the engine: DiLoCo's step with K-FAC takes that much longer than with SGD. Slips
// caught: the compute dropped outside DDP, the inversions charged every step.
TEST(Kfac, AloneOnANodeEachStepIsCharged) {
  const std::vector<int64_t> positions = {24 * 24, 8 * 8, 1, 1};
  std::vector<SecondOrderLayer> layers;
  double factors = 0, inversions = 0, directions = 0;
  for (size_t i = 0; i < 4; ++i) {
    const auto [da, dg] = kCnnLayers[i];
    layers.push_back({"l" + std::to_string(i), 0, da, dg, positions[i]});
    factors += 2.0 * 32 * positions[i] * (da * da + dg * dg);
    inversions += static_cast<double>(da) * da * da + static_cast<double>(dg) * dg * dg;
    directions += 2.0 * dg * da * (dg + da);
  }
  KfacOptions o;
  EXPECT_DOUBLE_EQ(kfac_local_work(layers, o, 32, 0).flops, factors + inversions + directions);
  o.kfac_update_freq = 2;
  EXPECT_DOUBLE_EQ(kfac_local_work(layers, o, 32, 1).flops, factors + directions);

  auto step_time = [](const std::string& optimizer) {
    const Scenario s = kfac_ddp(optimizer, 2, false, "{name: diloco, H: 2}");
    MemoryRecorder rec;
    Engine engine(s, Dataset{});
    const RunSummary summary = engine.run(rec);
    EXPECT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
    return summary.projected_time_s / summary.steps_completed;
  };
  EXPECT_GT(step_time("{name: kfac, momentum: 0.9}"), step_time("{name: sgd, momentum: 0.9}"));
}

// DP-KFAC's eigen variant on 4 nodes, the CNN's layers: node 0 owns layer 0 alone, and its one
// round charges that layer's factors from its batch (2 B S (d_a^2 + d_g^2)), two
// eigendecompositions (9 d^3 each, as D-KFAC's eigen round) and the eigen preconditioning
// (2 x 2 d_g d_a (d_g + d_a)), and nothing for the layers it does not own. Slips caught: the
// inverse's d^3 charged for an eigendecomposition, D-KFAC's every-layer preconditioning added
// in the last round.
TEST(Kfac, DpKfacEigenChargesOnlyItsOwnersWork) {
  const std::vector<int64_t> positions = {24 * 24, 8 * 8, 1, 1};
  std::vector<SecondOrderLayer> layers;
  for (size_t i = 0; i < 4; ++i)
    layers.push_back({"l" + std::to_string(i), 0, kCnnLayers[i].first, kCnnLayers[i].second, positions[i]});
  KfacOptions o;
  o.distributed_preconditioning = true;
  o.variant = KfacVariant::Eigen;
  ASSERT_EQ(kfac_rounds(o, 4, 0), std::vector<KfacRound>{KfacRound::Directions});
  const double da = 26, dg = 16, batch = 32;
  const double want =
      2 * batch * 576 * (da * da + dg * dg) + 9 * (da * da * da + dg * dg * dg) + 2 * (2 * dg * da * (dg + da));
  EXPECT_DOUBLE_EQ(kfac_round(KfacRound::Directions, true, layers, o, 4, 0, 32, 0, nullptr).work.flops, want);
}

// Two replicas under K-FAC (`name` kfac, inverse) or DP-KFAC stepped by the reference's
// protocol: mean gradient; D-KFAC: each node's factors, averaged, then the owner of layer m
// (node m mod 2) inverts it, and its direction replaces the other node's; DP-KFAC: only the
// owner folds its own batch's factors in, and its direction is broadcast.
std::vector<std::unique_ptr<Replica>> kfac_replicas_by_hand(const Scenario& s, const Dataset& data,
                                                            const std::string& name) {
  auto samplers = make_samplers(s, data);
  std::vector<std::unique_ptr<Replica>> hand;
  for (int n = 0; n < 2; ++n)
    hand.push_back(std::make_unique<Replica>(make_model(s, n), optimizer_config(s, n), samplers[n], torch::kCPU));
  auto mean = [](torch::Tensor& x, torch::Tensor& y) {
    auto m = (x + y) / 2;
    x.copy_(m);
    y.copy_(m);
  };
  for (int step = 0; step < s.workload.steps; ++step) {
    for (auto& r : hand) r->forward_backward(r->next_batch(data, s.workload.batch_size));
    mean(hand[0]->gradients(), hand[1]->gradients());
    std::vector<Kfac*> k = {dynamic_cast<Kfac*>(hand[0]->preconditioner()),
                            dynamic_cast<Kfac*>(hand[1]->preconditioner())};
    for (auto* kf : k) kf->compute_factors();
    if (name == "kfac")
      for (size_t i = 0; i < 4; ++i) {
        mean(k[0]->factor_a(i), k[1]->factor_a(i));
        mean(k[0]->factor_g(i), k[1]->factor_g(i));
      }
    for (auto* kf : k) {
      kf->invert();
      kf->compute_preconditioned();
    }
    for (size_t i = 0; i < 4; ++i) k[1 - i % 2]->direction(i).copy_(k[i % 2]->direction(i));
    for (int n = 0; n < 2; ++n) {
      k[n]->update_gradients(hand[n]->learning_rate());
      hand[n]->optimizer().step();
    }
  }
  return hand;
}

// Two nodes under DDP, through the engine, against two replicas stepped here by the reference's
// protocol: mean gradient; D-KFAC: each node's factors, averaged, then the owner of layer m
// (node m mod 2) inverts it, and its direction replaces the other node's; DP-KFAC: only the
// owner folds its own batch's factors in, and its direction is broadcast. Bytes, node by node:
// a two-node ring all-reduce sends each rank its whole vector; a broadcast sends from the root.
// Slips caught: factors not averaged, the non-owner's direction kept, DP-KFAC's non-owners folding
// factors in, the update before the broadcasts.
TEST(Kfac, DdpEqualsReplicasFollowingTheReferenceProtocolByHand) {
  for (const auto& [name, variant] :
       {std::pair<std::string, std::string>{"kfac", ""}, {"dp_kfac", ""}, {"dp_kfac", "variant: eigen, "}}) {
    SCOPED_TRACE(name + " " + variant);
    const Scenario s = kfac_ddp("{name: " + name + ", " + variant + "lr: 0.1, momentum: 0.9}", 2);
    const Dataset data = load_dataset(s);
    MemoryRecorder rec;
    Engine engine(s, data);
    const RunSummary summary = engine.run(rec);
    ASSERT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
    double factors = 0, directions = 0;
    for (const auto& [da, dg] : kCnnLayers) {
      factors += static_cast<double>(da * da + dg * dg);
      directions += static_cast<double>(da * dg);
    }
    const double gradient = 80202;
    const double per_step = 2 * 4 * gradient + (name == "kfac" ? 2 * 4 * factors : 0) + 4 * directions;
    EXPECT_EQ(summary.total_bytes, static_cast<uint64_t>(per_step * s.workload.steps));

    const auto hand = kfac_replicas_by_hand(s, data, name);
    for (int n = 0; n < 2; ++n) {
      const auto got = flatten_parameters(engine.replicas()[n]->model());
      const auto want = flatten_parameters(hand[n]->model());
      EXPECT_TRUE(torch::equal(got, want)) << n << ": " << (got - want).abs().max().item<double>();
    }
    // The replicas agree: every node applied the owners' directions.
    EXPECT_TRUE(torch::equal(flatten_parameters(engine.replicas()[0]->model()),
                             flatten_parameters(engine.replicas()[1]->model())));
  }
}

// --- with DeAR ---

// DeAR with bucket_mb 0.1 groups the CNN as dear_groups' rule does: conv1 and conv2 (416 + 12832
// elements, 0.05 MiB) under 0.1 MiB, fc1 (65664) alone, fc2 (1290) alone; each padded to a
// multiple of N by N - n mod N (a whole N when it divides).
int64_t cnn_dear_padded(int nodes) {
  int64_t total = 0;
  for (int64_t n : {416 + 12832, 65664, 1290}) total += n + (nodes - n % nodes);
  return total;
}

// A second-order optimizer under DeAR: the step's reduce-scatters (and Eva's vectors) during the
// passes as under DDP, then a round of all-gathers that the step awaits (none gates the next
// forward: the update needs every layer at once), then K-FAC's rounds as DDP's, written out at 4
// nodes. SGD keeps DeAR's gates. Slips caught: a gate left on an all-gather (the update would run
// group by group), K-FAC's rounds before the all-gathers, Eva's vectors not sent under DeAR.
TEST(SecondOrderDear, TheGatherThenTheOptimizersRounds) {
  auto plan_of = [](const std::string& optimizer, int nodes) {
    const Scenario s = kfac_ddp(optimizer, nodes, false, "{name: dear, bucket_mb: 0.1}");
    const ModelShapes shapes = model_shapes(s);
    auto dear = make_algorithm(s, std::vector<int64_t>(nodes, 1), shapes.shapes, std::vector<std::vector<int>>(nodes),
                               {0, 0, 1, 1, 2, 2, 3, 3}, shapes.second_order);  // each tensor's layer
    std::vector<Round> rounds;
    Round step;
    step.comm = dear->projected_step(1, 0).comm;
    rounds.push_back(std::move(step));
    for (size_t r = 0;; ++r) {
      Round round = dear->projected_round(1, 0, r);
      if (round.comm.empty()) break;
      rounds.push_back(std::move(round));
    }
    return rounds;
  };
  const auto kfac = plan_of("{name: kfac}", 4);
  ASSERT_EQ(kfac.size(), 4u);  // the step, the all-gathers, the factors, the directions
  int64_t scattered = 0, gathered = 0;
  for (const auto& op : kfac[0].comm) {
    EXPECT_EQ(op.kind, CommKind::ReduceScatter);
    scattered += op.buffer.numel();
  }
  for (const auto& op : kfac[1].comm) {
    EXPECT_EQ(op.kind, CommKind::AllGather);
    EXPECT_EQ(op.before_forward, -1);
    gathered += op.buffer.numel();
  }
  EXPECT_EQ(kfac[0].comm.size(), 3u);
  EXPECT_EQ(scattered, cnn_dear_padded(4));
  EXPECT_EQ(gathered * 4, cnn_dear_padded(4));
  ASSERT_EQ(kfac[2].comm.size(), 8u);
  ASSERT_EQ(kfac[3].comm.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const auto [da, dg] = kCnnLayers[i];
    EXPECT_EQ(kfac[2].comm[2 * i].buffer.numel(), da * da);
    EXPECT_EQ(kfac[2].comm[2 * i + 1].buffer.numel(), dg * dg);
    EXPECT_EQ(kfac[3].comm[i].kind, CommKind::Broadcast);
    EXPECT_EQ(kfac[3].comm[i].buffer.numel(), dg * da);
  }
  const auto sgd = plan_of("{name: sgd}", 4);
  ASSERT_EQ(sgd.size(), 2u);
  for (const auto& op : sgd[1].comm) EXPECT_GE(op.before_forward, 0);

  const auto eva = plan_of("{name: eva}", 4);
  ASSERT_EQ(eva.size(), 2u);  // no rounds of its own
  ASSERT_EQ(eva[0].comm.size(), 3u + 8u);
  EXPECT_EQ(eva[0].comm.front().tag, "eva.a.0");
  EXPECT_EQ(eva[0].comm.front().after_forward, 0);
  for (const auto& op : eva[1].comm) EXPECT_EQ(op.before_forward, -1);
}

// Two nodes under DeAR with each second-order optimizer, through the engine, equal the replicas
// stepped by the reference's protocol above (DeAR's reduce-scatter and all-gather make DDP's
// mean gradient). Bytes, node by node: at two nodes a ring reduce-scatter and an all-gather
// each send half of the padded groups; Eva's vectors and K-FAC's factors and directions as
// under DDP. Slips caught: the update before the all-gathers, the optimizer's messages dropped
// under DeAR, the mean gradient taken before every group arrived.
TEST(SecondOrderDear, EqualsReplicasFollowingTheReferenceProtocolByHand) {
  const std::string dear = "{name: dear, bucket_mb: 0.1}";
  double factors = 0, directions = 0, vectors = 0;
  for (const auto& [da, dg] : kCnnLayers) {
    factors += static_cast<double>(da * da + dg * dg);
    directions += static_cast<double>(da * dg);
    vectors += static_cast<double>(da + dg);
  }
  const double gradient = 2 * 4 * static_cast<double>(cnn_dear_padded(2));  // both nodes' halves
  for (const std::string name : {"eva", "kfac", "dp_kfac"}) {
    SCOPED_TRACE(name);
    const Scenario s = name == "eva" ? eva_ddp(2, true, dear)
                                     : kfac_ddp("{name: " + name + ", lr: 0.1, momentum: 0.9}", 2, true, dear);
    const Dataset data = load_dataset(s);
    MemoryRecorder rec;
    Engine engine(s, data);
    const RunSummary summary = engine.run(rec);
    ASSERT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
    const double per_step = gradient + (name == "eva" ? 2 * 4 * vectors : 0) + (name == "kfac" ? 2 * 4 * factors : 0) +
                            (name == "eva" ? 0 : 4 * directions);
    EXPECT_EQ(summary.total_bytes, static_cast<uint64_t>(per_step * s.workload.steps));
    const auto hand = name == "eva" ? eva_replicas_by_hand(s, data) : kfac_replicas_by_hand(s, data, name);
    for (int n = 0; n < 2; ++n) {
      const auto got = flatten_parameters(engine.replicas()[n]->model());
      const auto want = flatten_parameters(hand[n]->model());
      EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-7)) << n << ": " << (got - want).abs().max().item<double>();
    }
  }
}

// A projection of DDP or DeAR with each second-order optimizer (shapes only, no replica) sends
// the training run's messages at the same moments, round by round, at 4 nodes. Slips caught:
// projected_round out of step with next_round (DeAR's all-gathers counted as round 0 in one and
// not the other), Eva's vectors left out of a projection.
TEST(SecondOrderDear, ProjectionSendsWhatTrainingSends) {
  for (const std::string algorithm : {"{name: ddp}", "{name: dear, bucket_mb: 0.1}"}) {
    for (const std::string optimizer :
         {"{name: eva}", "{name: kfac}", "{name: kfac, variant: eigen}", "{name: dp_kfac}"}) {
      SCOPED_TRACE(algorithm + " " + optimizer);
      auto run = [&](bool train) {
        Scenario s =
            optimizer == "{name: eva}" ? eva_ddp(4, train, algorithm) : kfac_ddp(optimizer, 4, train, algorithm);
        s.workload.steps = 2;
        s.workload.eval_every = 2;
        s.compute.model = ComputeKind::Flops;
        s.compute.device = "rtx4090";
        const Dataset data = train ? load_dataset(s) : Dataset{};
        auto rec = std::make_unique<MemoryRecorder>();
        Engine engine(s, data);
        const RunSummary summary = engine.run(*rec);
        EXPECT_EQ(summary.status, testbed::RunStatus::Completed) << summary.error;
        return rec;
      };
      const auto trained = run(true), projected = run(false);
      ASSERT_EQ(projected->messages.size(), trained->messages.size());
      ASSERT_FALSE(trained->messages.empty());
      for (size_t i = 0; i < trained->messages.size(); ++i) {
        const MessageRecord &a = trained->messages[i], &b = projected->messages[i];
        EXPECT_TRUE(a.src == b.src && a.dst == b.dst && a.bytes == b.bytes && a.t_send == b.t_send && a.kind == b.kind)
            << i << ": " << a.kind << " at " << a.t_send << " against " << b.kind << " at " << b.t_send;
      }
    }
  }
}

// ResNet-50 (ImageNet form) as a second-order optimizer sees it, from torchvision's shapes: 54
// layers in forward order (the 7 x 7 stem, each bottleneck's 1 x 1, 3 x 3, 1 x 1 convolutions
// and, in each stage's first block, the shortcut's 1 x 1 projection, then the head), no bias but
// the head's, positions from the spatial sizes 112, 56, 28, 14, 7. Slips caught: a shortcut
// projection missed, a layer out of forward order, a convolution's positions taken before its
// stride.
TEST(SecondOrderLayers, ResNet50AsKfacSeesIt) {
  const ModelShapes shapes = shapes_of(*make_imagenet_model("resnet50", 1000));
  const auto& l = shapes.second_order;
  ASSERT_EQ(l.size(), 54u);
  auto expect = [&](size_t i, const std::string& name, int64_t d_a, int64_t d_g, int64_t positions) {
    SCOPED_TRACE(name);
    EXPECT_EQ(l[i].name, name);
    EXPECT_EQ(l[i].d_a, d_a);
    EXPECT_EQ(l[i].d_g, d_g);
    EXPECT_EQ(l[i].positions, positions);
    EXPECT_EQ(shapes.names[l[i].weight_tensor], name + ".weight");
  };
  expect(0, "conv1", 3 * 7 * 7, 64, 112 * 112);
  expect(1, "layer1.0.conv1", 64, 64, 56 * 56);
  expect(2, "layer1.0.conv2", 64 * 9, 64, 56 * 56);
  expect(3, "layer1.0.conv3", 64, 256, 56 * 56);
  expect(4, "layer1.0.downsample.0", 64, 256, 56 * 56);
  expect(5, "layer1.1.conv1", 256, 64, 56 * 56);
  expect(11, "layer2.0.conv1", 256, 128, 56 * 56);
  expect(12, "layer2.0.conv2", 128 * 9, 128, 28 * 28);  // the stride is in the 3 x 3
  expect(14, "layer2.0.downsample.0", 256, 512, 28 * 28);
  expect(52, "layer4.2.conv3", 512, 2048, 7 * 7);
  expect(53, "fc", 2048 + 1, 1000, 1);
  int64_t preconditioned = 0;
  for (const auto& layer : l) preconditioned += layer.d_a * layer.d_g;
  int64_t batch_norm = 0;
  for (size_t i = 0; i < shapes.names.size(); ++i)
    if (shapes.names[i].find("bn") != std::string::npos || shapes.names[i].find("downsample.1") != std::string::npos)
      batch_norm += elements(shapes.shapes[i]);
  EXPECT_EQ(preconditioned + batch_norm, shapes.trainable());  // every weight but batch norm's is preconditioned
}

}  // namespace
}  // namespace testbed
