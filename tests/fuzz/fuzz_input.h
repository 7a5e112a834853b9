// What the harnesses share: the input as text, and a scratch file for readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace testbed::fuzz {

inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// One file per fuzzing process, rewritten for every input.
inline std::string scratch_file(const std::string& suffix, const std::string& contents) {
  const std::string path = "/tmp/testbed_fuzz_" + std::to_string(::getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  return path;
}

}  // namespace testbed::fuzz
