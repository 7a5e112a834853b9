// A nanoGPT-style byte-level decoder: token + position embeddings, pre-norm blocks of
// causal self-attention and an MLP, a final norm and a linear head.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "training/models/dense.h"
#include "training/models/models.h"

namespace testbed {

struct GptConfig {
  int vocab = 256;
  int layers = 2, heads = 4, width = 128, context = 64;
  double dropout = 0;
  // The head is the token embedding's transpose, without a bias (GPT-2's lm_head): no
  // parameters of its own.
  bool tie_embeddings = false;
  AdapterConfig adapter;  // applied to every Dense layer (attention and MLP projections, head)
};

// Named shapes: tiny and small (byte-level, 256 tokens) and GPT-2's four (Radford et al. 2019:
// 50 257 tokens, context 1024, tied head): gpt2_124m (12 layers, 12 heads, width 768),
// gpt2_355m (24, 16, 1024), gpt2_774m (36, 20, 1280), gpt2_1558m (48, 25, 1600). Throws
// std::invalid_argument for an unknown name.
GptConfig gpt_preset(const std::string& name);

// Logits [B, T, vocab] for int64 tokens [B, T] with T <= context. Throws
// std::invalid_argument when width is not divisible by heads.
std::shared_ptr<Model> make_gpt(const GptConfig& config);

}  // namespace testbed
