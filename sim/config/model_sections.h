// The workload's sub-sections that shape one model, data set or adapter each (the scenario's
// workload.gpt, .llama, .bert, .synthetic and .adapter; sim/config/scenario.h holds the rest).
#pragma once

#include <string>

#include "sim/config/choices.h"
#include "sim/config/field_types.h"

namespace testbed {

// The GPT's shape (training/models/gpt.h: tiny, small, GPT-2's four); 0 keeps the preset's value.
struct GptSection {
  std::string preset = "tiny";
  int layers = 0, heads = 0, width = 0, context = 0;
  int vocab = 0;
  double dropout = 0;
  template <class V>
  void fields(V& v) {
    v.field("preset", preset, Choices{{"tiny", "small", "gpt2_124m", "gpt2_355m", "gpt2_774m", "gpt2_1558m"}});
    v.field("vocab", vocab, Range{0, 1 << 24});
    v.field("layers", layers, Range{0, 1024});
    v.field("heads", heads, Range{0, 1024});
    v.field("width", width, Range{0, 1 << 16});
    v.field("context", context, Range{0, 1 << 16});
    v.field("dropout", dropout, Range{0, 1, false, true});
  }
};

// The LLaMA-style decoder's shape (training/models/llama.h: tiny, 1b, 7b); 0 keeps the preset's value.
struct LlamaSection {
  std::string preset = "tiny";
  int layers = 0, heads = 0, kv_heads = 0, width = 0, hidden = 0, context = 0, vocab = 0;
  template <class V>
  void fields(V& v) {
    v.field("preset", preset, Choices{{"tiny", "1b", "7b", "intellect1_10b"}});
    v.field("layers", layers, Range{0, 1024});
    v.field("heads", heads, Range{0, 1024});
    v.field("kv_heads", kv_heads, Range{0, 1024});
    v.field("width", width, Range{0, 1 << 16});
    v.field("hidden", hidden, Range{0, 1 << 20});
    v.field("context", context, Range{0, 1 << 20});
    v.field("vocab", vocab, Range{0, 1 << 24});
  }
  bool operator==(const LlamaSection&) const = default;
};

// The BERT encoder's shape (training/models/bert.h: tiny, base, large); 0 keeps the preset's value.
struct BertSection {
  std::string preset = "tiny";
  int layers = 0, heads = 0, width = 0, sequence = 0, vocab = 0;
  // classification: a classifier on the pooler (trains on brown_genres); pretraining: the
  // masked-LM and next-sentence heads (projections only: the testbed has no pre-training data).
  std::string head = "classification";
  template <class V>
  void fields(V& v) {
    v.field("preset", preset, Choices{{"tiny", "base", "large"}});
    v.field("head", head, Choices{{"classification", "pretraining"}});
    v.field("layers", layers, Range{0, 1024});
    v.field("heads", heads, Range{0, 1024});
    v.field("width", width, Range{0, 1 << 16});
    v.field("sequence", sequence, Range{0, 512});
    v.field("vocab", vocab, Range{0, 1 << 24});
  }
  bool operator==(const BertSection&) const = default;
};

// A teacher network labels Gaussian inputs: a task with a known optimum, for fast tests.
struct SyntheticSection {
  std::string task = "classification";  // classification | regression
  int inputs = 32, outputs = 10, hidden = 64;
  int train_samples = 20000, test_samples = 2000;
  template <class V>
  void fields(V& v) {
    v.field("task", task, Choices{{"classification", "regression"}});
    v.field("inputs", inputs, Range{1, 1 << 20});
    v.field("outputs", outputs, Range{1, 1 << 20});
    v.field("hidden", hidden, Range{1, 1 << 20});
    v.field("train_samples", train_samples, Range{1, 1e9});
    v.field("test_samples", test_samples, Range{1, 1e9});
  }
};

// Low-rank adapters on every dense layer: only they train and travel.
struct AdapterSection {
  AdapterKind kind = AdapterKind::None;  // lora_fa: A frozen from a shared seed, B trains
  int rank = 4;
  double alpha = 0;  // scale = alpha / rank; 0 means scale 1
  template <class V>
  void fields(V& v) {
    v.field("kind", kind);
    v.field("rank", rank, Range{1, 1 << 16});
    v.field("alpha", alpha, Range{0, 1e6});
  }
};

}  // namespace testbed
