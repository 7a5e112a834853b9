// Split fine-tuning's cut (training/models/split_cut.h) against the reference's SvdLinear and
// SvdBlock written out here: W1's factors from an SVD taken in the test, a one-block GPT's
// forward pass by hand with the cut in it, what crosses and its gradient, the costs each side
// is charged, and the cuts a model refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "training/models/bert.h"
#include "training/models/gpt.h"
#include "training/models/model_shapes.h"
#include "training/models/split_cut.h"

namespace testbed {
namespace split_cut_test {  // workload_tests compiles as one unity file
namespace {

std::map<std::string, torch::Tensor> parameters_of(const Model& model) {
  std::map<std::string, torch::Tensor> p;
  for (const auto& kv : model.named_parameters()) p[kv.key()] = kv.value();
  return p;
}

// The reference: u, s, v = torch.linalg.svd(W); dense_v = v[:r], dense_s = diag(s[:r]),
// dense_u = u[:, :r] with W's bias; y = dense_u(dense_s(dense_v(x))). At full rank y = x W^T + b.
// Slips caught: V and U swapped, S left out, the bias dropped, Vh's rows taken as columns.
TEST(SvdDense, IsTheReferencesTruncatedSvdOfW1) {
  torch::manual_seed(3);
  const auto W = torch::randn({12, 5}, torch::kDouble), b = torch::randn({12}, torch::kDouble);
  const auto x = torch::randn({4, 5}, torch::kDouble);
  auto [U, S, Vh] = torch::linalg_svd(W, true);
  for (int r : {5, 3, 1}) {
    SCOPED_TRACE(r);
    SvdDense svd(W.to(torch::kFloat), b.to(torch::kFloat), r);
    // Singular vectors are unique up to sign: each of front's r columns is the test's or its
    // negative (u's matching column then has the same sign, so their product is fixed).
    const auto expected_front = x.mm(Vh.slice(0, 0, r).t()).mm(torch::diag(S.slice(0, 0, r)));
    const auto front = svd->front(x.to(torch::kFloat)).to(torch::kDouble);
    const auto sign = torch::sign((front * expected_front).sum(0));
    EXPECT_TRUE(torch::allclose(front * sign, expected_front, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(svd->s->weight.to(torch::kDouble), torch::diag(S.slice(0, 0, r)), 1e-5, 1e-5));
    const auto expected = expected_front.mm(U.slice(1, 0, r).t()) + b;  // x U_r S_r V_r^T + b: no sign
    EXPECT_TRUE(torch::allclose(svd->back(front.to(torch::kFloat)).to(torch::kDouble), expected, 1e-5, 1e-5));
    if (r == 5) EXPECT_TRUE(torch::allclose(expected, x.mm(W.t()) + b, 1e-10, 1e-10));  // full rank is W1
  }
  EXPECT_THROW(SvdDense(W.to(torch::kFloat), b.to(torch::kFloat), 6), std::invalid_argument);  // rank > min(f, h)
  EXPECT_THROW(SvdDense(W.to(torch::kFloat), b.to(torch::kFloat), 0), std::invalid_argument);
}

torch::Tensor layer_norm_by_hand(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  const auto mean = x.mean(-1, true);
  const auto var = (x - mean).pow(2).mean(-1, true);
  return (x - mean) / torch::sqrt(var + 1e-5) * w + b;
}

// A one-block GPT (width 8, 2 heads, context 4) cut in its block at rank 3, its forward pass
// written out from the parameters: embeddings, pre-norm attention with its residual, then ln2,
// v, s (the cut: B x T x 3 crosses), u with W1's bias, GELU, fc_proj and no residual, ln_f, the
// head. The recorded activations are the test's crossing and the recorded gradient its
// gradient under the same loss. Slips caught: the feed-forward's residual kept, the cut
// recorded before s, the gradient not recorded, ln2 moved behind the cut.
TEST(SplitCut, OneBlockGptAsTheReferenceCutsIt) {
  GptConfig c;
  c.vocab = 11, c.layers = 1, c.heads = 2, c.width = 8, c.context = 4;
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual);
    torch::manual_seed(5);
    auto model = make_gpt(c);
    model->split(SplitConfig{1, 3, residual});
    ASSERT_NE(model->cut(), nullptr);
    auto p = parameters_of(*model);
    const auto tokens = torch::randint(0, 11, {2, 4}, torch::kLong);
    const auto targets = torch::randint(0, 11, {2, 4}, torch::kLong);

    auto e = p.at("wte.weight").detach().index_select(0, tokens.flatten()).view({2, 4, 8}) +
             p.at("wpe.weight").detach().slice(0, 0, 4);
    auto d = [&](const std::string& n) { return p.at(n).detach(); };
    auto a = layer_norm_by_hand(e, d("blocks.0.ln1.weight"), d("blocks.0.ln1.bias"));
    auto qkv = a.matmul(d("blocks.0.attn.qkv.weight").t()) + d("blocks.0.attn.qkv.bias");
    auto heads = [](const torch::Tensor& t) { return t.view({2, 4, 2, 4}).transpose(1, 2); };
    auto q = heads(qkv.slice(2, 0, 8)), k = heads(qkv.slice(2, 8, 16)), v = heads(qkv.slice(2, 16, 24));
    auto att = q.matmul(k.transpose(-2, -1)) / std::sqrt(4.0);
    att = att.masked_fill(torch::ones({4, 4}, torch::kBool).triu(1), -INFINITY).softmax(-1);
    auto y = att.matmul(v).transpose(1, 2).reshape({2, 4, 8});
    auto x1 = e + y.matmul(d("blocks.0.attn.proj.weight").t()) + d("blocks.0.attn.proj.bias");
    auto n2 = layer_norm_by_hand(x1, d("blocks.0.ln2.weight"), d("blocks.0.ln2.bias"));
    auto z = n2.matmul(d("blocks.0.fc.v.weight").t()).matmul(d("blocks.0.fc.s.weight").t());
    auto crossing = (residual ? torch::cat({x1, z}, -1) : z).detach().requires_grad_(true);
    auto zc = residual ? crossing.narrow(-1, 8, 3) : crossing;
    auto h = torch::gelu(zc.matmul(d("blocks.0.fc.u.weight").t()) + d("blocks.0.fc.u.bias"));
    h = h.matmul(d("blocks.0.fc_proj.weight").t()) + d("blocks.0.fc_proj.bias");
    if (residual) h = h + crossing.narrow(-1, 0, 8);
    auto f = layer_norm_by_hand(h, d("ln_f.weight"), d("ln_f.bias"));
    auto logits = f.matmul(d("head.weight").t()) + d("head.bias");
    auto loss = torch::nn::functional::cross_entropy(logits.view({8, 11}), targets.flatten());
    loss.backward();

    auto model_logits = model->forward(tokens);
    torch::nn::functional::cross_entropy(model_logits.view({8, 11}), targets.flatten()).backward();
    EXPECT_TRUE(torch::allclose(model_logits, logits, 1e-5, 1e-5));
    const CutValues& cut = *model->cut();
    EXPECT_EQ(cut.activations.sizes(), crossing.sizes());
    EXPECT_TRUE(torch::allclose(cut.activations, crossing, 1e-5, 1e-5));
    ASSERT_TRUE(cut.gradient.defined());
    EXPECT_TRUE(torch::allclose(cut.gradient, crossing.grad(), 1e-5, 1e-6));
    EXPECT_EQ(cut.values_per_sample, 4 * (residual ? 8 + 3 : 3));
  }
}

// What each side runs: the split block's costs are ln2, v (8 -> 3), s (3 -> 3) on the front and
// u (3 -> 32, with the bias) onwards behind, with no second residual add; the shapes name the
// back's first layer. Slips caught: the cut index off by one, u costed as the dense W1.
TEST(SplitCut, CostsAndShapesSayWhereTheBackBegins) {
  GptConfig c;
  c.vocab = 11, c.layers = 2, c.heads = 2, c.width = 8, c.context = 4;
  torch::manual_seed(5);
  auto model = make_gpt(c);
  model->split(SplitConfig{2, 3, false});
  const ModelShapes shapes = shapes_of(*model);
  ASSERT_GE(shapes.cut_layer, 1);
  EXPECT_EQ(shapes.layers[shapes.cut_layer].name, "blocks.1.fc.u");
  EXPECT_EQ(shapes.layers[shapes.cut_layer - 1].name, "blocks.1.fc.s");
  EXPECT_DOUBLE_EQ(shapes.layers[shapes.cut_layer - 1].flops, 2.0 * 3 * 3 * 4);
  EXPECT_DOUBLE_EQ(shapes.layers[shapes.cut_layer - 2].flops, 2.0 * 8 * 3 * 4);
  EXPECT_DOUBLE_EQ(shapes.layers[shapes.cut_layer].flops, 2.0 * 3 * 32 * 4);
  EXPECT_DOUBLE_EQ(shapes.layers[shapes.cut_layer].weights, 3.0 * 32 + 32);
  for (const auto& l : shapes.layers) EXPECT_NE(l.name, "blocks.1.residual2");
  EXPECT_EQ(shapes.cut_values_per_sample, 4 * 3);
  // Every trainable tensor is some layer's: the compute model can time the split model.
  TrainingWork work;
  work.layers = shapes.layers;
  EXPECT_NO_THROW(gradient_layers(work, shapes.names));
  // 8 x 3 + 3 x 3 + 3 x 32 + 32 parameters where W1 had 8 x 32 + 32.
  auto whole = make_gpt(c);
  EXPECT_EQ(shapes_of(*whole).trainable() - shapes.trainable(), (8 * 32 + 32) - (8 * 3 + 3 * 3 + 3 * 32 + 32));
  EXPECT_EQ(whole->cut(), nullptr);
  EXPECT_EQ(shapes_of(*whole).cut_layer, -1);
}

// BERT-base cut in layer 6 as the reference's MRPC script does (rank 8, sequence 128): 8
// values a token cross where a plain cut sends its 768, the paper's 96x. Bad cuts are refused.
TEST(SplitCut, BertBaseSendsRankValuesATokenAndBadCutsAreRefused) {
  BertConfig c = bert_preset("base");
  c.layers = 6;  // the blocks after the cut change nothing here; fewer to build
  torch::manual_seed(1);
  auto cut = make_bert(c);
  cut->split(SplitConfig{6, 8, false});
  auto plain = make_bert(c);
  plain->split(SplitConfig{6, 0, false});
  const ModelShapes a = shapes_of(*cut), b = shapes_of(*plain);
  EXPECT_EQ(a.cut_values_per_sample, 128 * 8);
  EXPECT_EQ(b.cut_values_per_sample, 128 * 768);
  EXPECT_EQ(b.cut_values_per_sample / a.cut_values_per_sample, 96);
  EXPECT_EQ(a.layers[a.cut_layer].name, "layers.5.intermediate.u");
  EXPECT_EQ(b.layers[b.cut_layer].name, "layers.5.intermediate");
  EXPECT_THROW(make_bert(c)->split(SplitConfig{7, 8, false}), std::invalid_argument);
  EXPECT_THROW(make_bert(c)->split(SplitConfig{0, 8, false}), std::invalid_argument);
  EXPECT_THROW(make_bert(c)->split(SplitConfig{1, 769, false}), std::invalid_argument);
  EXPECT_THROW(make_gpt(gpt_preset("tiny"))->split(SplitConfig{3, 8, false}), std::invalid_argument);
}

}  // namespace
}  // namespace split_cut_test
}  // namespace testbed
