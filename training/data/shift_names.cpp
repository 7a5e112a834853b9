// The shift names shifts.cpp knows how to apply.
#include "training/data/shift_names.h"

namespace testbed {

const std::vector<std::string>& image_shift_names() {
  static const std::vector<std::string> names = {"noise", "rotation", "invert"};
  return names;
}

}  // namespace testbed
