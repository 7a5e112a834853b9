// Sign-SGD's scenario keys (signsgd.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/algorithms/option_fields.h"

namespace testbed {

// majority: signSGD with majority vote (Bernstein et al. 2019): signs of the gradients,
// x -= lr sign(sum of signs). signum: the same on the signs of a momentum, m = beta m + (1 - beta) g.
// ef_sign: EF-SignSGD (Karimireddy et al. 2019): the scaled sign (|p|_1 / n) sign(p) of
// p = lr g + e per tensor, e keeps p minus what was sent, x -= the mean over nodes.
enum class SignVariant { Majority, Signum, EfSign };

template <>
struct EnumNames<SignVariant> {
  static const std::vector<std::pair<SignVariant, std::string>>& all() {
    static const std::vector<std::pair<SignVariant, std::string>> names = {
        {SignVariant::Majority, "majority"}, {SignVariant::Signum, "signum"}, {SignVariant::EfSign, "ef_sign"}};
    return names;
  }
};

struct SignOptions {
  SignVariant variant = SignVariant::Majority;
  double momentum = 0.9;  // signum's beta

  template <class V>
  void fields(V& v) {
    v.field("variant", variant);
    v.field("momentum", momentum, Range{0, 1, false, true});
  }
  std::optional<OptionError> check() const {
    if (variant != SignVariant::Signum && momentum != SignOptions{}.momentum)
      return OptionError{
          {"momentum"},
          "'momentum' has no effect with variant " + enum_name(variant) + "; it is read only with variant signum"};
    return std::nullopt;
  }
  bool operator==(const SignOptions&) const = default;
};

}  // namespace testbed
