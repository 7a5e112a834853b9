// The memory estimate: per node, the replica's parameter-sized vectors; once, the evaluation
// model and the data set. Messages, HDF5 rows and the simulated network are small next to
// these at the sizes where the estimate matters (thousands of replicas or a large model).
#include "sim/core/memory_estimate.h"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/config/scenario.h"
#include "training/algorithms/registry.h"
#include "training/dataset.h"

namespace testbed {
namespace {

double tensor_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<double>(t.numel()) * static_cast<double>(t.element_size()) : 0.0;
}

// Adam and AdamW keep two moments per parameter; SGD one momentum buffer when momentum > 0.
int optimizer_vectors(const OptimizerSection& o) {
  if (o.name == "sgd") return o.momentum > 0 ? 1 : 0;
  return 2;
}

// "/proc/meminfo"'s value for `key` in bytes (it reports kB), or 0 when absent.
double meminfo_bytes(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream rest(line.substr(key.size() + 1));
    double kb = 0;
    rest >> kb;
    return kb * 1024.0;
  }
  return 0;
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

MemoryEstimate estimate_memory(const Scenario& scenario, const Dataset& data, int64_t parameters) {
  MemoryEstimate e;
  e.parameters = parameters;
  const AlgorithmEntry* algorithm = find_algorithm(scenario.algorithm.name);
  // Parameters and gradients (flat buffers), the optimizer's state, the algorithm's own state,
  // and one op buffer (the vector a collective reduces) per node.
  e.vectors_per_replica = 2 + optimizer_vectors(scenario.optimizer) + (algorithm ? algorithm->state_vectors : 0) + 1;
  const double vector_bytes = 4.0 * static_cast<double>(parameters);
  e.replicas_bytes = static_cast<double>(scenario.nodes) * e.vectors_per_replica * vector_bytes;
  e.eval_model_bytes = vector_bytes;
  e.data_bytes = tensor_bytes(data.train_inputs) + tensor_bytes(data.train_targets) + tensor_bytes(data.test_inputs) +
                 tensor_bytes(data.test_targets) + tensor_bytes(data.train_groups);
  for (const auto& v : data.test_variants) e.data_bytes += tensor_bytes(v.inputs);
  return e;
}

MachineMemory machine_memory() {
  MachineMemory m;
  m.available_bytes = meminfo_bytes("/proc/meminfo", "MemAvailable");
  m.address_space_used = meminfo_bytes("/proc/self/status", "VmSize");
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    m.address_space_limit = static_cast<double>(limit.rlim_cur);
  }
  return m;
}

std::string memory_refusal(const MemoryEstimate& e, const MachineMemory& m, int nodes) {
  std::ostringstream parts;
  parts << "the run needs about " << gib(e.total_bytes()) << " (" << nodes << " replicas x " << e.vectors_per_replica
        << " vectors of " << e.parameters << " parameters: " << gib(e.replicas_bytes) << "; data "
        << gib(e.data_bytes) << "; evaluation model " << gib(e.eval_model_bytes) << ")";
  if (m.available_bytes > 0 && e.total_bytes() > m.available_bytes) {
    return parts.str() + " but this machine has " + gib(m.available_bytes) +
           " available (/proc/meminfo MemAvailable); use fewer nodes or a smaller model";
  }
  if (m.address_space_limit && m.address_space_used + e.total_bytes() > *m.address_space_limit) {
    return parts.str() + " on top of the " + gib(m.address_space_used) + " this process maps already, but its address space is limited to " +
           gib(*m.address_space_limit) + " (ulimit -v)";
  }
  return "";
}

}  // namespace testbed
