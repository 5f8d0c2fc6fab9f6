#pragma once
/// \file
/// Element types of arrays and compile-time dispatch over them.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "rensa/core/error.h"
#include "rensa/core/half.h"

namespace rensa {

/// The element type of an Array; or, for Config::dtype only, a mixed-precision policy: `mixed16` and
/// `mixed_bf16` (Chainer's `chainer.mixed16`) keep parameters in float32 and compute in float16 or
/// bfloat16 (docs/mixed_precision.md). No array has a policy dtype: itemsize() and allocation refuse
/// them.
enum class Dtype : uint8_t { float32, float64, float16, bfloat16, int32, int64, uint8, bool_, mixed16, mixed_bf16 };

/// The number of array dtypes (the policies follow them).
inline constexpr int kNumDtypes = 8;

/// NumPy's name of the dtype: "float32", ..., "bool".
std::string_view dtype_name(Dtype dtype);
/// Parses a NumPy dtype name or a policy name ("mixed16", "mixed_bf16"); throws DtypeError listing
/// the valid names.
Dtype dtype_from_name(std::string_view name);
/// Bytes per element; DtypeError for a policy.
std::size_t itemsize(Dtype dtype);
/// mixed16 or mixed_bf16.
constexpr bool is_mixed(Dtype d) { return d == Dtype::mixed16 || d == Dtype::mixed_bf16; }
/// float32, float64, float16, bfloat16.
constexpr bool is_floating(Dtype d) {
  return d == Dtype::float32 || d == Dtype::float64 || d == Dtype::float16 || d == Dtype::bfloat16;
}
/// float16 or bfloat16: the 16-bit floats, stored as such and computed in float32.
constexpr bool is_half(Dtype d) { return d == Dtype::float16 || d == Dtype::bfloat16; }
/// int32, int64, uint8, bool.
constexpr bool is_integral(Dtype d) { return !is_floating(d); }
/// NumPy-style promotion of two dtypes (bool < uint8 < int32 < int64 < floats; float16 with
/// bfloat16 gives float32).
Dtype promote_types(Dtype a, Dtype b);

/// Writes dtype_name(dtype).
std::ostream& operator<<(std::ostream& os, Dtype dtype);

/// The Dtype of a C++ element type.
template <class T>
constexpr Dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return Dtype::float32;
  else if constexpr (std::is_same_v<T, double>) return Dtype::float64;
  else if constexpr (std::is_same_v<T, Half>) return Dtype::float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return Dtype::bfloat16;
  else if constexpr (std::is_same_v<T, int32_t>) return Dtype::int32;
  else if constexpr (std::is_same_v<T, int64_t>) return Dtype::int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return Dtype::uint8;
  else if constexpr (std::is_same_v<T, bool>) return Dtype::bool_;
  else static_assert(sizeof(T) == 0, "rensa: unsupported element type");
}

/// The type arithmetic on T is computed in: float for the 16-bit floats, T otherwise.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

/// Calls `f.template operator()<T>()` with T the C++ type of `dtype`.
/// Use with a template lambda: `dispatch(d, [&]<class T>() { ... })`.
template <class F>
decltype(auto) dispatch(Dtype dtype, F&& f) {
  switch (dtype) {
    case Dtype::float32: return f.template operator()<float>();
    case Dtype::float64: return f.template operator()<double>();
    case Dtype::float16: return f.template operator()<Half>();
    case Dtype::bfloat16: return f.template operator()<BFloat16>();
    case Dtype::int32: return f.template operator()<int32_t>();
    case Dtype::int64: return f.template operator()<int64_t>();
    case Dtype::uint8: return f.template operator()<uint8_t>();
    case Dtype::bool_: return f.template operator()<bool>();
    case Dtype::mixed16:
    case Dtype::mixed_bf16: break;
  }
  RENSA_THROW(DtypeError, "dispatch: dtype code ", static_cast<int>(dtype),
              " is not an array dtype (mixed16 and mixed_bf16 are Config::dtype policies)");
}

/// Like dispatch() for the floating dtypes only; other dtypes throw DtypeError naming `op`.
template <class F>
decltype(auto) dispatch_floating(Dtype dtype, std::string_view op, F&& f) {
  switch (dtype) {
    case Dtype::float32: return f.template operator()<float>();
    case Dtype::float64: return f.template operator()<double>();
    case Dtype::float16: return f.template operator()<Half>();
    case Dtype::bfloat16: return f.template operator()<BFloat16>();
    default: break;
  }
  RENSA_THROW(DtypeError, op, ": expected a floating dtype, got ", dtype_name(dtype));
}

}  // namespace rensa
