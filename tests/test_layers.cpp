// Includes point down the layers: sim/tools -> sim/core -> sim/dist, sim/output -> sim/config, all over
// comm/, training/, netmodels/ and topologies/; comm/ between training and the network. The
// network never sees tensors or plans, training never sees communication or the network.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Rule {
  std::string folder;                  // files under this folder of the repository...
  std::vector<std::string> forbidden;  // ...must not include a path starting with one of these
  std::vector<std::string> exempt;     // files allowed to break the rule, each with its reason below
};

// The one exemption: the single simulation clock is ns-3's Simulator (architecture decision 1),
// which every backend runs on, so event_clock.cpp reaches ns-3 for all of them.
const std::vector<Rule> kRules = {
    {"topologies", {"netmodels/", "training/", "sim/", "torch/", "ATen/", "ns3/"}, {}},
    {"netmodels", {"training/", "sim/", "comm/", "torch/", "ATen/"}, {}},
    // The clock is ns-3's Simulator, run by the clock's own event loop (lagging_simulator.h,
    // included by event_clock.cpp alone).
    {"netmodels",
     {"ns3/", "netmodels/ns3/"},
     {"netmodels/ns3/", "netmodels/event_clock.cpp", "netmodels/lagging_simulator."}},
    {"training", {"sim/", "comm/", "netmodels/", "topologies/", "ns3/"}, {}},
    // The communication layer: over training's ops and the network's Network, under sim/; only
    // comm/tensors/ (a collective's run with its ranks' tensors) reaches training and LibTorch.
    {"comm", {"sim/", "ns3/", "netmodels/ns3/"}, {}},
    {"comm", {"training/", "torch/", "ATen/"}, {"comm/tensors/"}},
    // Inside sim/: tools -> core -> output -> config.
    {"sim/config", {"sim/output/", "sim/core/", "sim/tools/", "ns3/", "netmodels/ns3/"}, {}},
    {"sim/output", {"sim/core/", "sim/tools/", "torch/", "ATen/", "ns3/"}, {}},
    {"sim/core", {"sim/tools/"}, {}},
    // The processes of a spread run know training's plans, not the engine, the network or files.
    {"sim/dist", {"sim/core/", "sim/tools/", "sim/output/", "sim/config/", "netmodels/", "topologies/", "ns3/"}, {}},
};

// The paths of `#include <...>` and `#include "..."` lines (spaces allowed around the '#').
// Parsed by hand: <regex> alone took a third of this file's compile time.
std::vector<std::string> includes_of(const fs::path& file) {
  std::vector<std::string> found;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || (line[i] != '<' && line[i] != '"')) continue;
    const size_t end = line.find(line[i] == '<' ? '>' : '"', i + 1);
    if (end != std::string::npos) found.push_back(line.substr(i + 1, end - i - 1));
  }
  return found;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

TEST(Layers, IncludesPointDown) {
  const fs::path root = TESTBED_SOURCE_DIR;
  int files = 0;
  for (const auto& rule : kRules) {
    for (const auto& entry : fs::recursive_directory_iterator(root / rule.folder)) {
      const auto ext = entry.path().extension();
      if (ext != ".h" && ext != ".cpp") continue;
      const std::string name = fs::relative(entry.path(), root).generic_string();
      bool exempt = false;
      for (const auto& e : rule.exempt) exempt = exempt || starts_with(name, e);
      if (exempt) continue;
      ++files;
      for (const auto& inc : includes_of(entry.path())) {
        for (const auto& bad : rule.forbidden) {
          EXPECT_FALSE(starts_with(inc, bad))
              << name << " includes " << inc << " (" << rule.folder << "/ must not include " << bad << ")";
        }
      }
    }
  }
  EXPECT_GT(files, 60) << "the folders were not found under " << root;
}

// Every header a file reaches through the project's own includes, and the outside headers
// those name (the first path component tells which library).
void reach(const fs::path& root, const std::string& name, std::set<std::string>& seen) {
  if (!seen.insert(name).second) return;
  const fs::path file = root / name;
  if (!fs::exists(file)) return;  // a system or library header: recorded, not followed
  for (const auto& inc : includes_of(file)) reach(root, inc, seen);
}

// Files that only read or describe a scenario or a network: no LibTorch anywhere below them.
TEST(Layers, ScenarioAndNetbenchReachNoLibTorch) {
  const fs::path root = TESTBED_SOURCE_DIR;
  for (const std::string name : {"sim/config/scenario.h", "sim/tools/netbench.cpp", "comm/collective_options.cpp",
                                 "sim/core/network_factory.cpp", "comm/plan_runner.cpp", "comm/ring_lanes.cpp",
                                 "comm/phase_memo.cpp", "comm/memo_policy.cpp", "training/algorithms/registry.h"}) {
    std::set<std::string> seen;
    reach(root, name, seen);
    EXPECT_GT(seen.size(), 3u) << name << " was not read";
    for (const auto& inc : seen) {
      EXPECT_FALSE(starts_with(inc, "torch/") || starts_with(inc, "ATen/"))
          << name << " reaches " << inc << " through the project's includes";
    }
  }
}

// The checker itself: a line it must see and lines it must not mistake for includes.
TEST(Layers, ReadsIncludeLines) {
  const fs::path file = fs::temp_directory_path() / "testbed_layers_probe.h";
  {
    std::ofstream out(file);
    out << "#include <torch/torch.h>\n  #  include \"sim/engine.h\"\n// #include is mentioned\n";
  }
  const auto found = includes_of(file);
  fs::remove(file);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0], "torch/torch.h");
  EXPECT_EQ(found[1], "sim/engine.h");
}

}  // namespace
