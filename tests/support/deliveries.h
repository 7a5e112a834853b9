// The network tests' one harness: a network built on a fresh clock sends every message at time
// 0, the clock runs until nothing is left, and the deliveries come back in the order they
// happened. The network goes before its clock, as it must (docs/architecture.md, decision 1).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "netmodels/event_clock.h"
#include "netmodels/network.h"

namespace testbed {

using MakeNetwork = std::function<std::unique_ptr<Network>(EventClock& clock)>;

inline std::vector<Delivery> deliveries(const MakeNetwork& make, const std::vector<Message>& messages) {
  std::vector<Delivery> out;
  EventClock clock;
  {
    auto network = make(clock);
    for (const auto& m : messages)
      clock.schedule(0, [&, m] { network->send(m, [&](const Delivery& d) { out.push_back(d); }); });
    clock.run();
  }
  return out;
}

// The same, indexed by message id (ids 0 .. messages - 1).
inline std::vector<Delivery> deliveries_by_id(const MakeNetwork& make, const std::vector<Message>& messages) {
  std::vector<Delivery> out(messages.size());
  for (const Delivery& d : deliveries(make, messages)) out.at(d.message.id) = d;
  return out;
}

}  // namespace testbed
