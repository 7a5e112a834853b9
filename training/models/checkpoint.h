// Saving a model's weights and starting models from them (pretrain, then fine-tune), and reading
// saved tensors back into place.
#pragma once

#include <string>

#include <torch/nn/module.h>
#include <torch/serialize/archive.h>

namespace testbed {

// Writes every named parameter and buffer (LibTorch archive format).
void save_checkpoint(const torch::nn::Module& module, const std::string& path);

// Loads, by name, every parameter the checkpoint has; parameters it lacks keep their
// initial values, so a model with adapters can start from a checkpoint saved without them.
// Throws std::runtime_error if the file is unreadable, a shape differs, or nothing matched.
void load_checkpoint(torch::nn::Module& module, const std::string& path);

// Reads `key` of `archive` into `into`, in place (copy_: views of `into` stay valid). False
// when the archive has no `key`; throws std::runtime_error when the shapes differ.
bool read_into(torch::serialize::InputArchive& archive, const std::string& key, torch::Tensor& into);

}  // namespace testbed
