// All-reduces that gather at owners: direct (each chunk to its own rank) and the parameter
// server (everything to one rank).
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_builder.h"

namespace testbed {

using namespace plan_builder;

CollectivePlan direct_all_reduce(int ranks, int64_t elements, double element_bytes) {
  check_sizes("direct_all_reduce", ranks, elements, element_bytes);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  auto begin = [&](int c) { return part_begin(c, p, elements); };
  // Rank r sends to r+1, r+2, ... in that order (the shifted schedule of MPI's pairwise
  // exchange): were every rank to start with rank 0, the connections into the last rank
  // would all open last, and TCP flows from one sender that share its queue without loss
  // keep the share their head start gave them, so the last rank would be starved.
  std::vector<std::vector<int>> into(p);  // per owner: the chunks reduced into it
  for (int r = 0; r < p; ++r)
    for (int k = 1; k < p; ++k) {
      const int c = (r + k) % p;
      into[c].push_back(
          add(plan, chunk(r, c, begin(c), begin(c), begin(c + 1) - begin(c), element_bytes, ChunkOp::Reduce)));
    }
  for (int c = 0; c < p; ++c)
    for (int k = 1; k < p; ++k) {
      const int r = (c + k) % p;
      CollectiveMessage m = chunk(c, r, begin(c), begin(c), begin(c + 1) - begin(c), element_bytes, ChunkOp::Copy);
      m.after = into[c];
      add(plan, std::move(m));
    }
  return plan;
}

CollectivePlan parameter_server_all_reduce(int ranks, int64_t elements, double element_bytes, int server) {
  check_sizes("parameter_server_all_reduce", ranks, elements, element_bytes);
  if (server < 0 || server >= ranks)
    throw std::invalid_argument("parameter_server_all_reduce: server " + std::to_string(server) +
                                " is not a rank (0.." + std::to_string(ranks - 1) + ")");
  CollectivePlan plan = empty_plan(ranks);
  std::vector<int> pushed;
  for (int r = 0; r < ranks; ++r)
    if (r != server) pushed.push_back(add(plan, chunk(r, server, 0, 0, elements, element_bytes, ChunkOp::Reduce)));
  for (int r = 0; r < ranks; ++r) {
    if (r == server) continue;
    CollectiveMessage m = chunk(server, r, 0, 0, elements, element_bytes, ChunkOp::Copy);
    m.after = pushed;
    add(plan, std::move(m));
  }
  return plan;
}

}  // namespace testbed
