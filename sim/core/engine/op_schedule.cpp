// The op schedule as text, a step a line: "node step compute_time extra_time" and its ops, then
// "round_count" and each round's "extra_time" and ops; ops as "op_count" then, per op, "kind tag
// elements bytes_per_element delay node_count nodes... after_gradient before_forward after_forward pipelined".
#include "sim/core/engine/op_schedule.h"

#include <ios>
#include <sstream>
#include <stdexcept>

namespace testbed {

namespace {

void write_ops(std::ostream& out, const std::vector<ScheduledOp>& ops) {
  out << " " << ops.size();
  for (const auto& op : ops) {
    out << " " << op.kind << " " << op.tag << " " << op.elements << " " << op.bytes_per_element << " " << op.delay
        << " " << op.nodes.size();
    for (int n : op.nodes) out << " " << n;
    out << " " << op.after_gradient << " " << op.before_forward << " " << op.after_forward << " " << op.pipelined;
  }
}

}  // namespace

std::string encode_schedule(const OpSchedule& schedule) {
  std::ostringstream out;
  out << std::hexfloat;
  for (size_t node = 0; node < schedule.size(); ++node) {
    for (size_t step = 0; step < schedule[node].size(); ++step) {
      const auto& s = schedule[node][step];
      out << node << " " << step << " " << s.compute_time << " " << s.extra_time;
      write_ops(out, s.ops);
      out << " " << s.rounds.size();
      for (const auto& r : s.rounds) {
        out << " " << r.extra_time;
        write_ops(out, r.ops);
      }
      out << "\n";
    }
  }
  return out.str();
}

// Doubles in hexfloat do not read back through operator>> with every standard library; strtod does.
static double read_double(std::istream& in) {
  std::string word;
  in >> word;
  size_t used = 0;
  const double v = std::stod(word, &used);
  if (used != word.size()) throw std::invalid_argument("op schedule: bad number '" + word + "'");
  return v;
}

static std::vector<ScheduledOp> read_ops(std::istream& in) {
  size_t count = 0;
  in >> count;
  std::vector<ScheduledOp> ops;
  for (size_t i = 0; i < count && in; ++i) {
    ScheduledOp op;
    size_t nodes = 0;
    in >> op.kind >> op.tag >> op.elements;
    op.bytes_per_element = read_double(in);
    in >> op.delay >> nodes;
    op.nodes.resize(nodes);
    for (auto& n : op.nodes) in >> n;
    in >> op.after_gradient >> op.before_forward >> op.after_forward >> op.pipelined;
    ops.push_back(std::move(op));
  }
  return ops;
}

OpSchedule decode_schedule(const std::string& text) {
  OpSchedule schedule;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    size_t node = 0, step = 0, rounds = 0;
    in >> node >> step;
    ScheduledStep s;
    s.compute_time = read_double(in);
    s.extra_time = read_double(in);
    s.ops = read_ops(in);
    in >> rounds;
    for (size_t r = 0; r < rounds && in; ++r) {
      ScheduledRound round;
      round.extra_time = read_double(in);
      round.ops = read_ops(in);
      s.rounds.push_back(std::move(round));
    }
    if (!in) throw std::invalid_argument("op schedule: unreadable line '" + line + "'");
    if (schedule.size() <= node) schedule.resize(node + 1);
    if (schedule[node].size() != step) throw std::invalid_argument("op schedule: steps out of order");
    schedule[node].push_back(std::move(s));
  }
  return schedule;
}

}  // namespace testbed
