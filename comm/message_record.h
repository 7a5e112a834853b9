// A message as /comm/messages records it (sim/output/recorder.h writes it): the comm layer
// makes these as its collectives' messages arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace testbed {

// A collective of more messages than this is one row of /comm/messages, not one a message: a
// ring all-reduce over N ranks sends 2 N (N - 1) (8 M rows a bucket at N = 2048), more than a
// reader can use or a disk hold. That row has src and dst -1, the collective's bytes and lost
// bytes summed, its first send and its last arrival; /comm's attribute
// `messages_one_row_above` says so in the file.
constexpr size_t kMessageRowsPerCollective = 65536;

struct MessageRecord {
  int src = 0, dst = 0;  // -1, -1: a whole collective (kMessageRowsPerCollective)
  uint64_t bytes = 0;
  double t_send = 0, t_recv = 0;
  uint64_t lost_bytes = 0;
  std::string kind;
};

}  // namespace testbed
