// Sweep files: strict reading, expansion of grid x zip x repeats into named runs, validation.
#pragma once

#include <string>
#include <vector>

namespace testbed {

// One swept key's value in one run, with where the key and the value sit in the sweep
// file ("file:line:col") so a scenario error can be blamed on the sweep file.
struct SweptValue {
  std::string key;   // dotted, as for --set
  std::string text;  // the value as --set text
  std::string key_where, value_where;
};

struct SweepRun {
  int index = 0;     // position in expansion order; shards take index % N == I
  std::string name;  // file name stem: "label=value,..." sanitised
  std::vector<SweptValue> values;
};

struct Sweep {
  std::string file;  // the sweep file as given
  std::string base;  // scenario path, resolved against the sweep file's folder
  std::string out;   // output folder, resolved likewise
  int repeats = 1;
  bool sets_threads = false;      // the sweep varies `threads`, or its base sets them: the runner leaves them alone
  std::vector<std::string> keys;  // swept keys in manifest column order: grid, zip, then seed
  std::vector<SweepRun> runs;
};

// True when `path` reads as a sweep file (a map with a `base` key) rather than a scenario.
bool is_sweep_file(const std::string& path);

// Reads and expands a sweep file. The base scenario is read once (for its seed); errors in
// the sweep file or the base throw ScenarioError "file:line:col: message".
Sweep load_sweep(const std::string& path);
// Same from text; `dir` is the folder that relative `base` and `out` are resolved against.
Sweep parse_sweep(const std::string& yaml_text, const std::string& origin, const std::string& dir);

// The --set arguments of a run; `threads` > 0 adds threads=K unless the sweep sets threads.
std::vector<std::string> run_overrides(const Sweep& sweep, const SweepRun& run, int threads = 0);

// Loads the base scenario with every run's overrides before anything runs. The first bad
// run throws ScenarioError at the sweep file's position of the offending key or value.
void validate_sweep(const Sweep& sweep, int threads = 0);

// "bandwidth=10Mbps,seed=0": each key by its shortest dotted suffix that is unique among
// `keys`, then "=value", joined by commas; characters unsafe in file names, and commas or
// '=' inside a key or value, become '_'. Names over 200 bytes end in a hash of the whole.
std::string run_name(const std::vector<std::string>& keys, const std::vector<SweptValue>& values);

}  // namespace testbed
