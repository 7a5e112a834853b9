// Which executor each of a round's picked clients trains on (algorithm.devices and schedule,
// FedML Parrot's packing of many clients onto few devices).
#pragma once

#include <vector>

#include "training/algorithms/fedavg_options.h"

namespace testbed {

// The device of each client given its estimated work (local steps over its speed: what is known
// before the round), in the round's order. Sequential deals them out in turn (k mod devices);
// balanced takes the largest work first (ties in order) onto the device with the least work so
// far (ties: the lowest device), the LPT rule.
std::vector<int> assign_devices(const std::vector<double>& work, int devices, ClientSchedule schedule);

}  // namespace testbed
