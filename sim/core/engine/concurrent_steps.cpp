// Training due nodes together: the decision and a small pool of host threads.
#include "sim/core/engine/concurrent_steps.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>

#include "training/numerics.h"

namespace testbed {

int concurrent_step_threads(const Scenario& scenario, const Algorithm& algorithm, bool compute_deterministic,
                            bool spread) {
  const int threads =
      scenario.threads > 0 ? scenario.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool random_model = scenario.workload.model == "gpt" && scenario.workload.gpt.dropout > 0;
  if (threads < 2 || scenario.nodes < 2 || spread || !scenario.workload.train || !numerics_portable() ||
      !algorithm.concurrent_local_steps() || random_model || !compute_deterministic)
    return 1;
  return std::min(threads, scenario.nodes);
}

void run_concurrently(size_t items, int threads, const std::function<void(size_t)>& work) {
  const int intra_op = at::get_num_threads();
  std::vector<std::exception_ptr> errors(items);
  std::atomic<size_t> next{0};
  // Which thread takes which item does not matter: each item's bits are its own.
  auto drain = [&] {
    at::set_num_threads(1);
    for (size_t i = next++; i < items; i = next++) {
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), items); ++t) pool.emplace_back(drain);
  drain();
  for (auto& t : pool) t.join();
  at::set_num_threads(intra_op);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace testbed
