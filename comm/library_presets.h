// The collective libraries a scenario can name (collective.library) and the figures each
// preset carries for its transports, from published measurements (docs/network.md#library-presets
// lists every figure's source and the calibration test holds them, tests/comm/test_library_calibration.cpp).
#pragma once

#include <string>

#include "comm/library_costs.h"

namespace testbed {

// none: the network's time alone (line rate, link latency), the testbed's model before
// libraries. nccl: NVIDIA's, on GPUs. gloo: PyTorch's CPU backend. mpi: Open MPI (TCP, or UCX
// over InfiniBand). horovod: Horovod over NCCL, whose background thread fuses the all-reduces
// submitted in each cycle (the engine's fuse_by_cycle); its messages cost NCCL's.
enum class CollectiveLibrary { None, Nccl, Gloo, Mpi, Horovod };

// How a library reaches another machine: TCP sockets over Ethernet, or InfiniBand (RoCE) verbs.
enum class NetworkTransport { Socket, Ib };

// How a library reaches another GPU of its machine: peer-to-peer over NVLink or PCIe, or
// staged through host memory (shm) where the GPUs have no peer-to-peer (GeForce cards on PCIe).
enum class LocalTransport { P2p, Shm };

// A library's figures: its launch, and what each transport adds to a message. Every figure is
// a single value a run may override (collective.* in docs/scenario.md).
struct LibraryPreset {
  double launch_s = 0;
  TransportCosts socket, ib;  // between machines
  TransportCosts p2p, shm;    // inside a machine
  // How much longer the backward passes that share the GPU with the library's collectives take
  // (compute.overlap_slowdown's default): its kernels take SMs and memory bandwidth from them.
  double overlap_slowdown = 0;
};

const LibraryPreset& library_preset(CollectiveLibrary library);

// The preset's costs for the chosen transports (machine_of_host left to the caller).
LibraryCosts preset_costs(CollectiveLibrary library, NetworkTransport network, LocalTransport local);

}  // namespace testbed
