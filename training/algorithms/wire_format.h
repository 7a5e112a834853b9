// The number formats an outer (pseudo-)gradient can travel in.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// fp32 4 bytes an element, bf16 and fp16 2, fp4 half a byte (e2m1 with one scale per tensor),
// int8 one byte (INTELLECT-1's uint8 codes with a table of 256 values: common.h, to_wire).
enum class WireFormat { Fp32, Bf16, Fp16, Fp4, Int8 };

template <>
struct EnumNames<WireFormat> {
  static const std::vector<std::pair<WireFormat, std::string>>& all() {
    static const std::vector<std::pair<WireFormat, std::string>> names = {{WireFormat::Fp32, "fp32"},
                                                                          {WireFormat::Bf16, "bf16"},
                                                                          {WireFormat::Fp16, "fp16"},
                                                                          {WireFormat::Fp4, "fp4"},
                                                                          {WireFormat::Int8, "int8"}};
    return names;
  }
};

}  // namespace testbed
