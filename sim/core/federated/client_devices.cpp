// Parrot's schedules over the round's clients.
#include "sim/core/federated/client_devices.h"

#include <algorithm>
#include <numeric>

namespace testbed {

std::vector<int> assign_devices(const std::vector<double>& work, int devices, ClientSchedule schedule) {
  std::vector<int> device(work.size(), 0);
  if (devices <= 0) return device;
  if (schedule == ClientSchedule::Sequential) {
    for (size_t k = 0; k < work.size(); ++k) device[k] = static_cast<int>(k % static_cast<size_t>(devices));
    return device;
  }
  std::vector<size_t> order(work.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return work[a] > work[b]; });
  std::vector<double> load(static_cast<size_t>(devices), 0);
  for (size_t k : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    device[k] = static_cast<int>(least);
    load[static_cast<size_t>(least)] += work[k];
  }
  return device;
}

}  // namespace testbed
