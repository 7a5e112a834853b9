// Bad input from the user (a scenario, a path, an option): what() is "where:line:col: message",
// and the CLI exits 2 on it before writing anything.
#pragma once

#include <stdexcept>

namespace testbed {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad scenario: what() is "file:line:col: message".
class ScenarioError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace testbed
