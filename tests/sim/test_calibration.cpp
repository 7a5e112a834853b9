// The roofline held to published measured training throughputs (docs/measurements/training_throughputs.csv,
// docs/compute.md "Calibration"): each held row within 15 %, the figures that fitted the
// efficiencies and those that only check them, read from the table.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/compute/compute_model.h"
#include "training/models/model_shapes.h"

namespace testbed {
namespace {

using Row = std::map<std::string, std::string>;

// A CSV line's fields (quoted fields may hold commas; no quotes inside them).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"')
      quoted = !quoted;
    else if (ch == ',' && !quoted)
      out.emplace_back();
    else
      out.back() += ch;
  }
  return out;
}

std::vector<Row> measurements() {
  std::ifstream in(std::string(TESTBED_SOURCE_DIR) + "/docs/measurements/training_throughputs.csv");
  std::string line;
  std::getline(in, line);
  const auto header = csv_fields(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto f = csv_fields(line);
    if (f.size() != header.size()) throw std::runtime_error("training_throughputs.csv: a row of " + line);
    Row r;
    for (size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(r);
  }
  return rows;
}

// The zoo's model for a row: MPT-7B as the GPT of its published shapes (32 layers, width
// 4096, 32 heads, vocabulary 50 368: its 6 658 859 008 parameters).
std::string workload(const Row& r) {
  const std::string& m = r.at("model");
  const std::string seq = r.at("sequence");
  if (m == "resnet50") return "model: resnet50, dataset: imagenet_synthetic";
  if (m == "bert_base" || m == "bert_large")
    return "model: bert, dataset: brown_genres, bert: {preset: " + m.substr(5) + ", sequence: " + seq + "}";
  if (m == "gpt2_124m") return "model: gpt, dataset: brown, gpt: {preset: gpt2_124m, context: " + seq + "}";
  if (m == "mpt_7b")
    return "model: gpt, dataset: brown, gpt: {preset: gpt2_124m, layers: 32, width: 4096, heads: 32, vocab: 50368, "
           "context: " +
           seq + "}";
  throw std::runtime_error("training_throughputs.csv: no zoo model for '" + m + "'");
}

// The row's projected figure: samples a second, or MFU as llm-foundry counts it (6 N T + 12 L d
// T^2 FLOPs a sequence over the peak, N the parameters).
double projected(const Row& r) {
  const std::string yaml =
      "workload: {" + workload(r) + ", batch_size: " + r.at("batch") +
      ", train: false}\noptimizer: {name: " + (r.at("model") == "resnet50" ? "sgd, momentum: 0.9" : "adamw") +
      "}\ncompute: {model: flops, device: " + r.at("device") + ", dtype: " + r.at("dtype") +
      ", attention: " + r.at("attention") + ", memory_format: " + r.at("memory_format") + ", memory_check: off}\n";
  const Scenario s = parse_scenario(yaml, r.at("id"));
  static std::map<std::string, ModelShapes> built;  // by model and sequence: rows share them
  const std::string key = r.at("model") + "/" + r.at("sequence");
  if (!built.count(key)) built[key] = model_shapes(s);
  const ModelShapes& shapes = built.at(key);
  const ComputeModel model(s.compute, training_work(s, shapes.layers), 1, s.seed);
  const double per_second = s.workload.batch_size / model.step_seconds(0, 0, 0);
  if (r.at("unit") == "samples/s") return per_second;
  const double T = std::stod(r.at("sequence")), N = static_cast<double>(shapes.parameters);
  const double L = s.workload.gpt.layers, d = s.workload.gpt.width;
  const double peak = r.at("device") == "a100" ? 312e12 : 989e12;  // bf16, the datasheets'
  return per_second * (6 * N * T + 12 * L * d * T * T) / peak;
}

// Every held figure (role fit or check) within 15 % of its projection; at least 10 of them, on
// at least 4 presets, a third of them checks that fitted nothing. Slips caught: an efficiency
// mistyped in the preset table, a kernel kind charged at another's rate, NCHW transposes
// dropped, a published figure miscopied into the table.
TEST(Calibration, HeldFiguresWithinFifteenPercent) {
  int held = 0, checks = 0;
  std::set<std::string> presets;
  for (const Row& r : measurements()) {
    SCOPED_TRACE(r.at("id") + " " + r.at("model") + " on " + r.at("device") + " " + r.at("dtype"));
    const double ratio = projected(r) / std::stod(r.at("measured"));
    std::printf("%-4s %-6s %-10s %-9s %-4s %6.2f\n", r.at("id").c_str(), r.at("role").c_str(), r.at("model").c_str(),
                r.at("device").c_str(), r.at("dtype").c_str(), ratio);
    if (r.at("role") == "listed") continue;
    ASSERT_TRUE(r.at("role") == "fit" || r.at("role") == "check") << r.at("role");
    ++held;
    checks += r.at("role") == "check";
    presets.insert(r.at("device"));
    EXPECT_GT(ratio, 0.85);
    EXPECT_LT(ratio, 1.15);
  }
  EXPECT_GE(held, 10);
  EXPECT_GE(presets.size(), 4u);
  EXPECT_GE(3 * checks, held);
}

}  // namespace
}  // namespace testbed
