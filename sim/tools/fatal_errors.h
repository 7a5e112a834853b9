// ns-3 ends the process on a fatal error (NS_FATAL_ERROR, NS_ABORT_MSG, a failed NS_ASSERT): it
// prints its message to std::cerr, then calls std::terminate. These turn that into one sentence,
// on stderr and in the run's HDF5 file (status failed), and exit 1.
#pragma once

#include <functional>
#include <string>

namespace testbed {

// Keeps the tail of what goes to std::cerr (still written through) and installs the
// std::terminate handler. Once, at the start of main.
void catch_fatal_errors();

// What the handler calls with the sentence before it exits (the run's recorder); empty: none.
void on_fatal_error(std::function<void(const std::string&)> record);

// The sentence for what ns-3 printed last: "ns-3 stopped the run: MSG (FILE:LINE)", with
// "assertion COND failed" for a failed NS_ASSERT.
std::string ns3_fatal_sentence(const std::string& printed);

}  // namespace testbed
