// The words an algorithm's options use to declare their scenario keys (the *_options.h files):
// ranges, enum names and errors. Plain data without LibTorch, so a scenario can hold options;
// sim/config's strict reader applies them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace testbed {

// Unit-carrying doubles, so the reader knows how to parse each key ("100Mbps", "10ms", "1%",
// "2TB/s", "312TFLOPS") and the writer how to print it back; each holds its base unit, which is
// also what a bare number means (docs/scenario.md, Units).
struct Bandwidth {  // a link's rate: bit/s
  double bps = 0;
  bool operator==(const Bandwidth&) const = default;
};
struct Duration {  // seconds
  double s = 0;
  bool operator==(const Duration&) const = default;
};
struct Fraction {  // a probability or share: 0.01 or 1%
  double value = 0;
  bool operator==(const Fraction&) const = default;
};
struct ByteRate {  // a memory's bandwidth: bytes/s
  double bytes_per_s = 0;
  bool operator==(const ByteRate&) const = default;
};
struct FlopRate {  // a device's arithmetic peak: FLOP/s
  double flops = 0;
  bool operator==(const FlopRate&) const = default;
};

// A numeric key's allowed interval; the reader reports a violation at the key's position.
struct Range {
  double lo = -1e300, hi = 1e300;
  bool lo_open = false, hi_open = false;
};

// An enum a key can take. Specialise with
//   static const std::vector<std::pair<E, std::string>>& all();
// listing each value with its name in the scenario.
template <class E>
struct EnumNames;

template <class E>
std::string enum_name(E value) {
  for (const auto& [v, name] : EnumNames<E>::all())
    if (v == value) return name;
  return "?";
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& [v, name] : EnumNames<E>::all()) out.push_back(name);
  return out;
}

// A rule between an algorithm's keys that it broke: blamed on the first of `keys` the scenario
// gives (else on the last of them).
struct OptionError {
  std::vector<std::string> keys;
  std::string message;
};

}  // namespace testbed
