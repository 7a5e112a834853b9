// Reports read only what runs wrote (HDF5 and sweep.csv), so they work on any finished
// or cut run without the scenario or the data set.
#include "sim/output/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "sim/config/input_error.h"
#include "sim/config/scenario_loader.h"
#include "sim/output/run_file.h"

namespace testbed {
namespace {

namespace fs = std::filesystem;

std::string fmt(const char* format, double v) {
  if (std::isnan(v)) return "n/a";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// A federated run round by round (rounds numbered from 0, as in /rounds and /participation):
// how many were evaluated, the accuracy at a few of them, and the best.
void report_rounds(const RunFile& r, std::ostream& out) {
  const size_t rounds = r.round_accuracy.size();
  std::vector<size_t> evaluated;
  for (size_t i = 0; i < rounds; ++i)
    if (std::isfinite(r.round_accuracy[i])) evaluated.push_back(i);
  out << "rounds            " << rounds << " (" << evaluated.size() << " evaluated)\n";
  if (evaluated.empty()) return;
  // Five evaluated rounds spread from the first to the last.
  std::string line;
  const size_t shown = std::min<size_t>(5, evaluated.size());
  for (size_t j = 0; j < shown; ++j) {
    const size_t i = evaluated[shown == 1 ? 0 : j * (evaluated.size() - 1) / (shown - 1)];
    line += (line.empty() ? "" : ", ") + std::to_string(i) + ": " + fmt("%.4f", r.round_accuracy[i]);
  }
  out << "accuracy by round " << line << "\n";
  size_t best = evaluated.front();
  for (size_t i : evaluated)
    if (r.round_accuracy[i] > r.round_accuracy[best]) best = i;
  out << "best accuracy     " << fmt("%.4f", r.round_accuracy[best]) << " after round " << best << " (eval loss "
      << fmt("%.4f", r.round_eval_loss.size() > best ? r.round_eval_loss[best] : NAN) << ")\n";
}

void report_run(const std::string& path, std::ostream& out) {
  auto file = read_run_file(path);
  if (!file) throw InputError(path + ":1:1: not a readable run file (HDF5)");
  const RunFile& r = *file;
  out << "run               " << path << "\n";
  if (r.is(RunStatus::Running)) {
    // Only the end of a run writes a final status: this one was killed or lost power.
    out << "status            cut at step " << fmt("%.0f", r.last_step) << " (no final status)\n";
  } else {
    out << "status            " << r.status << (r.error.empty() ? "" : ": " + r.error) << "\n";
  }
  out << "steps completed   " << fmt("%.0f", r.steps_completed) << "\n";
  // A diverged run's last evaluation is of a model that is no longer a number.
  const bool diverged = r.is(RunStatus::Diverged);
  if (r.projection) {
    out << "projection        from shapes (workload.train false): times, bytes and messages; no loss or accuracy\n";
  } else {
    // A run that stopped before its first evaluation has none (NaN in the file).
    auto final = [&](double value) {
      return diverged               ? std::string("n/a (diverged)")
             : std::isfinite(value) ? fmt("%.4f", value)
                                    : std::string("n/a (no evaluation ran)");
    };
    out << "final accuracy    " << final(r.final_accuracy) << "\n";
    out << "final eval loss   " << final(r.final_eval_loss) << "\n";
  }
  if (std::isfinite(r.final_perplexity)) out << "final perplexity  " << fmt("%.3f", r.final_perplexity) << "\n";
  if (!r.round_accuracy.empty()) report_rounds(r, out);
  out << "projected time    " << fmt("%.3f", r.projected_time_s) << " s\n";
  out << "total bytes       " << bytes_with_units(r.total_bytes)
      << (r.is(RunStatus::Completed) ? "" : " (issued, some still in flight when it stopped)") << "\n";
  out << "host time         " << fmt("%.2f", r.host_time_s) << " s\n";
  // Exposed communication is the projected time no node spent computing: the mean node's
  // compute per step, summed, against the whole.
  double exposed = r.projected_time_s - r.compute_time_s;
  auto share = [&](double part) { return fmt("%.1f", 100 * part / r.projected_time_s); };
  out << "compute           " << fmt("%.3f", r.compute_time_s) << " s (" << share(r.compute_time_s) << " %)\n";
  out << "exposed comm      " << fmt("%.3f", exposed) << " s (" << share(exposed) << " %)\n";
  if (!r.numerics.empty()) {
    // What produced the bits: another machine reproduces them when numerics were portable.
    out << "numerics\n";
    for (const auto& [name, value] : r.numerics)
      if (!value.empty()) out << "  " << std::left << std::setw(22) << name << " " << value << "\n";
  }
}

void report_sweep(const std::string& dir, std::ostream& out) {
  fs::path manifest = fs::path(dir) / "sweep.csv";
  std::ifstream in(manifest);
  if (!in) throw InputError(dir + ":1:1: no sweep.csv here; give a run .h5 or a sweep output folder");
  std::stringstream text;
  text << in.rdbuf();
  auto rows = parse_csv(text.str());
  size_t columns = 0;
  for (const auto& row : rows) columns = std::max(columns, row.size());
  std::vector<size_t> width(columns, 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size() + 2, ' ') : "");
    }
    out << line << "\n";
  }
  size_t completed = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    completed += std::count(rows[i].begin(), rows[i].end(), "completed") > 0;
  }
  out << completed << " of " << (rows.empty() ? 0 : rows.size() - 1) << " runs completed\n";
}

}  // namespace

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  return fmt(("%.2f " + std::string(units[u])).c_str(), bytes);
}

std::string bytes_with_units(double bytes) { return human_bytes(bytes) + " (" + fmt("%.0f", bytes) + " bytes)"; }

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field), field.clear();
    } else if (c == '\n') {
      row.push_back(field), field.clear();
      rows.push_back(row), row.clear();
      any = false;
    } else {
      field += c;
    }
  }
  if (any) row.push_back(field), rows.push_back(row);
  return rows;
}

void report(const std::string& path, std::ostream& out) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return report_sweep(path, out);
  if (!fs::exists(path, ec)) throw InputError(path + ":1:1: no such run file or sweep folder");
  report_run(path, out);
}

}  // namespace testbed
