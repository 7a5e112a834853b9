// The op schedule as text: "node step compute_time op_count" then, per op, "kind tag elements
// bytes_per_element delay node_count nodes... after_gradient".
#include "sim/core/op_schedule.h"

#include <ios>
#include <sstream>
#include <stdexcept>

namespace testbed {

std::string encode_schedule(const OpSchedule& schedule) {
  std::ostringstream out;
  out << std::hexfloat;
  for (size_t node = 0; node < schedule.size(); ++node) {
    for (size_t step = 0; step < schedule[node].size(); ++step) {
      const auto& s = schedule[node][step];
      out << node << " " << step << " " << s.compute_time << " " << s.ops.size();
      for (const auto& op : s.ops) {
        out << " " << op.kind << " " << op.tag << " " << op.elements << " " << op.bytes_per_element << " " << op.delay
            << " " << op.nodes.size();
        for (int n : op.nodes) out << " " << n;
        out << " " << op.after_gradient;
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

OpSchedule decode_schedule(const std::string& text) {
  OpSchedule schedule;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    size_t node = 0, step = 0, ops = 0;
    in >> node >> step;
    ScheduledStep s;
    s.compute_time = read_double(in);
    in >> ops;
    for (size_t i = 0; i < ops; ++i) {
      ScheduledOp op;
      size_t count = 0;
      in >> op.kind >> op.tag >> op.elements;
      op.bytes_per_element = read_double(in);
      in >> op.delay >> count;
      op.nodes.resize(count);
      for (auto& n : op.nodes) in >> n;
      in >> op.after_gradient;
      s.ops.push_back(std::move(op));
    }
    if (!in) throw std::invalid_argument("op schedule: unreadable line '" + line + "'");
    if (schedule.size() <= node) schedule.resize(node + 1);
    if (schedule[node].size() != step) throw std::invalid_argument("op schedule: steps out of order");
    schedule[node].push_back(std::move(s));
  }
  return schedule;
}

}  // namespace testbed
