// Parrot's point, measured: a federated run's memory follows the clients a round picks, not
// the clients there are (stateless clients exist only while they train).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_child.h"

namespace federated_memory_tests {

// Peak resident memory (KiB) of `testbed run` on the shipped 100-client scenario with `clients`
// clients, one round of 10 picked clients: the child's own, from wait4.
long peak_kib(int clients) {
  const auto out = std::filesystem::temp_directory_path() /
                   ("testbed_fedmem_" + std::to_string(::getpid()) + "_" + std::to_string(clients) + ".h5");
  const pid_t pid = testbed::cli_child::start(
      {"run", std::string(TESTBED_SOURCE_DIR) + "/scenarios/federated/fedavg_100.yaml", "-q", "-o", out.string(),
       "--set", "nodes=" + std::to_string(clients), "--set", "workload.steps=10", "--set", "workload.eval_every=10",
       "--set", "workload.eval_samples=500"},
      {"", "/dev/null", "/dev/null"});
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  std::filesystem::remove(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << clients << " clients";
  return usage.ru_maxrss;
}

TEST(FederatedMemory, AThousandStatelessClientsTakeLittleMoreThanTen) {
  const long ten = peak_kib(10), thousand = peak_kib(1000);
  std::printf("peak resident memory: 10 clients %ld KiB, 1000 clients %ld KiB (%.2fx)\n", ten, thousand,
              static_cast<double>(thousand) / static_cast<double>(ten));
  // A replica per client would add 1000 x (parameters, gradients, optimizer state) of the CNN,
  // ~2 GB, to ~0.5 GB.
  EXPECT_LT(static_cast<double>(thousand), 1.5 * static_cast<double>(ten));
}

}  // namespace federated_memory_tests
