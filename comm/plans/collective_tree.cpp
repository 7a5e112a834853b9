// Double binary tree all-reduce: two complementary trees, each reducing and broadcasting half.
#include <stdexcept>
#include <string>

#include "comm/plans/collectives.h"
#include "comm/plans/plan_builder.h"

namespace testbed {

std::vector<std::vector<int>> binary_tree_children(int ranks) {
  std::vector<std::vector<int>> children(ranks);
  if (ranks < 2) return children;
  // The root's one child: the largest power of two below p, whose subtree spans 1..p-1.
  int top = 1;
  while (top * 2 < ranks) top *= 2;
  children[0].push_back(top);
  for (int r = 1; r < ranks; ++r) {
    const int bit = r & -r;  // r's subtree spans (r - bit, r + bit)
    if (bit == 1) continue;  // odd ranks are leaves
    children[r].push_back(r - bit / 2);
    // The right child: the largest offset that stays inside the ranks; its subtree then
    // covers everything between r and p that r's own would have.
    for (int step = bit / 2; step >= 1; step /= 2) {
      if (r + step < ranks) {
        children[r].push_back(r + step);
        break;
      }
    }
  }
  return children;
}

namespace {

using namespace plan_builder;

// Reduce [begin, begin+count) up the tree to its root, then broadcast it down. `rank_at`
// maps tree positions to plan ranks.
void tree_reduce_broadcast(CollectivePlan& plan, const std::vector<std::vector<int>>& children,
                           const std::vector<int>& rank_at, int64_t begin, int64_t count, double element_bytes) {
  const int p = static_cast<int>(children.size());
  std::vector<int> parent(p, -1);
  for (int u = 0; u < p; ++u)
    for (int c : children[u]) {
      if (parent[c] != -1) throw std::logic_error("binary tree: position " + std::to_string(c) + " has two parents");
      parent[c] = u;
    }
  // Up: a position sends its partial sum once every child's has reached it; in post-order
  // a child's message exists before its parent's names it.
  std::vector<int> up(p, -1);  // message position -> parent
  std::vector<int> order;      // post-order from the root
  std::vector<std::pair<int, bool>> stack{{0, false}};
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      order.push_back(u);
      continue;
    }
    stack.push_back({u, true});
    for (int c : children[u]) stack.push_back({c, false});
  }
  if (static_cast<int>(order.size()) != p) throw std::logic_error("binary tree: not every position is reachable");
  for (int u : order) {
    if (parent[u] < 0) continue;
    CollectiveMessage m = chunk(rank_at[u], rank_at[parent[u]], begin, begin, count, element_bytes, ChunkOp::Reduce);
    for (int c : children[u]) m.after.push_back(up[c]);
    up[u] = add(plan, std::move(m));
  }
  // Down: the root once all its children's sums are in; every other position once its
  // parent's copy is in.
  std::vector<int> down(p, -1);  // message parent -> position
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int u = *it;
    for (int c : children[u]) {
      CollectiveMessage m = chunk(rank_at[u], rank_at[c], begin, begin, count, element_bytes, ChunkOp::Copy);
      if (parent[u] < 0) {
        for (int cc : children[u]) m.after.push_back(up[cc]);
      } else {
        m.after = {down[u]};
      }
      down[c] = add(plan, std::move(m));
    }
  }
}

}  // namespace

CollectivePlan tree_all_reduce(int ranks, int64_t elements, double element_bytes) {
  check_sizes("tree_all_reduce", ranks, elements, element_bytes);
  const int p = ranks;
  CollectivePlan plan = empty_plan(p);
  if (p == 1) return plan;
  const auto children = binary_tree_children(p);
  std::vector<int> tree_a(p), tree_b(p);
  for (int u = 0; u < p; ++u) {
    tree_a[u] = u;
    // Mirrored (p even) or shifted (p odd), so that tree A's leaves, the odd positions,
    // are mostly inner ranks of tree B and no rank forwards both halves twice over.
    tree_b[u] = p % 2 == 0 ? p - 1 - u : (u + 1) % p;
  }
  const int64_t half = elements / 2;
  tree_reduce_broadcast(plan, children, tree_a, 0, half, element_bytes);
  tree_reduce_broadcast(plan, children, tree_b, half, elements - half, element_bytes);
  return plan;
}

}  // namespace testbed
