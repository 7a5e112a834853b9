// A BERT encoder with a sequence-classification head (Devlin et al. 2019, as Hugging Face's
// BertForSequenceClassification): word, position and token-type embeddings with a LayerNorm,
// post-norm blocks of bidirectional self-attention and a GELU MLP, the pooler (tanh of a dense
// layer on the first position) and a linear classifier.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "training/models/models.h"

namespace testbed {

struct BertConfig {
  int vocab = 256;
  int layers = 2, heads = 4, width = 128, positions = 512;
  int sequence = 64;  // tokens a sample (<= positions)
  int classes = 2;
};

// Named shapes: tiny (trains here), base (12 layers, width 768, 12 heads) and large (24, 1024,
// 16), both with BERT's 30 522-token vocabulary and 512 positions; sequence 128. Throws
// std::invalid_argument for an unknown name.
BertConfig bert_preset(const std::string& name);

// Logits [B, classes] for int64 tokens [B, T] with T <= positions. Throws std::invalid_argument
// when width is not divisible by heads.
std::shared_ptr<Model> make_bert(const BertConfig& config);

}  // namespace testbed
