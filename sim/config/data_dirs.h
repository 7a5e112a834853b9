// Where each data set is read from when the scenario names no `workload.data_dir`.
#pragma once

#include <string>

namespace testbed {

// Debian's dataset-fashion-mnist folder, the repository's data/brown; "" for synthetic data.
std::string default_data_dir(const std::string& dataset);

}  // namespace testbed
