// Message and dependency counts of each plan builder, from the builders' loops (the tests
// compare them with built plans).
#include "comm/plans/plan_size.h"

#include <map>
#include <stdexcept>

namespace testbed {
namespace {

// Ring all-reduce among p positions, `s` pieces per chunk: 2(p-1) steps of p s messages, each
// after the first step waiting for one piece.
PlanSize ring_all_reduce_size(int64_t p, int64_t s) {
  if (p < 2) return {};
  return {2 * (p - 1) * p * s, (2 * (p - 1) - 1) * p * s, p == 2 ? 2 : p};
}

int64_t log2_floor(int64_t q) {
  int64_t log = 0;
  while ((int64_t{1} << (log + 1)) <= q) ++log;
  return log;
}

}  // namespace

PlanSize all_reduce_size(const CollectiveOptions& o, int ranks) {
  const int64_t p = ranks, s = o.slices;
  if (p < 2) return {};
  switch (o.algorithm) {
    case CollectiveAlgorithm::Ring:
      return ring_all_reduce_size(p, s);
    case CollectiveAlgorithm::Tree:
      // Two trees of p - 1 edges, each edge once up and once down. Up: a message waits for its
      // sender's children (every position but the root's one child is someone's child below the
      // root: p - 2); down: one wait each.
      // Pairs: both directions of each tree's edges, counted as if the trees shared none (they
      // share a few: the tests bound this against built plans up to 64 ranks).
      return {4 * (p - 1), 2 * ((p - 2) + (p - 1)), p == 2 ? 2 : 4 * (p - 1)};
    case CollectiveAlgorithm::HalvingDoubling: {
      // q = 2^L ranks halve then double, L rounds each; the p - q extra ranks fold in first and
      // get the result last. A message of round i waits for the fold (extra ranks' partners)
      // plus one message per round before it.
      const int64_t L = log2_floor(p), q = int64_t{1} << L, extra = p - q;
      // Pairs: each of the q ranks with its L partners, and the folds both ways.
      return {2 * extra + 2 * q * L, extra * (4 * L + 1) + q * (2 * L * L - L), q * L + 2 * extra};
    }
    case CollectiveAlgorithm::Direct:
      // p(p-1) chunks to their owners, then p(p-1) copies, each waiting for the owner's p-1.
      return {2 * p * (p - 1), p * (p - 1) * (p - 1), p * (p - 1)};
    case CollectiveAlgorithm::ParameterServer:
      return {2 * (p - 1), (p - 1) * (p - 1), 2 * (p - 1)};
    case CollectiveAlgorithm::Hierarchical: {
      if (static_cast<int64_t>(o.cluster_of.size()) != p)
        throw std::invalid_argument("hierarchical plan size: cluster_of does not cover the ranks");
      std::map<int, int64_t> size;  // cluster -> ranks in it
      for (int c : o.cluster_of) ++size[c];
      const int64_t leaders = static_cast<int64_t>(size.size()), members = p - leaders;
      PlanSize ring = ring_all_reduce_size(leaders, s);
      // Members reduce into their leader; every ring message of a leader also waits for its
      // members' (2(L-1) s messages per leader); each member's copy back waits for its
      // cluster's members and the leader's ring inbox.
      const int64_t ring_inbox = leaders < 2 ? 0 : 2 * (leaders - 1) * s;
      PlanSize out{members + ring.messages + members, ring.waits + members * ring_inbox, ring.pairs + 2 * members};
      for (const auto& [cluster, n] : size) out.waits += (n - 1) * ((n - 1) + ring_inbox);
      return out;
    }
  }
  throw std::logic_error("all_reduce_size: unknown algorithm");
}

PlanSize all_gather_size(const CollectiveOptions& o, int ranks) {
  const int64_t p = ranks, s = o.slices;
  if (p < 2) return {};
  if (o.algorithm == CollectiveAlgorithm::Direct) return {p * (p - 1), 0, p * (p - 1)};
  // Ring: p - 1 steps of p s pieces, each after the first waiting for one.
  return {(p - 1) * p * s, (p - 2) * p * s, p == 2 ? 2 : p};
}

PlanSize neighbour_exchange_size(const std::vector<int>& degrees) {
  PlanSize out;
  for (int d : degrees) out.messages += d;
  out.pairs = out.messages;
  return out;
}

double plan_memory_bytes(const PlanSize& size, int ranks) {
  // The plan: a message, its inbox entry, and an allocator chunk (at most 32 bytes of overhead)
  // for its `after` list. A run: PlanRunner's unmet count, sent flag and outgoing entry, its
  // reverse list (vector and chunk), and CollectiveRun's payload handle and lost-range vector.
  const double plan_per_message = sizeof(CollectiveMessage) + sizeof(int) + 32;
  const double run_per_message =
      sizeof(int) + 1 + sizeof(int) + sizeof(std::vector<int>) + 32 + 8 + sizeof(std::vector<int>);
  // Each wait is an int in the plan's `after` list and again in the runner's reverse list.
  const double per_wait = 2 * sizeof(int);
  const double per_rank = 4 * sizeof(std::vector<int>);  // inbox, outgoing, early arrivals, buffers
  return static_cast<double>(size.messages) * (plan_per_message + run_per_message) +
         static_cast<double>(size.waits) * per_wait + static_cast<double>(ranks) * per_rank;
}

}  // namespace testbed
