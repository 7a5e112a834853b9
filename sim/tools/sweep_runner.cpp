// Each run is a child process (a fork, or the binary started again) so that a crash or a
// diverged run is recorded and the others go on; the manifest is rewritten (temp file + rename)
// whenever a run ends.
#include "sim/tools/sweep_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "sim/output/run_file.h"

extern char** environ;

namespace testbed {
namespace {

namespace fs = std::filesystem;

// Signal handlers can only reach a global; the run loop stops launching when it is set.
std::atomic<bool> g_stop{false};
void on_stop(int) { g_stop = true; }

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v, const char* format = "%.6g") {
  if (std::isnan(v)) return "";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

pid_t spawn_run(const Sweep& sweep, const SweepRun& run, const SweepOptions& options, int threads) {
  std::vector<std::string> args = {options.binary, "run", sweep.base};
  for (const auto& set : run_overrides(sweep, run, threads)) {
    args.push_back("--set");
    args.push_back(set);
  }
  // --resume: a run cut earlier continues from its checkpoint (output.resume_every), if it has one.
  args.insert(args.end(), {"-o", run_path(sweep, run), "-q", "--resume"});
  // The child's own summary and errors go to out/<name>.log, beside its .h5.
  std::string log = (fs::path(sweep.out) / (run.name + ".log")).string();
  if (options.child_main) {
    std::fflush(nullptr);  // nothing buffered here may be written twice
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot fork a run: ") + std::strerror(errno));
    if (pid > 0) return pid;
    std::signal(SIGINT, SIG_DFL);  // the sweep's handlers are not the run's
    std::signal(SIGTERM, SIG_DFL);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(127);
    ::close(fd);
    const int code = options.child_main(args);
    std::fflush(nullptr);
    _exit(code);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  int error = posix_spawn(&pid, options.binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("cannot start " + options.binary + ": " + std::strerror(error));
  return pid;
}

}  // namespace

const char* outcome_name(OutcomeStatus status) {
  switch (status) {
    case OutcomeStatus::Running:
      return "running";
    case OutcomeStatus::Completed:
      return "completed";
    case OutcomeStatus::Diverged:
      return "diverged";
    case OutcomeStatus::Failed:
      return "failed";
    case OutcomeStatus::Interrupted:
      return "interrupted";
  }
  return "?";
}

namespace {

RunOutcome outcome_of(int wait_status, const std::string& h5) {
  RunOutcome o;
  if (WIFSIGNALED(wait_status)) {
    o.exit_code = 128 + WTERMSIG(wait_status);
    o.status = OutcomeStatus::Failed;
    return o;
  }
  o.exit_code = WEXITSTATUS(wait_status);
  auto file = read_run_file(h5);
  if (o.exit_code == 0)
    o.status = file && file->is(RunStatus::Completed) ? OutcomeStatus::Completed : OutcomeStatus::Failed;
  else if (o.exit_code == 3)
    o.status = OutcomeStatus::Diverged;
  else
    o.status = g_stop ? OutcomeStatus::Interrupted : OutcomeStatus::Failed;
  return o;
}

void write_manifest(const Sweep& sweep, const std::map<int, RunOutcome>& outcomes) {
  fs::path final_path = fs::path(sweep.out) / "sweep.csv";
  // A per-process temp name: shards of one sweep may share the folder.
  fs::path temp = fs::path(sweep.out) / (".sweep.csv." + std::to_string(::getpid()));
  {
    std::ofstream out(temp);
    out << manifest_csv(sweep, outcomes);
    if (!out) throw std::runtime_error("cannot write " + temp.string());
  }
  fs::rename(temp, final_path);
}

}  // namespace

int child_threads(const Sweep& sweep, const SweepOptions& options) {
  if (sweep.sets_threads) return 0;
  int cores = options.cores > 0 ? options.cores : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, options.jobs));
}

void parse_shard(const std::string& text, SweepOptions& options) {
  int index = -1, count = 0, used = 0;
  if (std::sscanf(text.c_str(), "%d/%d%n", &index, &count, &used) != 2 || used != static_cast<int>(text.size()) ||
      count < 1 || index < 0 || index >= count) {
    throw std::invalid_argument("--shard takes I/N with 0 <= I < N, such as 0/2; got '" + text + "'");
  }
  options.shard_index = index;
  options.shard_count = count;
}

std::vector<const SweepRun*> shard_runs(const Sweep& sweep, const SweepOptions& options) {
  std::vector<const SweepRun*> out;
  for (const auto& run : sweep.runs) {
    if (run.index % options.shard_count == options.shard_index) out.push_back(&run);
  }
  return out;
}

std::string run_path(const Sweep& sweep, const SweepRun& run) {
  return (fs::path(sweep.out) / (run.name + ".h5")).string();
}

std::string manifest_csv(const Sweep& sweep, const std::map<int, RunOutcome>& outcomes) {
  std::string text = "run";
  for (const auto& key : sweep.keys) text += "," + csv_field(key);
  text += ",status,exit_code,projected_time_s,total_bytes,final_eval_loss,final_accuracy,host_time_s,steps_completed\n";
  for (const auto& run : sweep.runs) {
    text += csv_field(run.name);
    for (const auto& key : sweep.keys) {
      std::string value;
      for (const auto& v : run.values) {
        if (v.key == key) value = v.text;
      }
      text += "," + csv_field(value);
    }
    auto it = outcomes.find(run.index);
    bool known = it != outcomes.end();
    // A running child's file is half-written: its numbers are not worth a read.
    auto file =
        known && it->second.status == OutcomeStatus::Running ? std::nullopt : read_run_file(run_path(sweep, run));
    std::string status = known ? outcome_name(it->second.status) : (file ? file->status : "pending");
    if (status.empty()) status = "unreadable";
    text += "," + status + "," + (known && it->second.exit_code >= 0 ? std::to_string(it->second.exit_code) : "");
    RunFile r = file.value_or(RunFile{});
    text += "," + number(r.projected_time_s) + "," + number(r.total_bytes, "%.0f") + "," + number(r.final_eval_loss) +
            "," + number(r.final_accuracy) + "," + number(r.host_time_s) + "," + number(r.steps_completed, "%.0f") +
            "\n";
  }
  return text;
}

int run_sweep(const Sweep& sweep, const SweepOptions& options, std::ostream& log) {
  fs::create_directories(sweep.out);
  const int threads = child_threads(sweep, options);
  const auto runs = shard_runs(sweep, options);
  const size_t total = runs.size();
  std::map<int, RunOutcome> outcomes;
  std::deque<const SweepRun*> queue;
  size_t done = 0;
  for (const auto* run : runs) {
    auto file = read_run_file(run_path(sweep, *run));
    if (file && file->is(RunStatus::Completed)) {
      ++done;
      log << "sweep: [" << done << "/" << total << "] " << run->name << " skipped: completed earlier\n";
    } else {
      queue.push_back(run);
    }
  }
  write_manifest(sweep, outcomes);

  struct sigaction action {};
  action.sa_handler = on_stop;  // no SA_RESTART: waitpid must return so the loop can react
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  g_stop = false;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  const auto start = std::chrono::steady_clock::now();
  std::map<pid_t, const SweepRun*> running;
  size_t finished_here = 0;
  bool all_completed = true, forwarded = false;
  while ((!queue.empty() && !g_stop) || !running.empty()) {
    while (!g_stop && !queue.empty() && static_cast<int>(running.size()) < std::max(1, options.jobs)) {
      const SweepRun* run = queue.front();
      queue.pop_front();
      running[spawn_run(sweep, *run, options, threads)] = run;
      outcomes[run->index] = {OutcomeStatus::Running, -1};
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno != EINTR) break;
      // Children started by a terminal's Ctrl-C got it too; a TERM sent to the sweep alone
      // is passed on so that each child records itself as interrupted.
      if (g_stop && !forwarded) {
        for (const auto& [child, run] : running) kill(child, SIGTERM);
        forwarded = true;
      }
      continue;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const SweepRun* run = it->second;
    running.erase(it);
    RunOutcome outcome = outcome_of(status, run_path(sweep, *run));
    outcomes[run->index] = outcome;
    all_completed = all_completed && outcome.status == OutcomeStatus::Completed;
    ++done, ++finished_here;
    write_manifest(sweep, outcomes);
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double eta = elapsed / finished_here * static_cast<double>(total - done);
    char line[128];
    std::snprintf(line, sizeof line, " (exit %d)  elapsed %.0f s  ETA %.0f s", outcome.exit_code, elapsed, eta);
    log << "sweep: [" << done << "/" << total << "] " << run->name << " " << outcome_name(outcome.status) << line
        << "\n";
    log.flush();
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (!queue.empty()) log << "sweep: stopped; " << queue.size() << " runs not started\n";
  log << "sweep: manifest " << (fs::path(sweep.out) / "sweep.csv").string() << "\n";
  return all_completed && queue.empty() ? 0 : 1;
}

}  // namespace testbed
