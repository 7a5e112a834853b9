// Saving a model's weights and starting models from them (pretrain, then fine-tune).
#pragma once

#include <string>

#include <torch/nn/module.h>

namespace testbed {

// Writes every named parameter and buffer (LibTorch archive format).
void save_checkpoint(const torch::nn::Module& module, const std::string& path);

// Loads, by name, every parameter the checkpoint has; parameters it lacks keep their
// initial values, so a model with adapters can start from a checkpoint saved without them.
// Throws std::runtime_error if the file is unreadable, a shape differs, or nothing matched.
void load_checkpoint(torch::nn::Module& module, const std::string& path);

}  // namespace testbed
