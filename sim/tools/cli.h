// The testbed command line as a function: parses argv, runs the subcommand, returns the exit code.
#pragma once

#include <string>
#include <vector>

namespace testbed {

// 0 done, 1 failed (ns-3 fatal error, I/O), 2 bad input (before any output exists), 3 diverged,
// 130/143 interrupted. Installs signal and std::terminate handlers: call once per process.
int run_cli(int argc, char** argv);
// The same, with args[0] the program name (a forked child's entry: a sweep's runs, the tests).
int run_cli(std::vector<std::string> args);

// For a process whose children are forks calling run_cli (a sweep, the CLI tests): LibTorch on
// one intra-op thread, so GNU OpenMP starts no threads here (they would not survive a fork).
// Each run sets its own count from its scenario, as the binary does.
void one_thread_before_forks();

}  // namespace testbed
