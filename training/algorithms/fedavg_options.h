// FedAvg's scenario keys (sim/core/federated/federated_run.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// How the picked clients' local training is packed onto `devices` executors (FedML Parrot):
// sequential deals them out in turn (the k-th picked client to device k mod D); balanced is
// Parrot's heterogeneity-aware schedule: clients by estimated workload (local steps over speed),
// largest first, each onto the device with the least estimated work so far.
enum class ClientSchedule { Sequential, Balanced };

template <>
struct EnumNames<ClientSchedule> {
  static const std::vector<std::pair<ClientSchedule, std::string>>& all() {
    static const std::vector<std::pair<ClientSchedule, std::string>> names = {
        {ClientSchedule::Sequential, "sequential"}, {ClientSchedule::Balanced, "balanced"}};
    return names;
  }
};

// What a client keeps between the rounds it is picked for: nothing (stateless, built from the
// global model with a fresh optimizer), or its optimizer's state (momentum, Adam's moments:
// what SCAFFOLD-like and personalised methods need, and what VHL's reference keeps) in memory
// or spilled to disk beside the output file.
enum class ClientState { None, Memory, Disk };

template <>
struct EnumNames<ClientState> {
  static const std::vector<std::pair<ClientState, std::string>>& all() {
    static const std::vector<std::pair<ClientState, std::string>> names = {
        {ClientState::None, "none"}, {ClientState::Memory, "memory"}, {ClientState::Disk, "disk"}};
    return names;
  }
};

// How VHL's virtual images are normalised: as the real ones (Fashion-MNIST's mean 0.286 and std
// 0.353, the default: real and virtual inputs of one network share their statistics), or as
// the reference's loader normalises its generated images, (x - 0.5) / 0.25.
enum class VhlNormalisation { Dataset, Reference };

template <>
struct EnumNames<VhlNormalisation> {
  static const std::vector<std::pair<VhlNormalisation, std::string>>& all() {
    static const std::vector<std::pair<VhlNormalisation, std::string>> names = {
        {VhlNormalisation::Dataset, "dataset"}, {VhlNormalisation::Reference, "reference"}};
    return names;
  }
};

// Whether a VHL step augments the virtual images it draws: not at all (the default: the real
// images are not augmented either, so both inputs of one network are treated alike), or as the
// reference's loader does (data_preprocessing/generative/data_loader.py): a random crop of the
// image padded by 4 zero pixels on each side, then a horizontal flip with probability 1/2.
enum class VhlAugment { None, CropFlip };

template <>
struct EnumNames<VhlAugment> {
  static const std::vector<std::pair<VhlAugment, std::string>>& all() {
    static const std::vector<std::pair<VhlAugment, std::string>> names = {{VhlAugment::None, "none"},
                                                                          {VhlAugment::CropFlip, "crop_flip"}};
    return names;
  }
};

// VHL (Tang et al., ICML 2022): a shared virtual data set from a seeded, untrained generator,
// mixed into every local step with the feature-calibration loss (training/vhl.h).
struct VhlOptions {
  int virtual_samples = 200;  // per class (the reference's 200)
  double weight = 1.0;        // of the calibration term (real features against virtual anchors)
  VhlNormalisation normalisation = VhlNormalisation::Dataset;
  VhlAugment augment = VhlAugment::None;
  template <class V>
  void fields(V& v) {
    v.field("virtual_samples", virtual_samples, Range{1, 1e6});
    v.field("weight", weight, Range{0, 1e6});
    v.field("normalisation", normalisation);
    v.field("augment", augment);
  }
  bool operator==(const VhlOptions&) const = default;
};

struct FedAvgOptions {
  int H = 10;                 // local steps a picked client runs from the global model each round
  int clients_per_round = 0;  // 0: round(fraction x clients), at least 1
  double fraction = 0.1;      // McMahan et al.'s C
  // The server's step on the averaged model: x <- x - server_lr m, m <- server_momentum m +
  // (x - average) (FedAvgM, Hsu et al. 2019; server_lr 1 and momentum 0 is FedAvg itself).
  double server_lr = 1.0;
  double server_momentum = 0.0;
  std::optional<Duration> deadline;  // from a round's start; later uploads are not applied (unset: none)
  int server = -1;                   // the server's host; -1: the host after the clients' (the topology has nodes + 1)
  // > 0: a picked client runs E epochs of its shard, ceil(E n_k / B) local steps (McMahan et
  // al.'s u = E n / B), instead of H; H then only sets a round's length on the step axis.
  double local_epochs = 0;
  // > 0: the picked clients' training shares this many executors, one client at a time each
  // (Parrot's simulation devices); a client whose download is in waits for its device. 0: every
  // client trains on its own device.
  int devices = 0;
  ClientSchedule schedule = ClientSchedule::Sequential;
  std::optional<VhlOptions> vhl;  // set: every local step is VHL's (virtual batch, calibration loss)
  ClientState client_state = ClientState::None;

  template <class V>
  void fields(V& v) {
    v.field("H", H, Range{1, 1e9});
    v.field("clients_per_round", clients_per_round, Range{0, 1e9});
    v.field("fraction", fraction, Range{0, 1, true});
    v.field("server_lr", server_lr, Range{0, 1e3, true});
    v.field("server_momentum", server_momentum, Range{0, 1, false, true});
    v.field("deadline", deadline, Range{0, 1e9});
    v.field("server", server, Range{-1, 1e9});
    v.field("local_epochs", local_epochs, Range{0, 1e6});
    v.field("devices", devices, Range{0, 1e6});
    v.field("schedule", schedule);
    v.field("vhl", vhl);
    v.field("client_state", client_state);
  }
  // A key the other keys leave unread is refused, as every scenario key is (issue 48).
  std::optional<OptionError> check() const {
    const FedAvgOptions d;
    if (clients_per_round > 0 && fraction != d.fraction)
      return OptionError{{"fraction"},
                         "'fraction' has no effect with clients_per_round " + std::to_string(clients_per_round) +
                             "; it is read only with clients_per_round 0"};
    if (devices == 0 && schedule != d.schedule)
      return OptionError{{"schedule"},
                         "'schedule' has no effect with devices 0 (every client on its own device); "
                         "it is read only with devices > 0"};
    return std::nullopt;
  }
  // Clients picked a round out of `clients`.
  int picked(int clients) const {
    if (clients_per_round > 0) return clients_per_round;
    return std::max(1, static_cast<int>(std::lround(fraction * clients)));
  }
  // The run loop holds no collective plans.
  int64_t plans_held(int, int, int) const { return 0; }
  bool operator==(const FedAvgOptions&) const = default;
};

}  // namespace testbed
