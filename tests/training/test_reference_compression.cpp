// Top-k, Sign-SGD, int8, PowerSGD and ACP-SGD re-implemented here in plain LibTorch from their papers' pseudo-code and
// run beside the engine for several steps, every node's parameters and state compared; their
// bytes on the wire counted by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "tests/support/engine_run.h"
#include "tests/support/reference_scenario.h"
#include "training/replica.h"
#include "training/seed_streams.h"

namespace testbed {
namespace reference_compression {  // its own names: reference_tests compiles as one unity file
namespace {

// Node-order sums on both sides; what is left is AdamW's and the transforms' rounding.
constexpr double kTolerance = 1e-6;

Scenario scenario(int nodes, int steps, const std::string& optimizer, const std::string& algorithm,
                  const std::vector<std::string>& sets = {}) {
  return reference_scenario(13, nodes, steps, "{kind: ring, link: {bandwidth: 1Gbps, latency: 1ms}}", optimizer,
                            algorithm, sets);
}
constexpr int64_t kD = 3300;
const std::vector<int64_t> kSizes = {1024, 64, 2048, 32, 128, 4};

// The engine's run of `s`: every node's parameters and records, and the largest difference of
// its algorithm's state tensor `key` from the reference's.
struct EngineSide {
  std::vector<torch::Tensor> params;
  MemoryRecorder record;
  double state_diff = 0;
};
EngineSide engine_side(const Scenario& s, const Dataset& data, const std::string& key,
                       const std::vector<torch::Tensor>& expected) {
  EngineSide out;
  Engine engine(s, data);
  EXPECT_EQ(engine.run(out.record).status, testbed::RunStatus::Completed);
  for (int i = 0; i < s.nodes; ++i) {
    out.params.push_back(engine.replicas()[i]->parameters());
    out.state_diff = std::max(out.state_diff,
                              (engine.algorithm().state(i).tensors.at(key) - expected[i]).abs().max().item<double>());
  }
  return out;
}

class Compression : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(scenario(2, 1, "{name: adamw}", "{name: ddp}"))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;
  static void gradients(std::vector<std::unique_ptr<Replica>>& ref, const Scenario& s) {
    for (auto& r : ref) r->forward_backward(r->next_batch(*data_, s.workload.batch_size));
  }
  static double worst(const std::vector<torch::Tensor>& engine, const std::vector<std::unique_ptr<Replica>>& ref) {
    double out = 0;
    for (size_t n = 0; n < ref.size(); ++n)
      out = std::max(out, (engine[n] - ref[n]->parameters()).abs().max().item<double>());
    return out;
  }
};
Dataset* Compression::data_ = nullptr;

// ---- Top-k ------------------------------------------------------------------------------

// Stich et al.'s memory SGD with Top-k per tensor: a = e + g; the k = max(1, floor(ratio n))
// entries of largest |a| of each tensor are sent, e = a minus them; the update uses the sum
// of every node's sent entries over N (found here by sorting, not topk).
struct TopkCase {
  std::string name;
  int nodes, steps;
  double ratio;
  std::string optimizer;
  std::string scope = "tensor";  // model: one top-k of the whole gradient (Shi et al.'s merged buffer)
  double warmup_ratio = 0;       // for the first warmup_steps steps
  int warmup_steps = 0;
};
void PrintTo(const TopkCase& c, std::ostream* os) { *os << c.name; }
class TopkReference : public Compression, public ::testing::WithParamInterface<TopkCase> {};

TEST_P(TopkReference, MatchesTheEngineNodeByNode) {
  const TopkCase& c = GetParam();
  std::ostringstream a;
  a << "{name: topk, ratio: " << c.ratio << ", scope: " << c.scope << ", warmup_ratio: " << c.warmup_ratio
    << ", warmup_steps: " << c.warmup_steps << "}";
  const Scenario s = scenario(c.nodes, c.steps, c.optimizer, a.str());
  auto ref = make_replicas(s, *data_);
  std::vector<torch::Tensor> residual(c.nodes, torch::zeros({kD}));
  // What a step selects from: each tensor, or (model) the whole flat gradient.
  const std::vector<int64_t> blocks = c.scope == "model" ? std::vector<int64_t>{kD} : kSizes;
  auto ratio_at = [&](int t) { return t < c.warmup_steps ? c.warmup_ratio : c.ratio; };
  auto pairs_at = [&](int t) {
    int64_t pairs = 0;
    for (int64_t n : blocks) pairs += std::max<int64_t>(1, static_cast<int64_t>(std::floor(ratio_at(t) * n)));
    return pairs;
  };
  for (int t = 0; t < c.steps; ++t) {
    gradients(ref, s);
    torch::NoGradGuard no_grad;
    auto sum = torch::zeros({kD});
    for (int i = 0; i < c.nodes; ++i) {
      const auto acc = residual[i] + ref[i]->gradients();
      auto sent = torch::zeros({kD});
      int64_t at = 0;
      for (int64_t n : blocks) {
        const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(std::floor(ratio_at(t) * n)));
        const auto top = acc.slice(0, at, at + n).abs().argsort(0, /*descending=*/true).slice(0, 0, k) + at;
        sent.index_put_({top}, acc.index_select(0, top));
        at += n;
      }
      residual[i] = acc - sent;
      sum += sent;
    }
    for (auto& r : ref) {
      r->gradients().copy_(sum / c.nodes);
      r->optimizer_step();
    }
  }
  const EngineSide run = engine_side(s, *data_, "residual", residual);
  EXPECT_LT(worst(run.params, ref), kTolerance);
  EXPECT_LT(run.state_diff, kTolerance);
  EXPECT_GT((ref[0]->parameters() - make_replicas(s, *data_)[0]->parameters()).abs().max().item<double>(), 1e-4);
  // Each node sends its pairs to N - 1 others (ring all-gather): 4-byte index and 4-byte value.
  for (const auto& row : run.record.train_rows)
    for (uint64_t b : row.bytes) EXPECT_EQ(b, static_cast<uint64_t>((c.nodes - 1) * pairs_at(row.step) * 8));
}

const std::vector<TopkCase> kTopkCases = {
    // The default 0.001: one entry of most tensors, two of the 2048.
    {"default_ratio_adamw", 3, 6, 0.001, "{name: adamw}"},
    {"ratio0.05_sgd_momentum", 4, 6, 0.05, "{name: sgd, lr: 0.05, momentum: 0.9}"},
    // Shi et al.'s: one top-k of the whole model (k = floor(0.001 x 3300) = 3 pairs, against 7
    // per tensor), after a warm-up of 3 steps at their first epoch's 0.004 (13 pairs).
    {"model_scope_warmup_adamw", 3, 6, 0.001, "{name: adamw}", "model", 0.004, 3},
    {"model_scope_ratio0.05_sgd_momentum", 4, 6, 0.05, "{name: sgd, lr: 0.05, momentum: 0.9}", "model"},
};
INSTANTIATE_TEST_SUITE_P(Cases, TopkReference, ::testing::ValuesIn(kTopkCases),
                         [](const ::testing::TestParamInfo<TopkCase>& i) {
                           std::string n = i.param.name;
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

TEST_F(Compression, TopkOfEverythingIsDdp) {
  const Scenario topk = scenario(3, 5, "{name: adamw}", "{name: topk, ratio: 1}");
  const Scenario ddp = scenario(3, 5, "{name: adamw}", "{name: ddp}");
  const EngineRun a = run_engine(topk, *data_), b = run_engine(ddp, *data_);
  // Summed in node order against the ring's rotating order; AdamW magnifies the rounding.
  for (int n = 0; n < 3; ++n) EXPECT_LT((a.parameters[n] - b.parameters[n]).abs().max().item<double>(), 1e-5);
}

// Error feedback loses nothing: the residual after a step plus what the step sent is the
// residual before it plus the gradient, exactly (the entries are moved, not recomputed).
TEST_F(Compression, TopkResidualPlusSentIsTheAccumulatedGradient) {
  const Scenario s = scenario(2, 3, "{name: adamw}", "{name: topk, ratio: 0.01}");
  auto replicas = make_replicas(s, *data_);
  auto algorithm = make_algorithm(s, {1000, 1000}, shapes_of(replicas[0]->model()).shapes, {{1}, {0}});
  torch::Tensor before = torch::zeros({kD});
  for (int step = 0; step < 3; ++step) {
    StepPlan plan = algorithm->local_step(0, step, *replicas[0], *data_);
    ASSERT_EQ(plan.comm.size(), 1u);
    const auto& wire = plan.comm[0].buffer;
    const int64_t pairs = wire.numel() / 2;
    auto sent = torch::zeros({kD});
    sent.index_put_({wire.slice(0, 0, pairs).view(torch::kInt32).to(torch::kInt64)}, wire.slice(0, pairs));
    const auto after = algorithm->state(0).tensors.at("residual");
    EXPECT_TRUE(torch::equal(after + sent, before + replicas[0]->gradients()));
    EXPECT_GT(sent.abs().sum().item<double>(), 0);
    before = after.clone();
    // The engine's all-gather: this node's and a copy as the other's; the update follows.
    plan.comm[0].received = {wire, wire};
    algorithm->apply(0, step, *replicas[0], plan.comm[0]);
  }
}

// ---- Sign-SGD ---------------------------------------------------------------------------

struct SignCase {
  std::string name;
  int nodes, steps;
  std::string variant;
  std::string optimizer;
};
void PrintTo(const SignCase& c, std::ostream* os) { *os << c.name; }
class SignReference : public Compression, public ::testing::WithParamInterface<SignCase> {};

// Bernstein et al. 2019 (Algorithm 1, signSGD and Signum with majority vote) and Karimireddy
// et al. 2019 (Algorithm 1, EF-SignSGD, scaled sign per tensor); weight decay decoupled.
TEST_P(SignReference, MatchesTheEngineNodeByNode) {
  const SignCase& c = GetParam();
  const Scenario s = scenario(c.nodes, c.steps, c.optimizer, "{name: signsgd, variant: " + c.variant + "}");
  const double lr = s.optimizer.lr, wd = s.optimizer.weight_decay, beta = 0.9;
  auto ref = make_replicas(s, *data_);
  std::vector<torch::Tensor> memory(c.nodes, torch::zeros({kD}));
  for (int t = 0; t < c.steps; ++t) {
    gradients(ref, s);
    torch::NoGradGuard no_grad;
    auto vote = torch::zeros({kD}), mean = torch::zeros({kD});
    for (int i = 0; i < c.nodes; ++i) {
      const auto g = ref[i]->gradients();
      if (c.variant == "ef_sign") {
        const auto p = lr * g + memory[i];
        auto delta = torch::zeros({kD});
        int64_t at = 0;
        for (int64_t n : kSizes) {
          const auto part = p.slice(0, at, at + n);
          const double scale = part.abs().sum().item<double>() / n;
          delta.slice(0, at, at + n).copy_(torch::where(part >= 0, torch::full({n}, scale), torch::full({n}, -scale)));
          at += n;
        }
        memory[i] = p - delta;
        mean += delta / c.nodes;
      } else {
        if (c.variant == "signum") memory[i] = beta * memory[i] + (1 - beta) * g;
        const auto v = c.variant == "signum" ? memory[i] : g;
        vote += torch::where(v >= 0, torch::ones({kD}), -torch::ones({kD}));  // a zero sends +1
      }
    }
    for (auto& r : ref) {
      r->parameters().mul_(1 - lr * wd);
      if (c.variant == "ef_sign")
        r->parameters().sub_(mean);
      else
        r->parameters().sub_(lr * vote.sign());
    }
  }
  const EngineRun run = run_engine(s, *data_);
  EXPECT_LT(worst(run.parameters, ref), kTolerance);
  EXPECT_GT((ref[0]->parameters() - make_replicas(s, *data_)[0]->parameters()).abs().max().item<double>(), 1e-4);
  // ceil(3300 / 8) = 413 bytes of signs (ef_sign: and 6 scales of 4 bytes) to each of N - 1 nodes.
  const uint64_t payload = 413 + (c.variant == "ef_sign" ? 6 * 4 : 0);
  for (const auto& row : run.record.train_rows)
    for (uint64_t b : row.bytes) EXPECT_EQ(b, (c.nodes - 1) * payload);
}

const std::vector<SignCase> kSignCases = {
    {"majority_defaults", 3, 5, "majority", "{name: adamw}"},  // three voters: no ties
    {"majority_even_nodes_ties", 4, 5, "majority", "{name: sgd, lr: 0.01, weight_decay: 0.1}"},
    {"signum", 3, 6, "signum", "{name: adamw}"},
    {"ef_sign", 3, 6, "ef_sign", "{name: sgd, lr: 0.1, weight_decay: 0.01}"},
};
INSTANTIATE_TEST_SUITE_P(Cases, SignReference, ::testing::ValuesIn(kSignCases),
                         [](const ::testing::TestParamInfo<SignCase>& i) { return i.param.name; });

// ---- int8 (docs/algorithms.md#adding-one) -------------------------------------------------

// The quantizer in plain floats: per tensor, scale = max|g| / 127 and code = g / scale rounded
// to the nearest integer, ties to even (nearbyint); an all-zero tensor sends zeros. Every node
// decodes code x scale of every node's message, sums in node order and divides by N.
std::vector<float> int8_mean(const std::vector<std::vector<float>>& gradients) {
  std::vector<float> sum(kD, 0.0f);
  for (const auto& g : gradients) {
    int64_t at = 0;
    for (int64_t n : kSizes) {
      float max_abs = 0;
      for (int64_t j = at; j < at + n; ++j) max_abs = std::max(max_abs, std::fabs(g[j]));
      const float scale = max_abs / 127.0f;
      for (int64_t j = at; j < at + n; ++j) {
        const float code = scale > 0 ? std::nearbyint(g[j] / scale) : 0.0f;
        EXPECT_LE(std::fabs(code), 127.0f);
        sum[j] += code * scale;
      }
      at += n;
    }
  }
  for (float& v : sum) v /= static_cast<float>(gradients.size());
  return sum;
}

struct Int8Case {
  std::string name;
  int nodes, steps;
  std::string optimizer;
};
void PrintTo(const Int8Case& c, std::ostream* os) { *os << c.name; }
class Int8Reference : public Compression, public ::testing::WithParamInterface<Int8Case> {};

TEST_P(Int8Reference, MatchesTheEngineNodeByNode) {
  const Int8Case& c = GetParam();
  const Scenario s = scenario(c.nodes, c.steps, c.optimizer, "{name: int8}");
  auto ref = make_replicas(s, *data_);
  double rounding = 0;  // how far the decoded mean lands from the exact mean gradient
  for (int t = 0; t < c.steps; ++t) {
    gradients(ref, s);
    std::vector<std::vector<float>> g;
    auto exact = torch::zeros({kD});
    for (auto& r : ref) {
      const auto flat = r->gradients().contiguous();
      g.emplace_back(flat.data_ptr<float>(), flat.data_ptr<float>() + kD);
      exact += flat / c.nodes;
    }
    const auto mean = torch::tensor(int8_mean(g));
    rounding = std::max(rounding, (mean - exact).abs().max().item<double>());
    torch::NoGradGuard no_grad;
    for (auto& r : ref) {
      r->gradients().copy_(mean);
      r->optimizer_step();
    }
  }
  const EngineRun run = run_engine(s, *data_);
  EXPECT_LT(worst(run.parameters, ref), kTolerance);
  EXPECT_GT(rounding, 0);  // the codes lose something: the test is not DDP's
  EXPECT_GT((ref[0]->parameters() - make_replicas(s, *data_)[0]->parameters()).abs().max().item<double>(), 1e-4);
  // 3300 codes of one byte and 6 scales of 4 bytes to each of the N - 1 other nodes.
  for (const auto& row : run.record.train_rows)
    for (uint64_t b : row.bytes) EXPECT_EQ(b, (c.nodes - 1) * (3300u + 6u * 4u));
}

const std::vector<Int8Case> kInt8Cases = {
    {"defaults_adamw", 3, 6, "{name: adamw}"},
    {"sgd_four_nodes", 4, 5, "{name: sgd, lr: 0.05, weight_decay: 0.01}"},
};
INSTANTIATE_TEST_SUITE_P(Cases, Int8Reference, ::testing::ValuesIn(kInt8Cases),
                         [](const ::testing::TestParamInfo<Int8Case>& i) { return i.param.name; });

// ---- PowerSGD ---------------------------------------------------------------------------

struct PowerCase {
  std::string name;
  int nodes, steps, rank, start_iter;
  std::string optimizer;
  double min_rate = 0;  // PyTorch's min_compression_rate; 0: every matrix compressed (paper-code)
  std::string model = "mlp";
};
void PrintTo(const PowerCase& c, std::ostream* os) { *os << c.name; }
class PowerReference : public Compression, public ::testing::WithParamInterface<PowerCase> {};

// The MLP's matrices (shape[0] x the rest) and its 1-D tensors, in flat order.
struct Part {
  int64_t offset, rows, cols;
  bool matrix;
};
const std::vector<Part> kParts = {{0, 64, 16, true},    {1024, 64, 1, false}, {1088, 32, 64, true},
                                  {3136, 32, 1, false}, {3168, 4, 32, true},  {3296, 4, 1, false}};

// Each trainable tensor in flat order: a matrix shape[0] x the rest (a conv kernel: out x in kh
// kw), or a vector; checked against kParts for the MLP.
std::vector<Part> parts_of(const Replica& replica, const std::string& model) {
  std::vector<Part> parts;
  int64_t d = 0;
  for (const auto& t : trainable_parameters(replica.model())) {
    parts.push_back({d, t.dim() >= 2 ? t.size(0) : t.numel(), t.dim() >= 2 ? t.numel() / t.size(0) : 1, t.dim() >= 2});
    d += t.numel();
  }
  if (model == "mlp") {
    EXPECT_EQ(parts.size(), kParts.size());
    for (size_t k = 0; k < std::min(parts.size(), kParts.size()); ++k)
      EXPECT_TRUE(parts[k].offset == kParts[k].offset && parts[k].rows == kParts[k].rows &&
                  parts[k].cols == kParts[k].cols && parts[k].matrix == kParts[k].matrix)
          << k;
  } else {
    EXPECT_GT(std::count_if(parts.begin(), parts.end(), [](const Part& p) { return p.matrix && p.cols > p.rows; }), 1)
        << "conv kernels flattened to out x (in kh kw)";
  }
  return parts;
}
int64_t size_of(const std::vector<Part>& parts) { return parts.back().offset + parts.back().rows * parts.back().cols; }

// The CNN (the default model) on Fashion-MNIST, at a small batch.
const std::vector<std::string> kCnn = {"workload.model=cnn", "workload.dataset=fashion_mnist", "workload.synthetic={}",
                                       "workload.batch_size=8"};

// Vogels et al. 2019, Algorithm 1 with error feedback (and their reference's warm start): per
// matrix M = g + e, P = sum over nodes of M Q, P orthonormal, Q = mean of M^T P, the gradient
// P Q^T, e = M - P Q^T; 1-D tensors averaged. Orthonormalised here by QR (signs fixed so the
// diagonal of R is positive: what Gram-Schmidt gives).
TEST_P(PowerReference, MatchesTheEngineNodeByNode) {
  const PowerCase& c = GetParam();
  std::ostringstream a;
  a << "{name: powersgd, rank: " << c.rank << ", start_iter: " << c.start_iter
    << ", min_compression_rate: " << c.min_rate << "}";
  const Scenario s =
      scenario(c.nodes, c.steps, c.optimizer, a.str(), c.model == "cnn" ? kCnn : std::vector<std::string>{});
  std::unique_ptr<Dataset> own;
  if (c.model == "cnn") own = std::make_unique<Dataset>(load_dataset(s));
  const Dataset& data = own ? *own : *data_;
  auto ref = make_replicas(s, data);
  std::vector<Part> parts = parts_of(*ref[0], c.model);
  const int64_t d = size_of(parts);
  // PyTorch's rule, written out: compress when (rows + cols) r x rate < rows cols; the others
  // go with the 1-D tensors, averaged and without memory.
  for (auto& p : parts) {
    const int64_t r = std::min<int64_t>({p.rows, p.cols, c.rank});
    if (p.matrix && c.min_rate > 0 && !(static_cast<double>((p.rows + p.cols) * r) * c.min_rate < p.rows * p.cols))
      p.matrix = false;
  }
  std::vector<torch::Tensor> memory;  // each its own storage (updated in place below)
  for (int i = 0; i < c.nodes; ++i) memory.push_back(torch::zeros({d}));
  // Q drawn once from the run's seed, every matrix's in flat order (rank r = min(rows, cols, rank)).
  int64_t q_size = 0;
  for (const auto& p : parts)
    if (p.matrix) q_size += p.cols * std::min<int64_t>({p.rows, p.cols, c.rank});
  auto generator = at::detail::createCPUGenerator(stream_seed(s.seed, "powersgd_q"));
  const auto q0 = at::normal(0.0, 1.0, {q_size}, generator);
  std::vector<torch::Tensor> q;
  int64_t at = 0;
  for (const auto& p : parts) {
    if (!p.matrix) continue;
    const int64_t r = std::min<int64_t>({p.rows, p.cols, c.rank});
    q.push_back(q0.slice(0, at, at + p.cols * r).view({p.cols, r}).clone());
    at += p.cols * r;
  }
  for (int t = 0; t < c.steps; ++t) {
    for (auto& r : ref) r->forward_backward(r->next_batch(data, s.workload.batch_size));
    torch::NoGradGuard no_grad;
    auto mean = torch::zeros({d});
    if (t < c.start_iter) {
      for (auto& r : ref) mean += r->gradients() / c.nodes;
    } else {
      size_t j = 0;
      for (const auto& p : parts) {
        const int64_t n = p.rows * p.cols;
        if (!p.matrix) {
          for (auto& r : ref)
            mean.slice(0, p.offset, p.offset + n) += r->gradients().slice(0, p.offset, p.offset + n) / c.nodes;
          continue;
        }
        std::vector<torch::Tensor> m;
        auto sum_p = torch::zeros({p.rows, q[j].size(1)});
        for (int i = 0; i < c.nodes; ++i) {
          m.push_back((ref[i]->gradients() + memory[i]).slice(0, p.offset, p.offset + n).view({p.rows, p.cols}));
          sum_p += m[i].matmul(q[j]);
        }
        auto [qr_q, qr_r] = torch::linalg_qr(sum_p);
        const auto p_hat = qr_q * qr_r.diagonal().sign().unsqueeze(0);
        auto sum_q = torch::zeros_like(q[j]);
        for (int i = 0; i < c.nodes; ++i) sum_q += m[i].t().matmul(p_hat);
        q[j] = sum_q / c.nodes;
        const auto approx = p_hat.matmul(q[j].t());
        for (int i = 0; i < c.nodes; ++i) memory[i].slice(0, p.offset, p.offset + n).copy_((m[i] - approx).reshape(-1));
        mean.slice(0, p.offset, p.offset + n).copy_(approx.reshape(-1));
        ++j;
      }
    }
    for (auto& r : ref) {
      r->gradients().copy_(mean);
      r->optimizer_step();
    }
  }
  const EngineSide run = engine_side(s, data, "memory", memory);
  // QR against Gram-Schmidt and sums in another order: a few float32 ulps of the factors,
  // which AdamW's division by sqrt(v) magnifies on small gradients.
  EXPECT_LT(worst(run.params, ref), 1e-5);
  EXPECT_LT(run.state_diff, 1e-5);
  EXPECT_GT((ref[0]->parameters() - make_replicas(s, data)[0]->parameters()).abs().max().item<double>(), 1e-4);
  EXPECT_GT(memory[0].abs().max().item<double>(), 1e-3);  // the approximation really drops something
  // Bytes of a compressed step: P (rows r), the uncompressed tensors (the 1-D ones' 100, and with
  // min_rate 2 the 4 x 32 head, whose rank-2 factors are 144 of its 128) and Q (cols r) each all-reduced:
  // a ring sends 2(N-1) chunks of n/N from each node, 2(N-1) x 4 n from all.
  int64_t p_size = 0, q_elements = 0, compressed = 0;
  for (const auto& p : parts) {
    if (!p.matrix) continue;
    compressed += p.rows * p.cols;
    const int64_t r = std::min<int64_t>({p.rows, p.cols, c.rank});
    p_size += p.rows * r;
    q_elements += p.cols * r;
  }
  for (const auto& row : run.record.train_rows) {
    uint64_t total = 0;
    for (uint64_t b : row.bytes) total += b;
    const int64_t elements = row.step < c.start_iter ? d : p_size + (d - compressed) + q_elements;
    EXPECT_EQ(total, static_cast<uint64_t>(2 * (c.nodes - 1) * 4 * elements)) << "step " << row.step;
  }
}

const std::vector<PowerCase> kPowerCases = {
    {"defaults_rank2_adamw", 3, 6, 2, 0, "{name: adamw}"},
    {"rank1_start_iter2_sgd", 4, 6, 1, 2, "{name: sgd, lr: 0.05, momentum: 0.9}"},
    // PyTorch's default rule: the 4 x 32 head is not worth compressing at rank 2, the rest is.
    {"min_compression_rate2_adamw", 3, 6, 2, 0, "{name: adamw}", 2.0},
    // The default model and rank on its conv kernels, over several steps.
    {"cnn_defaults_adamw", 3, 5, 2, 0, "{name: adamw}", 0, "cnn"},
};
INSTANTIATE_TEST_SUITE_P(Cases, PowerReference, ::testing::ValuesIn(kPowerCases),
                         [](const ::testing::TestParamInfo<PowerCase>& i) { return i.param.name; });

// At full rank the approximation is exact: PowerSGD is DDP. Only where every P has full
// rank: Gram-Schmidt (the reference's too) normalises whatever is left of a dependent column,
// rounding noise included. So a regression task (a classifier's last-layer gradient has rank
// classes - 1: softmax's rows sum to 0), and SGD (AdamW turns the rounding noise of a gradient
// that is 0 in DDP into steps of lr). Worst difference measured: 1.1e-6.
TEST(PowerSgd, AtFullRankIsDdp) {
  const std::vector<std::string> regression = {"workload.synthetic.task=regression"};
  const std::string sgd = "{name: sgd, lr: 0.05}";  // momentum would carry the rounding on
  const Scenario power = scenario(3, 5, sgd, "{name: powersgd, rank: 64}", regression);
  const Dataset data = load_dataset(power);
  const EngineRun a = run_engine(power, data);
  const EngineRun b = run_engine(scenario(3, 5, sgd, "{name: ddp}", regression), data);
  for (int n = 0; n < 3; ++n) EXPECT_LT((a.parameters[n] - b.parameters[n]).abs().max().item<double>(), 1e-5);
  EXPECT_GT((a.parameters[0] - make_replicas(power, data)[0]->parameters()).abs().max().item<double>(), 1e-3);
}

// ---- ACP-SGD ----------------------------------------------------------------------------

struct AcpCase {
  std::string name;
  int nodes, steps, rank;
  std::string optimizer;
  std::string model = "mlp";  // mlp: on a regression task (see below); cnn: Fashion-MNIST's classes
};
void PrintTo(const AcpCase& c, std::ostream* os) { *os << c.name; }
class AcpReference : public Compression, public ::testing::WithParamInterface<AcpCase> {};

// Shi et al.'s ACP-SGD (Algorithm 1 of the paper, and acpsgd.py): even steps send P = (M + E)
// QR(Q), odd steps Q = (M + E)^T QR(P), the other factor the one all-reduced last; E keeps
// M + E minus the local approximation; the gradient is the all-reduced factor times the
// orthonormal one over N; 1-D tensors averaged. On a regression task: a classifier's last-layer
// factor sums have rank classes - 1, and QR's basis for the missing direction is rounding noise
// that differs with the order of the sums (here node order, the engine's ring order).
TEST_P(AcpReference, MatchesTheEngineNodeByNode) {
  const AcpCase& c = GetParam();
  const Scenario s = scenario(c.nodes, c.steps, c.optimizer, "{name: acpsgd, rank: " + std::to_string(c.rank) + "}",
                              c.model == "cnn" ? kCnn : std::vector<std::string>{"workload.synthetic.task=regression"});
  const Dataset data = load_dataset(s);
  auto ref = make_replicas(s, data);
  const std::vector<Part> parts = parts_of(*ref[0], c.model);
  const int64_t d = size_of(parts);
  std::vector<torch::Tensor> memory;
  for (int i = 0; i < c.nodes; ++i) memory.push_back(torch::zeros({d}));
  // P and Q drawn from the run's seed: every matrix's P in flat order, then every Q.
  std::vector<int64_t> rank;
  int64_t p_total = 0, q_total = 0;
  for (const auto& p : parts) {
    rank.push_back(p.matrix ? std::min<int64_t>({p.rows, p.cols, c.rank}) : 0);
    p_total += p.matrix ? p.rows * rank.back() : p.rows;
    q_total += p.matrix ? p.cols * rank.back() : p.rows;
  }
  auto generator = at::detail::createCPUGenerator(stream_seed(s.seed, "acpsgd_factors"));
  const auto p0 = at::normal(0.0, 1.0, {p_total}, generator), q0 = at::normal(0.0, 1.0, {q_total}, generator);
  std::vector<torch::Tensor> P, Q;
  int64_t pa = 0, qa = 0;
  for (size_t j = 0; j < parts.size(); ++j) {
    const auto& p = parts[j];
    if (p.matrix) {
      P.push_back(p0.slice(0, pa, pa + p.rows * rank[j]).view({p.rows, rank[j]}).clone());
      Q.push_back(q0.slice(0, qa, qa + p.cols * rank[j]).view({p.cols, rank[j]}).clone());
    } else {
      P.emplace_back();
      Q.emplace_back();
    }
    pa += p.matrix ? p.rows * rank[j] : p.rows;
    qa += p.matrix ? p.cols * rank[j] : p.rows;
  }
  for (int t = 0; t < c.steps; ++t) {
    for (auto& r : ref) r->forward_backward(r->next_batch(data, s.workload.batch_size));
    torch::NoGradGuard no_grad;
    auto mean = torch::zeros({d});
    for (size_t j = 0; j < parts.size(); ++j) {
      const auto& p = parts[j];
      const int64_t n = p.rows * p.cols;
      if (!p.matrix) {
        for (auto& r : ref)
          mean.slice(0, p.offset, p.offset + n) += r->gradients().slice(0, p.offset, p.offset + n) / c.nodes;
        continue;
      }
      const auto fixed = std::get<0>(torch::linalg_qr(t % 2 == 0 ? Q[j] : P[j]));
      auto sum = torch::zeros(t % 2 == 0 ? P[j].sizes() : Q[j].sizes());
      for (int i = 0; i < c.nodes; ++i) {
        const auto m = (ref[i]->gradients() + memory[i]).slice(0, p.offset, p.offset + n).view({p.rows, p.cols});
        const auto local = t % 2 == 0 ? m.matmul(fixed) : m.t().matmul(fixed);
        const auto approx = t % 2 == 0 ? local.matmul(fixed.t()) : fixed.matmul(local.t());
        memory[i].slice(0, p.offset, p.offset + n).copy_((m - approx).reshape(-1));
        sum += local;
      }
      (t % 2 == 0 ? P[j] : Q[j]) = sum;
      const auto grad = t % 2 == 0 ? sum.matmul(fixed.t()) : fixed.matmul(sum.t());
      mean.slice(0, p.offset, p.offset + n).copy_((grad / c.nodes).reshape(-1));
    }
    for (auto& r : ref) {
      r->gradients().copy_(mean);
      r->optimizer_step();
    }
  }
  const EngineSide run = engine_side(s, data, "memory", memory);
  EXPECT_LT(worst(run.params, ref), 1e-5);
  EXPECT_LT(run.state_diff, 1e-5);
  EXPECT_GT((ref[0]->parameters() - make_replicas(s, data)[0]->parameters()).abs().max().item<double>(), 1e-4);
  EXPECT_GT(memory[0].abs().max().item<double>(), 1e-3);
  // One all-reduce a step (one bucket at 25 MB), of P's (even steps) or Q's (odd) factors and the 1-D entries.
  for (const auto& row : run.record.train_rows) {
    uint64_t total = 0;
    for (uint64_t b : row.bytes) total += b;
    EXPECT_EQ(total, static_cast<uint64_t>(2 * (c.nodes - 1) * 4 * (row.step % 2 == 0 ? p_total : q_total)))
        << "step " << row.step;
  }
}

const std::vector<AcpCase> kAcpCases = {
    {"defaults_rank4_adamw", 3, 6, 4, "{name: adamw}"},
    {"rank1_sgd_momentum", 4, 5, 1, "{name: sgd, lr: 0.05, momentum: 0.9}"},
    // The default model and rank on its conv kernels (10 classes: the head's factor sums keep rank 4).
    {"cnn_defaults_adamw", 3, 5, 4, "{name: adamw}", "cnn"},
};
INSTANTIATE_TEST_SUITE_P(Cases, AcpReference, ::testing::ValuesIn(kAcpCases),
                         [](const ::testing::TestParamInfo<AcpCase>& i) { return i.param.name; });

}  // namespace
}  // namespace reference_compression
}  // namespace testbed
