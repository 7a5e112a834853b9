// What a run will hold in memory, estimated before its replicas exist, against what the
// machine has: a run that cannot fit is refused before it starts instead of failing hours in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "training/models/model_shapes.h"

namespace testbed {

struct Scenario;
struct Dataset;
struct Topology;

struct ModelSize {
  int64_t parameters = 0;
  int tensors = 0;                             // parameter tensors (a layerwise selection builds a plan per tensor)
  std::vector<SecondOrderLayer> second_order;  // the layers a second-order optimizer keeps state for
  int64_t built_parameters = 0;  // a projection's one build for its shapes (ModelShapes::built_parameters)
};

struct MemoryEstimate {
  int64_t parameters = 0;
  int vectors_per_replica = 0;      // parameter-sized float vectors each node holds (see the .cpp)
  double replicas_bytes = 0;        // nodes x (vectors x parameters x 4 + LibTorch's objects)
  double eval_model_bytes = 0;      // the averaged model evaluation runs on
  double data_bytes = 0;            // the loaded data set, exact
  int64_t plan_messages = 0;        // messages of every collective plan the run keeps
  double message_tables_bytes = 0;  // those plans and one run of each
  double network_bytes = 0;         // the simulated network: nodes, links, connections (ns-3)
  double client_state_bytes = 0;    // federated clients' optimizer state kept in memory (client_state: memory)
  double second_order_bytes = 0;    // every replica's Eva vectors or K-FAC factors, inverses and directions
  double total_bytes() const {
    return replicas_bytes + eval_model_bytes + data_bytes + message_tables_bytes + network_bytes + client_state_bytes +
           second_order_bytes;
  }
};

MemoryEstimate estimate_memory(const Scenario& scenario, const Dataset& data, const ModelSize& model,
                               const Topology& topology);

struct MachineMemory {
  double available_bytes = 0;                 // /proc/meminfo MemAvailable
  std::optional<double> address_space_limit;  // RLIMIT_AS, when one is set
  double address_space_used = 0;              // this process's VmSize now (libraries, data)
};
MachineMemory machine_memory();

// The sentence a run is refused with (estimate, its parts, what the machine has), or "" when
// the estimate fits.
std::string memory_refusal(const MemoryEstimate& estimate, const MachineMemory& machine, int nodes);

}  // namespace testbed
