// Local processes for one run, with the environment torchrun would give them.
#include "sim/tools/launch.h"
#include "sim/dist/process_group.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace testbed {
namespace {

constexpr double kGraceSeconds = 10;
std::atomic<int> g_forward{0};  // a signal to pass on to the processes
void on_signal(int signal) { g_forward = signal; }

// A port nobody listens on now, from the kernel.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error(std::string("launch: no free port on 127.0.0.1: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

int launch_processes(const LaunchOptions& options) {
  const int port = options.port > 0 ? options.port : free_port();
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < options.processes; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("launch: fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(options.processes).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      std::vector<std::string> args{"testbed", "run"};
      args.insert(args.end(), options.run_args.begin(), options.run_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "testbed launch: cannot start rank %d: %s\n", rank, std::strerror(errno));
      _exit(1);
    }
    pids.push_back(pid);
  }
  struct sigaction action {};
  action.sa_handler = on_signal;  // no SA_RESTART: waitpid returns to pass the signal on
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::vector<int> codes(pids.size(), -1);
  size_t running = pids.size();
  // Once a rank has failed, the others fail on their own within the run's timeout; one that
  // does not (stopped, or stuck outside the run's waits) is killed after that and a grace.
  constexpr auto kNone = std::chrono::steady_clock::time_point::max();
  auto deadline = kNone;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (const int signal = g_forward.exchange(0)) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (codes[r] < 0) kill(pids[r], signal);
    }
    if (pid < 0 && errno != EINTR) break;
    if (pid <= 0) {
      if (deadline != kNone && std::chrono::steady_clock::now() > deadline) {
        for (size_t r = 0; r < pids.size(); ++r) {
          if (codes[r] >= 0) continue;
          std::fprintf(stderr, "testbed launch: rank %zu did not end within %.0f s of a failed rank: killing it\n", r,
                       options.timeout_s + kGraceSeconds);
          kill(pids[r], SIGKILL);
        }
        deadline = kNone;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] != pid) continue;
      if (WIFSIGNALED(status)) {
        std::fprintf(stderr, "testbed launch: rank %zu was killed by signal %d\n", r, WTERMSIG(status));
        codes[r] = 128 + WTERMSIG(status);
      } else {
        codes[r] = WEXITSTATUS(status);
      }
      if (codes[r] != 0 && deadline == kNone)
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(1000 * (options.timeout_s + kGraceSeconds)));
      --running;
    }
  }
  std::error_code ignored;
  std::filesystem::remove(rendezvous_file(port), ignored);
  if (codes[0] != 0) return codes[0];
  for (int code : codes)
    if (code != 0) return code;
  return 0;
}

}  // namespace testbed
