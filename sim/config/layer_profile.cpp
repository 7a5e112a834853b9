// Reading a measured layer profile and matching its rows to a model's layers.
#include "sim/config/layer_profile.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace testbed {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Up to five names and how many more: an error names what to fix without flooding the terminal.
std::string some(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += " and " + std::to_string(names.size() - 5) + " more";
  return out;
}

}  // namespace

LayerProfile read_layer_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot read the layer profile");
  LayerProfile p;
  p.path = path;
  std::set<std::string> seen;
  bool header = false;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number) + ": ";
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(trim(cell));
    if (!header) {
      if (cells != std::vector<std::string>{"layer", "forward_ms", "backward_ms"})
        throw std::invalid_argument(where + "expected the header 'layer,forward_ms,backward_ms'");
      header = true;
      continue;
    }
    if (cells.size() != 3)
      throw std::invalid_argument(where + "expected 3 cells (layer, forward_ms, backward_ms), got " +
                                  std::to_string(cells.size()));
    double ms[2];
    for (int i = 0; i < 2; ++i) {
      size_t used = 0;
      try {
        ms[i] = std::stod(cells[i + 1], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != cells[i + 1].size() || cells[i + 1].empty() || !std::isfinite(ms[i]) || ms[i] < 0)
        throw std::invalid_argument(where + "'" + cells[i + 1] + "' is not a finite non-negative time in ms");
    }
    if (cells[0].empty()) throw std::invalid_argument(where + "a row needs a layer name");
    if (!seen.insert(cells[0]).second) throw std::invalid_argument(where + "'" + cells[0] + "' is timed twice");
    if (cells[0] == "optimizer") {
      if (ms[1] != 0) throw std::invalid_argument(where + "the optimizer's update has no backward pass (0 ms)");
      p.optimizer_s = ms[0] / 1e3;
      continue;
    }
    p.rows.push_back({cells[0], ms[0] / 1e3, ms[1] / 1e3});
  }
  if (!header) throw std::invalid_argument(path + ": no header 'layer,forward_ms,backward_ms'");
  if (p.rows.empty()) throw std::invalid_argument(path + ": no layer rows");
  return p;
}

std::vector<int> profile_owners(const LayerProfile& profile, const std::vector<LayerCost>& layers) {
  int rest = -1;
  for (size_t r = 0; r < profile.rows.size(); ++r)
    if (profile.rows[r].layer == "*") rest = static_cast<int>(r);
  std::vector<int> owner(layers.size(), -1);
  std::vector<bool> used(profile.rows.size(), false);
  std::vector<std::string> untimed;
  for (size_t l = 0; l < layers.size(); ++l) {
    for (size_t r = 0; r < profile.rows.size(); ++r) {
      const std::string& row = profile.rows[r].layer;
      if (static_cast<int>(r) == rest || !owns_by_prefix(row, layers[l].name)) continue;
      if (owner[l] < 0 || row.size() > profile.rows[owner[l]].layer.size()) owner[l] = static_cast<int>(r);
    }
    if (owner[l] < 0) {
      if (rest < 0) untimed.push_back(layers[l].name);
      owner[l] = rest;
    }
    if (owner[l] >= 0) used[owner[l]] = true;
  }
  if (!untimed.empty())
    throw std::invalid_argument(profile.path + ": no row times the model's layers " + some(untimed) +
                                " (name them, a module holding them, or give a '*' row for the rest)");
  std::vector<std::string> stray;
  for (size_t r = 0; r < profile.rows.size(); ++r)
    if (!used[r] && static_cast<int>(r) != rest) stray.push_back(profile.rows[r].layer);
  if (!stray.empty())
    throw std::invalid_argument(profile.path + ": rows " + some(stray) +
                                " time no layer of this model (another model's profile?)");
  return owner;
}

}  // namespace testbed
