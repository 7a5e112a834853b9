// Optimizer state through LibTorch's archives, in memory or on disk.
#include "sim/core/federated/client_state_store.h"

#include <filesystem>
#include <sstream>

#include <torch/serialize.h>

namespace testbed {

ClientStateStore::ClientStateStore(ClientState kind, int clients, std::string directory)
    : kind_(kind), directory_(kind == ClientState::Disk ? std::move(directory) : std::string()) {
  if (kind_ == ClientState::Memory) saved_.resize(static_cast<size_t>(clients));
  if (kind_ == ClientState::Disk) std::filesystem::create_directories(directory_);
}

ClientStateStore::~ClientStateStore() {
  if (directory_.empty()) return;
  std::error_code ignored;  // the clients' state is the run's scratch: it goes with the run
  std::filesystem::remove_all(directory_, ignored);
}

std::string ClientStateStore::file(int client) const {
  return directory_ + "/client_" + std::to_string(client) + ".pt";
}

void ClientStateStore::restore(int client, torch::optim::Optimizer& optimizer) const {
  if (kind_ == ClientState::None) return;
  torch::serialize::InputArchive archive;
  if (kind_ == ClientState::Memory) {
    const std::string& bytes = saved_[static_cast<size_t>(client)];
    if (bytes.empty()) return;  // never picked before
    std::istringstream in(bytes);
    archive.load_from(in);
  } else {
    if (!std::filesystem::exists(file(client))) return;
    archive.load_from(file(client));
  }
  optimizer.load(archive);
}

void ClientStateStore::keep(int client, torch::optim::Optimizer& optimizer) {
  if (kind_ == ClientState::None) return;
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  if (kind_ == ClientState::Disk) return archive.save_to(file(client));
  std::ostringstream out;
  archive.save_to(out);
  saved_[static_cast<size_t>(client)] = out.str();
}

}  // namespace testbed
