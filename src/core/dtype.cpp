#include "rensa/core/dtype.h"

#include <array>

namespace rensa {
namespace {
constexpr std::array<std::string_view, kNumDtypes + 2> kNames = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "mixed16", "mixed_bf16"};
constexpr std::array<std::size_t, kNumDtypes> kSizes = {4, 8, 2, 2, 4, 8, 1, 1};

// Rank in the promotion lattice (bool < uint8 < int32 < int64 < float16/bfloat16 < float32 < float64).
int rank(Dtype d) {
  switch (d) {
    case Dtype::bool_: return 0;
    case Dtype::uint8: return 1;
    case Dtype::int32: return 2;
    case Dtype::int64: return 3;
    case Dtype::float16:
    case Dtype::bfloat16: return 4;
    case Dtype::float32: return 5;
    case Dtype::float64: return 6;
    case Dtype::mixed16:
    case Dtype::mixed_bf16: break;
  }
  RENSA_THROW(DtypeError, "promote_types: ", dtype_name(d), " is a mixed-precision policy, not an array dtype");
}
}  // namespace

std::string_view dtype_name(Dtype dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  RENSA_CHECK(i < kNames.size(), DtypeError, "dtype_name: invalid dtype code ", i);
  return kNames[i];
}

Dtype dtype_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Dtype>(i);
  }
  RENSA_THROW(DtypeError, "dtype_from_name: unknown dtype '", name,
              "'; valid: float32, float64, float16, bfloat16, int32, int64, uint8, bool, and the policies mixed16, "
              "mixed_bf16");
}

std::size_t itemsize(Dtype dtype) {
  RENSA_CHECK(!is_mixed(dtype), DtypeError, dtype_name(dtype),
              " is a mixed-precision policy for Config::dtype, not an array dtype (its parameters are float32, "
              "its computations ", dtype == Dtype::mixed16 ? "float16" : "bfloat16", ")");
  return kSizes.at(static_cast<std::size_t>(dtype));
}

Dtype promote_types(Dtype a, Dtype b) {
  if (a == b) return a;
  if ((a == Dtype::float16 && b == Dtype::bfloat16) || (a == Dtype::bfloat16 && b == Dtype::float16)) {
    return Dtype::float32;
  }
  return rank(a) >= rank(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, Dtype dtype) { return os << dtype_name(dtype); }

}  // namespace rensa
