// Checkpoints as LibTorch archives keyed by parameter name.
#include "training/checkpoint.h"

#include <filesystem>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {

void save_checkpoint(const torch::nn::Module& module, const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  torch::serialize::OutputArchive archive;
  for (const auto& item : module.named_parameters()) archive.write(item.key(), item.value().detach().cpu());
  for (const auto& item : module.named_buffers()) archive.write(item.key(), item.value().cpu(), true);
  archive.save_to(path);
}

void load_checkpoint(torch::nn::Module& module, const std::string& path) {
  if (!std::filesystem::exists(path)) throw std::runtime_error("checkpoint " + path + " does not exist");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw std::runtime_error("checkpoint " + path + " is not readable: " + e.what_without_backtrace());
  }
  torch::NoGradGuard no_grad;
  int loaded = 0;
  for (auto& item : module.named_parameters()) {
    torch::Tensor saved;
    if (!archive.try_read(item.key(), saved)) continue;
    if (!saved.sizes().equals(item.value().sizes())) {
      throw std::runtime_error("checkpoint " + path + ": '" + item.key() + "' has shape " +
                               c10::str(saved.sizes()) + ", the model has " + c10::str(item.value().sizes()));
    }
    item.value().copy_(saved);
    ++loaded;
  }
  if (loaded == 0) throw std::runtime_error("checkpoint " + path + " holds none of this model's parameters");
}

}  // namespace testbed
