// The libraries' figures. Each is fitted to, or read from, a published measurement named in
// docs/network.md#library-presets (ids such as B4, L15); the rows that check rather than fit
// are held beside them by tests/comm/test_library_calibration.cpp.
#include "comm/library_presets.h"

#include <stdexcept>

namespace testbed {

const LibraryPreset& library_preset(CollectiveLibrary library) {
  static const LibraryPreset none{};
  // NCCL, its Simple protocol's costs (what the large buckets of training run under). Each
  // transport: its message latency, then its rate limit (a share of the link, a cap).
  static const LibraryPreset nccl = [] {
    LibraryPreset p;
    // L19: a collective's launch, what CUDA graphs save (3.5 -> 0.5 us a call).
    p.launch_s = 3.0e-6;
    // L5 (2 A100, 8 B: 9.85 us); B1, B16 (ring busbw 370 of 450 GB/s, 208 of 300).
    p.p2p = {0.7125e-6, {0.74, 0}};
    // L8 (2 T4 across sockets, 8 B: 20.36 us); B13 (8 and 4 RTX 5090: 28 and 35 of 64 GB/s).
    p.shm = {2.34e-6, {0.49, 0}};
    // L13 (25 GbE, 8 B broadcast: 45.82 us); B8, B7 (1.7 GB/s on 25 GbE, 14.7 Gb/s on 32 GbE:
    // the socket threads' rate, not a share of the wire; slower Ethernet runs at line rate).
    p.socket = {20.41e-6, {1, 14.2e9}};
    // L4 (200 Gb/s RoCE, 8 KB: 35.15 us); B4 (24 GB/s of each 200 Gb/s NIC).
    p.ib = {7.62e-6, {0.964, 0}};
    // Echo (arXiv 2412.12487, Table 2): a GEMM beside a 25 MB all-reduce under PyTorch DDP and
    // NCCL 2.22.3 on 8 A100s runs 1.269x as long (docs/compute.md#overlap-slowdown).
    p.overlap_slowdown = 0.269;
    return p;
  }();
  // Gloo on CPU tensors over TCP (or ibverbs): no kernel launch; one thread's copies and
  // reductions cap a message's rate whatever the wire. No overlap slowdown: none measured (its
  // threads take CPU cores, not the GPU's SMs).
  static const LibraryPreset gloo = [] {
    LibraryPreset p;
    // L15 (4 machines, 40 GbE: 4 B in 263 us, 20 MB in 10 608 us).
    p.socket = {20.9e-6, {1, 23.2e9}};
    // L14 (2 servers, ibverbs 100 Gb/s: 1 KB in 39 us).
    p.ib = {9.457e-6, {1, 0}};
    // One machine's ranks talk TCP over loopback.
    p.p2p = p.socket;
    p.shm = p.socket;
    return p;
  }();
  // Open MPI: no kernel launch; its TCP transport one connection a pair, which one stream's
  // copies cap whatever the wire; UCX over InfiniBand or RoCE close to line rate. No overlap
  // slowdown: none measured.
  static const LibraryPreset mpi = [] {
    LibraryPreset p;
    // T1 (Open MPI, 10 GbE TCP through a switch, osu_latency 0 B: 22.07 us); T4 (osu_bw on a
    // 100 Gb/s NIC: 1178 MB/s, one connection's rate).
    p.socket = {10.035e-6, {1, 9.48e9}};
    // I1 (Open MPI 4.0.3 + UCX, 100 Gb InfiniBand: 1.00 us, osu_bw 12.17 GB/s).
    p.ib = {0.25e-6, {0.9797, 0}};
    // Not measured here: inside a machine MPI's shared-memory transport is taken as its network one.
    p.p2p = p.socket;
    p.shm = p.socket;
    return p;
  }();
  switch (library) {
    case CollectiveLibrary::None:
      return none;
    case CollectiveLibrary::Nccl:
    case CollectiveLibrary::Horovod:
      return nccl;
    case CollectiveLibrary::Gloo:
      return gloo;
    case CollectiveLibrary::Mpi:
      return mpi;
  }
  throw std::invalid_argument("unknown collective library " + std::to_string(static_cast<int>(library)));
}

LibraryCosts preset_costs(CollectiveLibrary library, NetworkTransport network, LocalTransport local) {
  const LibraryPreset& p = library_preset(library);
  LibraryCosts costs;
  costs.launch_s = p.launch_s;
  costs.network = network == NetworkTransport::Ib ? p.ib : p.socket;
  costs.local = local == LocalTransport::Shm ? p.shm : p.p2p;
  return costs;
}

}  // namespace testbed
