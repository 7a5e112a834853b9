// Checkpoints as LibTorch archives keyed by parameter name.
#include "training/models/checkpoint.h"

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
  int loaded = 0;
  try {
    for (auto& item : module.named_parameters()) loaded += read_into(archive, item.key(), item.value());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("checkpoint " + path + ": " + e.what());
  }
  if (loaded == 0) throw std::runtime_error("checkpoint " + path + " holds none of this model's parameters");
}

bool read_into(torch::serialize::InputArchive& archive, const std::string& key, torch::Tensor& into) {
  torch::Tensor saved;
  if (!archive.try_read(key, saved)) return false;
  if (!saved.sizes().equals(into.sizes())) {
    throw std::runtime_error("'" + key + "' has shape " + c10::str(saved.sizes()) + ", where " +
                             c10::str(into.sizes()) + " is expected");
  }
  torch::NoGradGuard no_grad;
  into.copy_(saved);
  return true;
}

}  // namespace testbed
