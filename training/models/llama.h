// A LLaMA-style decoder (Touvron et al. 2023): token embeddings, pre-norm blocks of RMSNorm,
// causal self-attention with rotary position embeddings (grouped-query when kv_heads < heads)
// and a SwiGLU MLP, a final RMSNorm and a linear head; no biases.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "training/models/model_shapes.h"
#include "training/models/models.h"

namespace testbed {

struct LlamaConfig {
  int vocab = 256;
  int layers = 2, heads = 4, kv_heads = 2, width = 128, hidden = 352, context = 64;
  bool tie_embeddings = false;  // the head is the token embedding's transpose (Llama 3.2 1B)
  double rope_theta = 10000, norm_eps = 1e-5;
};

// Named shapes: tiny (byte-level, trains here), 1b (Llama 3.2 1B: 16 layers, width 2048, 32
// heads, 8 KV heads, hidden 8192, 128 256 tokens, tied; context 2048 here) and 7b (Llama 2 7B: 32
// layers, width 4096, 32 heads, hidden 11 008, 32 000 tokens, context 4096) and intellect1_10b
// (INTELLECT-1's config.json: 42 layers, width 4096, 32 heads, 8 KV heads, hidden 14 336,
// 128 256 tokens, untied, context 8192). Throws std::invalid_argument for an unknown name.
LlamaConfig llama_preset(const std::string& name);

// Logits [B, T, vocab] for int64 tokens [B, T] with T <= context. Throws std::invalid_argument
// for a shape that does not divide (width by heads, heads by kv_heads, an odd head size).
std::shared_ptr<Model> make_llama(const LlamaConfig& config);

// The same model's trainable shapes and layer costs, without building it (a 7B model's
// weights would not fit): what a projection needs. Equal to shapes_of(*make_llama(config)).
ModelShapes llama_shapes(const LlamaConfig& config);

}  // namespace testbed
