// /comm/messages's row as the file stores it (an HDF5 compound type): written by the recorder,
// read back by whoever checks the file.
#pragma once

#include <H5Cpp.h>

#include <cstddef>
#include <cstdint>

namespace testbed {

// A message's kind is its op's tag (`pseudo_gradient/12`, `dct_coefficients`): room for 31
// characters, and a longer tag is an error rather than a silently shortened name.
constexpr size_t kKindChars = 32;

struct MessageRow {
  int32_t src, dst;
  uint64_t bytes;
  double t_send, t_recv;
  uint64_t lost_bytes;
  char kind[kKindChars];
};

H5::CompType message_type();

}  // namespace testbed
