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
#include "training/models.h"
#include "training/optimizers/eva.h"
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
  config.name = "eva";
  config.lr = lr;
  config.momentum = momentum;
  config.weight_decay = weight_decay;
  Replica replica(model, config, ShardSampler({0}, 0), torch::kCPU);

  std::vector<torch::Tensor> ra(4), rg(4), buf_w(4), buf_b(4);
  for (int step = 0; step < 6; ++step) {
    const auto x = torch::rand({batch, 1, 28, 28});
    const auto y = torch::randint(0, 10, {batch}, torch::kLong);
    replica.forward_backward({x, y});
    replica.optimizer_step();

    // By hand, in double.
    std::vector<torch::Tensor> ws, bs, outs, ins;
    for (int i = 0; i < 4; ++i) {
      ws.push_back(w[i].clone().requires_grad_());
      bs.push_back(b[i].clone().requires_grad_());
    }
    auto keep_out = [&](torch::Tensor o) {
      o.retain_grad();
      outs.push_back(o);
      return o;
    };
    auto h = x.to(torch::kDouble);
    ins.push_back(h);
    h = torch::max_pool2d(torch::relu(keep_out(torch::conv2d(h, ws[0], bs[0]))), 2);
    ins.push_back(h.detach());
    h = torch::max_pool2d(torch::relu(keep_out(torch::conv2d(h, ws[1], bs[1]))), 2).flatten(1);
    ins.push_back(h.detach());
    h = torch::relu(keep_out(h.mm(ws[2].t()) + bs[2]));
    ins.push_back(h.detach());
    const auto logits = keep_out(h.mm(ws[3].t()) + bs[3]);
    torch::nll_loss(torch::log_softmax(logits, 1), y).backward();

    double vg = 0;
    std::vector<torch::Tensor> vs(4);
    for (int i = 0; i < 4; ++i) {
      const auto in = ins[i].slice(0, 0, keep);
      const auto og = outs[i].grad().slice(0, 0, keep);
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
      const auto grad = torch::cat({ws[i].grad().reshape({w[i].size(0), -1}), bs[i].grad().reshape({-1, 1})}, 1);
      const double aa = ra[i].dot(ra[i]).item<double>(), ggn = rg[i].dot(rg[i]).item<double>();
      const double ag = rg[i].dot(grad.mv(ra[i])).item<double>();
      vs[i] = (grad - ag / (aa * ggn + damping) * torch::outer(rg[i], ra[i])) / damping;
      vg += (vs[i] * grad).sum().item<double>() * lr * lr;
    }
    const double nu = vg > 0 ? std::min(1.0, std::sqrt(kl / vg)) : 1.0;
    for (int i = 0; i < 4; ++i) {
      const int64_t cols = vs[i].size(1) - 1;
      auto dw = vs[i].slice(1, 0, cols).reshape(w[i].sizes()) * nu + weight_decay * w[i];
      auto db = vs[i].slice(1, cols).reshape(b[i].sizes()) * nu + weight_decay * b[i];
      buf_w[i] = step == 0 ? dw : momentum * buf_w[i] + dw;
      buf_b[i] = step == 0 ? db : momentum * buf_b[i] + db;
      w[i] = w[i] - lr * buf_w[i];
      b[i] = b[i] - lr * buf_b[i];
    }
  }
  torch::set_default_dtype(default_dtype);
  int i = 0, j = 0;
  for (const auto& p : model->named_parameters()) {
    const bool bias = p.key().find("bias") != std::string::npos;
    const auto& want = bias ? b[j++] : w[i++];
    const auto got = p.value().detach().to(torch::kDouble);
    EXPECT_TRUE(torch::allclose(got, want, 1e-10, 1e-12)) << p.key() << ": " << (got - want).abs().max().item<double>();
  }
}


Scenario eva_ddp(int nodes, bool train = true) {
  return parse_scenario(R"(
name: eva_ddp
seed: 5
nodes: )" + std::to_string(nodes) + R"(
threads: 1
topology: {kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}
network: {backend: analytical}
workload: {model: cnn, batch_size: 32, steps: 4, eval_every: 4, eval_samples: 100, train: )" +
                            (train ? "true" : "false") + R"(}
optimizer: {name: eva, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}
algorithm: {name: ddp}
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
  const std::vector<Layer> layers = {{1 * 5 * 5 + 1, 16, 0}, {16 * 5 * 5 + 1, 32, 2}, {32 * 4 * 4 + 1, 128, 4}, {128 + 1, 10, 6}};
  std::vector<const CommOp*> a_ops, g_ops;  // forward order
  int64_t gradient_elements = 0;
  for (const auto& op : plan.comm) {
    EXPECT_EQ(op.kind, CommKind::AllReduce);
    EXPECT_EQ(op.bytes_per_element, 4);
    EXPECT_EQ(op.delay, 0);
    if (op.tag.rfind("eva.a.", 0) == 0) a_ops.push_back(&op);
    else if (op.tag.rfind("eva.g.", 0) == 0) g_ops.insert(g_ops.begin(), &op);  // backward: last layer first
    else gradient_elements += op.buffer.numel();
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
  ASSERT_EQ(summary.status, "completed") << summary.error;
  const double per_step = 4.0 * ((416 + 12832 + 65664 + 1290) + (26 + 16 + 401 + 32 + 513 + 128 + 129 + 10));
  EXPECT_EQ(summary.total_bytes, static_cast<uint64_t>(per_step * 2 * s.workload.steps));

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
  for (int n = 0; n < 2; ++n) {
    const auto got = flatten_parameters(engine.replicas()[n]->model());
    const auto want = flatten_parameters(hand[n]->model());
    EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-7)) << n << ": " << (got - want).abs().max().item<double>();
  }
}

}  // namespace
}  // namespace testbed
