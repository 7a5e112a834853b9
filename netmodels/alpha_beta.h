// Reference lower bounds for transfers and collectives (the textbook alpha-beta costs; docs/network.md#collectives).
#pragma once

#include <algorithm>
#include <cmath>

namespace testbed::alpha_beta {

// alpha: per-message latency (s); beta: seconds per byte; n: bytes; p: ranks.
inline double point_to_point(double alpha, double beta, double n) { return alpha + n * beta; }
inline double ring_all_reduce(double alpha, double beta, double n, int p) {
  return 2.0 * (p - 1) * alpha + 2.0 * (p - 1) / p * n * beta;
}
inline double halving_doubling(double alpha, double beta, double n, int p) {
  return 2.0 * std::log2(p) * alpha + 2.0 * (p - 1) / p * n * beta;
}
// A ring of `hops` dependent steps of `chunk` bytes each, every chunk sent as `slices`
// pieces of s = chunk/slices that move on as soon as they land (collective.slices): the last
// piece leaves its first link after the other slices-1 and then crosses every hop,
// hops (alpha + s beta) + (slices-1) s beta; and each link carries hops x chunk in all,
// alpha + hops chunk beta. With one slice this is the store-and-forward formula above.
inline double pipelined_ring(double alpha, double beta, double chunk, int hops, int slices) {
  if (hops <= 0) return 0.0;
  const double s = chunk / slices;
  return std::max(hops * (alpha + s * beta) + (slices - 1) * s * beta, alpha + hops * chunk * beta);
}
inline double ring_all_reduce_sliced(double alpha, double beta, double n, int p, int slices) {
  return pipelined_ring(alpha, beta, n / p, 2 * (p - 1), slices);
}
inline double ring_all_gather_sliced(double alpha, double beta, double n, int p, int slices) {
  return pipelined_ring(alpha, beta, n / p, p - 1, slices);
}
inline double ring_all_gather(double alpha, double beta, double n, int p) {
  return (p - 1) * alpha + static_cast<double>(p - 1) / p * n * beta;
}
inline double gossip(double alpha, double beta, double n, int degree) { return alpha + degree * n * beta; }
inline double parameter_server(double alpha, double beta, double n, int p) { return 2.0 * (alpha + p * n * beta); }

}  // namespace testbed::alpha_beta
