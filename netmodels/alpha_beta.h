// Reference lower bounds for transfers and collectives (DESIGN.md, "Reference formulas").
#pragma once

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
inline double ring_all_gather(double alpha, double beta, double n, int p) {
  return (p - 1) * alpha + static_cast<double>(p - 1) / p * n * beta;
}
inline double gossip(double alpha, double beta, double n, int degree) {
  return alpha + degree * n * beta;
}
inline double parameter_server(double alpha, double beta, double n, int p) {
  return 2.0 * (alpha + p * n * beta);
}

}  // namespace testbed::alpha_beta
