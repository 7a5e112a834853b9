// A collective's message DAG on the clock: a message leaves when its last dependency lands.
#include "netmodels/plan_runner.h"

#include <functional>
#include <stdexcept>

namespace testbed {

double simulate_plan(EventClock& clock, Network& network, const CollectivePlan& plan, const std::vector<int>& hosts) {
  if (static_cast<int>(hosts.size()) != plan.ranks)
    throw std::invalid_argument("simulate_plan: one host per rank is needed");
  const size_t m = plan.messages.size();
  std::vector<int> unmet(m);
  std::vector<std::vector<int>> dependents(m);
  for (size_t i = 0; i < m; ++i) {
    unmet[i] = static_cast<int>(plan.messages[i].after.size());
    for (int dep : plan.messages[i].after) dependents[dep].push_back(static_cast<int>(i));
  }
  const double start = clock.now();
  double last = start;
  size_t delivered = 0;
  uint64_t next_id = 0;
  std::function<void(int)> send = [&](int i) {
    const auto& msg = plan.messages[i];
    network.send({next_id++, hosts[msg.src], hosts[msg.dst], msg.bytes}, [&, i](const Delivery& d) {
      ++delivered;
      last = std::max(last, d.t_recv);
      for (int next : dependents[i]) {
        if (--unmet[next] == 0) send(next);
      }
    });
  };
  clock.schedule(0, [&] {
    for (size_t i = 0; i < m; ++i) {
      if (unmet[i] == 0) send(static_cast<int>(i));
    }
  });
  clock.run();
  if (delivered != m) throw std::runtime_error("simulate_plan: the clock stopped before every message arrived");
  return last - start;
}

}  // namespace testbed
