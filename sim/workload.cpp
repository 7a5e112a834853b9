// Factories from scenario sections; all randomness comes from named seed streams.
#include "sim/workload.h"

#include <dlfcn.h>
#include <malloc.h>

#include <stdexcept>
#include <thread>

#include <torch/torch.h>

#include "sim/seed_streams.h"
#include "training/ddp.h"
#include "training/fashion_mnist.h"

namespace testbed {

void configure_host(const Scenario& scenario) {
  int threads = scenario.threads > 0 ? scenario.threads : static_cast<int>(std::thread::hardware_concurrency());
  at::set_num_threads(std::max(1, threads));
  // OpenBLAS starts its own pool with one thread per core, which spins in sched_yield
  // beside LibTorch's OpenMP threads: measured 2x slower steps on 2 cores. LibTorch
  // parallelises around the BLAS calls, so BLAS itself runs on one thread.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
  // glibc's adaptive mmap threshold made LibTorch's activations come and go as fresh
  // mappings (4x the page faults of a bare loop); keep freed memory in the heap instead.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

Dataset load_dataset(const Scenario& scenario) {
  if (scenario.workload.dataset == "fashion_mnist") return load_fashion_mnist(scenario.workload.data_dir);
  throw std::invalid_argument("unknown dataset '" + scenario.workload.dataset + "'");
}

std::shared_ptr<Model> make_model(const Scenario& scenario, const Dataset& data) {
  torch::manual_seed(stream_seed(scenario.seed, "init"));
  return make_image_model(scenario.workload.model, data.num_classes);
}

OptimizerConfig optimizer_config(const Scenario& scenario) {
  const auto& o = scenario.optimizer;
  return {o.name, o.lr, o.weight_decay, o.momentum, o.beta1, o.beta2};
}

std::vector<ShardSampler> make_samplers(const Scenario& scenario, const Dataset& data) {
  auto shards = iid_partition(data.train_size(), scenario.nodes, stream_seed(scenario.seed, "partition"));
  std::vector<ShardSampler> samplers;
  for (int n = 0; n < scenario.nodes; ++n) {
    samplers.emplace_back(std::move(shards[n]), stream_seed(scenario.seed, "batches", n));
  }
  return samplers;
}

std::unique_ptr<Algorithm> make_algorithm(const Scenario& scenario) {
  if (scenario.algorithm.name == "ddp") return std::make_unique<Ddp>(scenario.nodes, scenario.workload.batch_size);
  throw std::invalid_argument("unknown algorithm '" + scenario.algorithm.name + "'");
}

}  // namespace testbed
