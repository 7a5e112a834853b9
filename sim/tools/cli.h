// The testbed command line as a function: parses argv, runs the subcommand, returns the exit code.
#pragma once

namespace testbed {

// 0 done, 1 failed (ns-3 fatal error, I/O), 2 bad input (before any output exists), 3 diverged,
// 130/143 interrupted. Installs signal and std::terminate handlers: call once per process.
int run_cli(int argc, char** argv);

}  // namespace testbed
