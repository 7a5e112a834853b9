// A nanoGPT-style byte-level decoder: token + position embeddings, pre-norm blocks of
// causal self-attention and an MLP, a final norm and a linear head.
#pragma once

#include <memory>
#include <string>

#include "training/dense.h"
#include "training/models.h"

namespace testbed {

struct GptConfig {
  int vocab = 256;
  int layers = 2, heads = 4, width = 128, context = 64;
  double dropout = 0;
  AdapterConfig adapter;  // applied to every Dense layer (attention and MLP projections, head)
};

// Named shapes; throws std::invalid_argument for an unknown name.
GptConfig gpt_preset(const std::string& name);

// Logits [B, T, vocab] for int64 tokens [B, T] with T <= context. Throws
// std::invalid_argument when width is not divisible by heads.
std::shared_ptr<Model> make_gpt(const GptConfig& config);

}  // namespace testbed
