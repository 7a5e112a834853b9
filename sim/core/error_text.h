// One readable sentence for an exception from any layer, for stderr and the HDF5 file's
// `error` attribute: LibTorch's messages carry a C++ backtrace meant for its own developers.
#pragma once

#include <exception>
#include <string>

namespace testbed {

std::string error_sentence(const std::exception& e);

}  // namespace testbed
