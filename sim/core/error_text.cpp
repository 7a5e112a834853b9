// error_sentence: LibTorch errors without their backtrace, failed allocations said plainly.
#include "sim/core/error_text.h"

#include <c10/util/Exception.h>

#include <new>

namespace testbed {

std::string error_sentence(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) {
    // msg() is the message alone; what() appends "Exception raised from ..." and the frames.
    std::string text = torch_error->msg();
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (text.find("alloc") != std::string::npos) return "LibTorch ran out of memory: " + text;
    return "LibTorch failed: " + text;
  }
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return "out of memory: an allocation failed (" + std::string(e.what()) + ")";
  }
  return e.what();
}

}  // namespace testbed
