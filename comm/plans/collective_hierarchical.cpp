// Hierarchical all-reduce (the WAN setting): reduce inside each cluster, ring among leaders,
// broadcast back inside each cluster.
#include <map>
#include <stdexcept>
#include <vector>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_builder.h"

namespace testbed {

using namespace plan_builder;

CollectivePlan hierarchical_all_reduce(const std::vector<int>& cluster_of, int64_t elements, double element_bytes,
                                       int slices) {
  const int p = static_cast<int>(cluster_of.size());
  check_sizes("hierarchical_all_reduce", p, elements, element_bytes);
  if (slices < 1) throw std::invalid_argument("hierarchical_all_reduce: slices must be >= 1");
  CollectivePlan plan = empty_plan(p);
  // Clusters in order of their lowest rank, which leads them.
  std::map<int, int> index_of;  // cluster id -> position among leaders
  std::vector<int> leaders;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < p; ++r) {
    auto [it, fresh] = index_of.emplace(cluster_of[r], static_cast<int>(leaders.size()));
    if (fresh) {
      leaders.push_back(r);
      members.emplace_back();
    } else {
      members[it->second].push_back(r);
    }
  }
  const int L = static_cast<int>(leaders.size());
  std::vector<std::vector<int>> gathered(L);
  for (int i = 0; i < L; ++i)
    for (int m : members[i])
      gathered[i].push_back(add(plan, chunk(m, leaders[i], 0, 0, elements, element_bytes, ChunkOp::Reduce)));
  const size_t before_ring = plan.messages.size();
  ring_all_reduce_among(plan, leaders, elements, element_bytes, slices, gathered);
  for (int i = 0; i < L; ++i) {
    // The leader holds the sum once its members' buffers and every ring message to it are in.
    std::vector<int> after = gathered[i];
    for (int m : plan.inbox[leaders[i]])
      if (static_cast<size_t>(m) >= before_ring) after.push_back(m);
    for (int m : members[i]) {
      CollectiveMessage msg = chunk(leaders[i], m, 0, 0, elements, element_bytes, ChunkOp::Copy);
      msg.after = after;
      add(plan, std::move(msg));
    }
  }
  return plan;
}

}  // namespace testbed
