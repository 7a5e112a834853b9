// `testbed report`: a one-screen summary of a run's HDF5 file or of a sweep folder's manifest.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace testbed {

// Prints the summary of `path` (a run .h5, or a folder holding sweep.csv). Throws
// InputError "path:1:1: message" when it is neither.
void report(const std::string& path, std::ostream& out);

// A byte count in decimal units (B, kB, MB, GB, TB; two decimals) and then exact:
// "15.40 MB (15398784 bytes)". `testbed run` and `testbed report` both print it.
std::string human_bytes(double bytes);
std::string bytes_with_units(double bytes);

// Splits CSV text into rows of fields (quoted fields may hold commas and "").
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace testbed
