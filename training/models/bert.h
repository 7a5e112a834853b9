// A BERT encoder (Devlin et al. 2019) with a sequence-classification head, as Hugging Face's
// BertForSequenceClassification, or with the pre-training heads, as its BertForPreTraining: word,
// position and token-type embeddings with a LayerNorm, post-norm blocks of bidirectional
// self-attention and a GELU MLP, the pooler (tanh of a dense layer on the first position), then a
// linear classifier, or the masked-LM head (a dense layer, GELU and LayerNorm, then the word
// embeddings' transpose and a bias of its own over the vocabulary, at every position) and the
// next-sentence classifier on the pooler.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "training/models/models.h"

namespace testbed {

struct BertConfig {
  int vocab = 256;
  int layers = 2, heads = 4, width = 128, positions = 512;
  int sequence = 64;  // tokens a sample (<= positions)
  int classes = 2;
  bool pretraining = false;  // the pre-training heads instead of the classifier (classes unused)
};

// Named shapes: tiny (trains here), base (12 layers, width 768, 12 heads) and large (24, 1024,
// 16), both with BERT's 30 522-token vocabulary and 512 positions; sequence 128. Throws
// std::invalid_argument for an unknown name.
BertConfig bert_preset(const std::string& name);

// Logits [B, classes] for int64 tokens [B, T] with T <= positions. Throws std::invalid_argument
// when width is not divisible by heads.
std::shared_ptr<Model> make_bert(const BertConfig& config);

// With the pre-training heads, forward's masked-LM logits [B, T, vocab] and the next-sentence
// logits [B, 2]. Throws std::invalid_argument for a model without them.
std::pair<torch::Tensor, torch::Tensor> bert_pretraining_logits(Model& bert, const torch::Tensor& tokens);

}  // namespace testbed
