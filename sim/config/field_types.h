// The value types a scenario field can have beyond plain numbers, strings, enums and lists,
// and the checks a field declares; the strict YAML reader (yaml_reader.h) knows how to read each.
#pragma once

#include <string>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// How the training set is split among nodes: `iid`, `category` (whole label or genre
// groups per node, round-robin) or `{dirichlet: alpha}` (label skew; smaller is more skewed).
enum class PartitionKind { Iid, Category, Dirichlet };

struct Partition {
  PartitionKind kind = PartitionKind::Iid;
  double alpha = 0;  // dirichlet only
};

// Each kind's name in a scenario (`dirichlet` is written as a map with its alpha).
inline const std::vector<std::string>& partition_kinds() {
  static const std::vector<std::string> names = {"iid", "category", "dirichlet"};
  return names;
}

// A string field's allowed values (a numeric field's Range is in option_fields.h).
struct Choices {
  std::vector<std::string> allowed;
};

// A string that becomes one file name (a run's `name` names results/<name>.h5 and a sweep's
// runs): no folder separators, no `.` or `..`, no control characters, at most `max_length`
// bytes, so a scenario writes only where its output path says.
struct FileName {
  size_t max_length = 200;  // file names hold 255 bytes; room for ".h5.resume"
};

}  // namespace testbed
