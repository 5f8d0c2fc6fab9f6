#pragma once
/// \file
/// Backends and their kernel tables. A kernel is pure: arrays in, pre-allocated outputs out, no
/// autograd. Each backend fills its KernelTable explicitly when the registry is first used; a
/// missing entry makes the calling operation throw NotImplementedError naming backend and kernel.
/// A new backend (CUDA, say) implements Backend and fills the table; user code does not change.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "rensa/core/array.h"
#include "rensa/core/device.h"

namespace rensa {

/// Elementwise functions of one array. p0/p1 are the parameters where one is named.
enum class UnaryOp : uint8_t {
  neg, exp, log, sqrt, abs, sign, square, reciprocal, sin, cos,
  relu, sigmoid, tanh, softplus,
  leaky_relu,  ///< p0: slope for x < 0
  elu,         ///< p0: alpha
  pow_scalar,  ///< x ** p0
  clip,        ///< min(max(x, p0), p1)
  affine,      ///< x * p0 + p1
  finite_or_zero,  ///< x where finite, 0 for inf and NaN
};
/// Elementwise functions of two arrays of the same dtype. Comparisons write 1 or 0 in the output's
/// dtype (bool or the inputs' dtype).
enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
/// Reductions over a set of axes. argmax/argmin take one axis and write int64.
enum class ReduceOp : uint8_t { sum, prod, max, min, argmax, argmin };
/// Distributions for the random kernel.
enum class RandomDist : uint8_t { uniform, normal };
/// Update rules of the fused optimizer_update kernel. Each lists its state arrays and its
/// hyperparameters `hp` in the order the kernel reads them.
enum class OptimizerKind : uint8_t {
  sgd,           ///< state: none; hp: lr
  momentum_sgd,  ///< state: v; hp: lr, momentum
  nesterov_ag,   ///< state: v; hp: lr, momentum
  adam,          ///< state: m, v[, vhat]; hp: alpha_t, beta1, beta2, eps, eta, weight_decay_rate, amsgrad (0/1)
  rmsprop,       ///< state: ms; hp: lr, alpha, eps
  adagrad,       ///< state: h; hp: lr, eps
};

/// The kernels a backend provides. Shapes are checked before a kernel is called: inputs of
/// elementwise kernels are already broadcast to the output's shape.
struct KernelTable {
  /// dst[...] = value.
  void (*fill)(const Array& dst, double value) = nullptr;
  /// dst[...] = src[...] with dtype conversion; same shape (src may have stride-0 axes).
  void (*copy)(const Array& src, const Array& dst) = nullptr;
  /// y = op(x); same shape and dtype.
  void (*unary)(UnaryOp op, const Array& x, const Array& y, double p0, double p1) = nullptr;
  /// out = op(a, b); a, b: same shape as out and same dtype.
  void (*binary)(BinaryOp op, const Array& a, const Array& b, const Array& out) = nullptr;
  /// out = op over `axes` (sorted, unique) of x; out has x's shape with those axes set to 1.
  void (*reduce)(ReduceOp op, const Array& x, const Shape& axes, const Array& out) = nullptr;
  /// out (..., M, N) = a (..., M, K) @ b (..., K, N); batch axes already broadcast; same dtype.
  void (*matmul)(const Array& a, const Array& b, const Array& out) = nullptr;
  /// Fills out from the counter-based generator (seed, counter offset); p0, p1: low/high or
  /// mean/stddev. Every backend produces the same numbers.
  void (*random)(RandomDist dist, const Array& out, uint64_t seed, uint64_t offset, double p0,
                 double p1) = nullptr;
  /// y[i] = x[i, t[i]]; x (N, C) float, t (N,) int32/int64, y (N,). IndexError when t is out of range.
  void (*select_item)(const Array& x, const Array& t, const Array& y) = nullptr;
  /// gx (N, C) = 0 except gx[i, t[i]] = gy[i].
  void (*scatter_item)(const Array& gy, const Array& t, const Array& gx) = nullptr;
  /// out = cond ? a : b elementwise; cond bool, a, b and out of one dtype, all of out's shape
  /// (inputs may have stride-0 axes).
  void (*where)(const Array& cond, const Array& a, const Array& b, const Array& out) = nullptr;
  /// One optimizer step in place, in one pass: updates `param` and its `n_state` state arrays
  /// (`state[0..n_state)`, see OptimizerKind) from `grad`. All arrays have param's shape and dtype
  /// (floating); 16-bit floats are computed in float32.
  void (*optimizer_update)(OptimizerKind kind, const Array& param, const Array& grad, const Array* state,
                           int n_state, const double* hp) = nullptr;
};

/// A backend: memory allocation and the kernel table for one device type.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "reference", ...
  virtual std::string_view name() const = 0;
  /// Allocates `nbytes` (at least 16-byte aligned, 64-byte aligned from 16 KiB; a valid pointer
  /// even for 0 bytes).
  virtual void* allocate(std::size_t nbytes) = 0;
  virtual void deallocate(void* ptr, std::size_t nbytes) noexcept = 0;
  /// Copies raw bytes within this backend's memory or between it and host memory.
  virtual void memcpy_from_host(void* dst, const void* src, std::size_t nbytes) = 0;
  virtual void memcpy_to_host(void* dst, const void* src, std::size_t nbytes) = 0;
  KernelTable& kernels() { return kernels_; }
  const KernelTable& kernels() const { return kernels_; }

 private:
  KernelTable kernels_;
};

/// The backend of a device; DeviceError when none is registered for it.
Backend& get_backend(Device device);

namespace detail {
/// The kernel `member` of the device's backend; NotImplementedError naming the backend, kernel and
/// calling operation when absent.
template <class Fn>
Fn kernel(Device device, Fn KernelTable::*member, const char* kernel_name, const char* op) {
  Fn fn = get_backend(device).kernels().*member;
  if (fn == nullptr) [[unlikely]] {
    RENSA_THROW(NotImplementedError, op, ": backend '", get_backend(device).name(), "' has no kernel '",
                kernel_name, "'");
  }
  return fn;
}
}  // namespace detail

}  // namespace rensa

/// Looks up kernel `name` of the KernelTable for `device`, for use in operation `op`.
#define RENSA_KERNEL(device, name, op) ::rensa::detail::kernel((device), &::rensa::KernelTable::name, #name, (op))
