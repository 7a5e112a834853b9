// The names of the test-set shifts (training/data/shifts.h applies them), without LibTorch, so the
// scenario's rules can check a name anywhere the rules build.
#pragma once

#include <string>
#include <vector>

namespace testbed {

const std::vector<std::string>& image_shift_names();

}  // namespace testbed
