// Runs the testbed command line (sim/tools/cli.h) in a forked child of the test process: the
// binary's own code, exit code, output, signals and files, without paying LibTorch's ~1.3 s
// start-up for every command. Only for test programs that never train in process: GNU OpenMP's
// threads do not survive a fork, so the program keeps LibTorch to one thread (no OpenMP pool)
// until a child sets its own count from its scenario, as the binary does.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/tools/cli.h"

namespace testbed::cli_child {

inline const bool kNoOpenMpThreadsBeforeFork = (one_thread_before_forks(), true);

struct Options {
  std::string dir;               // the child's working directory; empty: this one
  std::string out, err;          // files for stdout and stderr (appended to); empty: inherited
  std::vector<std::string> env;  // "KEY=value"
  long address_space_kib = 0;    // ulimit -v when not 0
};

// `testbed ARGS...` started now; returns the child's pid.
inline pid_t start(const std::vector<std::string>& args, const Options& options = {}) {
  std::fflush(nullptr);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (!options.dir.empty() && ::chdir(options.dir.c_str()) != 0) _exit(126);
  for (const auto& e : options.env) putenv(strdup(e.c_str()));
  if (options.address_space_kib > 0) {
    const rlim_t bytes = static_cast<rlim_t>(options.address_space_kib) * 1024;
    const rlimit limit{bytes, bytes};
    setrlimit(RLIMIT_AS, &limit);
  }
  if (!options.out.empty() && !std::freopen(options.out.c_str(), "a", stdout)) _exit(126);
  if (!options.err.empty() && !std::freopen(options.err.c_str(), "a", stderr)) _exit(126);
  std::vector<std::string> all = {"testbed"};
  all.insert(all.end(), args.begin(), args.end());
  const int code = run_cli(std::move(all));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(code);
}

// The child's exit code, or 128 + the signal that ended it (as a shell reports it).
inline int finish(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

inline int run(const std::vector<std::string>& args, const Options& options = {}) {
  return finish(start(args, options));
}

// A command line as the shell would split it (quotes, no command substitution).
inline std::vector<std::string> shell_words(const std::string& line) {
  wordexp_t words{};
  if (wordexp(line.c_str(), &words, WRDE_NOCMD) != 0) throw std::runtime_error("cannot split: " + line);
  std::vector<std::string> out(words.we_wordv, words.we_wordv + words.we_wordc);
  wordfree(&words);
  return out;
}

}  // namespace testbed::cli_child
