#pragma once
/// \file
/// Backends and their kernel tables. A kernel is pure: arrays in, pre-allocated outputs out, no
/// autograd. Each backend fills its KernelTable explicitly when the registry is first used; a
/// missing entry makes the calling operation throw NotImplementedError naming backend and kernel.
/// A new backend (CUDA, say) implements Backend and fills the table; user code does not change.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "rensa/core/array.h"
#include "rensa/core/device.h"

namespace rensa {

// The op lists. Each op is named once here; the enums, the kernels' dispatch
// (src/backends/common/scalar_ops.h), the names (op_name) and the kernel tests (every op on every
// backend against the reference) all come from these lists. An op's scalar formula is written
// twice, independently: unary_fn/binary_fn in scalar_ops.h for the host backends, and the
// reference's in src/backends/reference/formulas.h; a reduction's is in each backend's reduce kernel.

/// Elementwise functions of one array. p0/p1 are the parameters where one is named:
/// leaky_relu (p0: slope for x < 0), elu (p0: alpha), pow_scalar (x ** p0), clip (min(max(x, p0),
/// p1)), affine (x * p0 + p1); finite_or_zero is x where finite and 0 for inf and NaN.
#define RENSA_UNARY_OPS(X)                                                                                     \
  X(neg) X(exp) X(log) X(sqrt) X(abs) X(sign) X(square) X(reciprocal) X(sin) X(cos) X(relu) X(sigmoid) X(tanh) \
      X(softplus) X(leaky_relu) X(elu) X(pow_scalar) X(clip) X(affine) X(finite_or_zero) RENSA_MATH_UNARY_OPS(X)
/// The math library's elementwise functions (NumPy's and SciPy's definitions): fix rounds toward
/// zero, rsqrt is 1 / sqrt(x), erfcx is exp(x^2) erfc(x), ndtr the standard normal CDF, ndtri its
/// inverse, log_ndtr log(ndtr(x)), lgamma log|gamma(x)|, digamma its derivative.
#define RENSA_MATH_UNARY_OPS(X)                                                                                 \
  X(tan) X(arcsin) X(arccos) X(arctan) X(sinh) X(cosh) X(arctanh) X(expm1) X(log1p) X(log2) X(log10) X(rsqrt) \
      X(floor) X(ceil) X(fix) X(erf) X(erfc) X(erfcx) X(erfinv) X(erfcinv) X(ndtr) X(ndtri) X(log_ndtr)        \
          X(lgamma) X(digamma)
/// Elementwise functions of two arrays of the same dtype. Comparisons (from eq on) write 1 or 0 in
/// the output's dtype (bool or the inputs' dtype). The floating ops (RENSA_FLOATING_BINARY_OPS) take
/// floating dtypes only. relu_grad(a, b) = a * (b > 0): relu's backward in one pass (b its output).
#define RENSA_BINARY_OPS(X)                                                                                  \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) X(relu_grad) RENSA_FLOATING_BINARY_OPS(X) X(eq) X(ne) \
      X(lt) X(le) X(gt) X(ge)
/// arctan2(a, b) is the angle of the point (b, a); fmod(a, b) = a - b * fix(a / b) (the sign of a);
/// polygamma(a, b) is the a-th derivative of digamma at b (a a whole number >= 0, else NaN);
/// zeta(a, b) is the Hurwitz zeta function sum over k >= 0 of (k + b) ** -a.
#define RENSA_FLOATING_BINARY_OPS(X) X(arctan2) X(fmod) X(polygamma) X(zeta)
/// Reductions over a set of axes. argmax/argmin take one axis and write int64.
#define RENSA_REDUCE_OPS(X) X(sum) X(prod) X(max) X(min) X(argmax) X(argmin)

/// Expands an op-list entry to an enumerator; defined only for the three enums below.
#define RENSA_OP_ENUMERATOR(name) name,
/// The elementwise functions of one array, one enumerator per RENSA_UNARY_OPS entry, in list order.
enum class UnaryOp : uint8_t { RENSA_UNARY_OPS(RENSA_OP_ENUMERATOR) };
/// The elementwise functions of two arrays, one enumerator per RENSA_BINARY_OPS entry, in list order.
enum class BinaryOp : uint8_t { RENSA_BINARY_OPS(RENSA_OP_ENUMERATOR) };
/// The reductions, one enumerator per RENSA_REDUCE_OPS entry, in list order.
enum class ReduceOp : uint8_t { RENSA_REDUCE_OPS(RENSA_OP_ENUMERATOR) };
#undef RENSA_OP_ENUMERATOR

/// Every op of each list, in list order.
#define RENSA_X(name) UnaryOp::name,
/// Every UnaryOp, in list order.
inline constexpr UnaryOp kUnaryOps[] = {RENSA_UNARY_OPS(RENSA_X)};
#undef RENSA_X
#define RENSA_X(name) BinaryOp::name,
/// Every BinaryOp, in list order.
inline constexpr BinaryOp kBinaryOps[] = {RENSA_BINARY_OPS(RENSA_X)};
#undef RENSA_X
#define RENSA_X(name) ReduceOp::name,
/// Every ReduceOp, in list order.
inline constexpr ReduceOp kReduceOps[] = {RENSA_REDUCE_OPS(RENSA_X)};
#undef RENSA_X

/// Whether `op` is one of RENSA_FLOATING_BINARY_OPS (kernels throw DtypeError for other dtypes).
constexpr bool is_floating_only(BinaryOp op) {
#define RENSA_X(name) op == BinaryOp::name ||
  return RENSA_FLOATING_BINARY_OPS(RENSA_X) false;
#undef RENSA_X
}

/// The op's name as in its list ("leaky_relu"); "?" for a value outside the enum.
std::string_view op_name(UnaryOp op);
/// The op's name as in its list ("add"); "?" for a value outside the enum.
std::string_view op_name(BinaryOp op);
/// The op's name as in its list ("argmax"); "?" for a value outside the enum.
std::string_view op_name(ReduceOp op);
/// Scans of the scan kernel (cumulative sums and products, and the first-order linear recurrence
/// their gradients need).
enum class ScanOp : uint8_t { sum, prod, linear };
/// Distributions for the random kernel.
enum class RandomDist : uint8_t { uniform, normal };
/// Geometry of a 2-d convolution over NCHW arrays: y[n, o, i, j] = sum over c, ky, kx of
/// x[n, c, i*stride_y - pad_y + ky*dilate_y, j*stride_x - pad_x + kx*dilate_x] * W[o, c, ky, kx],
/// elements outside x reading 0, c running over the input channels of o's group. pad_* is the
/// top/left padding; the output extent is the output array's, so the bottom/right padding is
/// whatever that implies (it may be smaller than pad_*, or larger with cover_all).
struct Conv2dParams {
  /// Stride along y (rows); \p stride_x along x (columns).
  int64_t stride_y = 1, stride_x = 1;
  /// Top padding in pixels; \p pad_x is the left padding.
  int64_t pad_y = 0, pad_x = 0;
  /// Dilation along y (distance between kernel taps); \p dilate_x along x.
  int64_t dilate_y = 1, dilate_x = 1;
  /// Number of channel groups; input and output channels are split into this many equal groups.
  int64_t groups = 1;
  /// \var stride_x
  /// Stride along x (columns).
  /// \var pad_x
  /// Left padding in pixels.
  /// \var dilate_x
  /// Dilation along x (distance between kernel taps).
};
/// Geometry of a 2-d pooling window over NCHW arrays; as Conv2dParams, the output extent is the
/// output array's and pad_* is the top/left padding.
struct Pool2dParams {
  /// Window height; \p ksize_x is its width.
  int64_t ksize_y = 1, ksize_x = 1;
  /// Stride along y (rows); \p stride_x along x (columns).
  int64_t stride_y = 1, stride_x = 1;
  /// Top padding in pixels; \p pad_x is the left padding.
  int64_t pad_y = 0, pad_x = 0;
  /// \var ksize_x
  /// Window width.
  /// \var stride_x
  /// Stride along x (columns).
  /// \var pad_x
  /// Left padding in pixels.
};

/// Where an LSTM cell's four gates sit in a row of its pre-activations: unit j's gate g is column
/// j * unit_stride + g. Chainer's lstm interleaves a, i, f, o per unit (stride 4, offsets 0 to 3);
/// the n_step networks keep blocks of H columns in the order i, f, a, o (stride 1, offsets 2H, 0,
/// H, 3H).
struct LstmGates {
  /// Distance in columns between one unit's gates and the next unit's: 4 interleaved, 1 in blocks.
  int64_t unit_stride = 4;
  /// Column offset of the cell-input gate a (the tanh one); \p i, \p f and \p o are those of the input, forget and output gates.
  int64_t a = 0, i = 1, f = 2, o = 3;
  /// \var i
  /// Column offset of the input gate.
  /// \var f
  /// Column offset of the forget gate.
  /// \var o
  /// Column offset of the output gate.
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
  /// out (..., M, N) = a (..., M, K) @ b (..., K, N); batch axes already broadcast; same dtype, or
  /// 16-bit a and b with a float32 out (the float32 accumulation not rounded to 16 bits).
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
  /// out = the inclusive scan of x along `axis`, from index 0 up or, when `reverse`, from the last
  /// index down; with out[prev] the element before in that order (none for the first): sum out[i] =
  /// out[prev] + x[i]; prod out[i] = out[prev] * x[i]; linear out[i] = x[i] + a[i] * out[prev] (a of
  /// x's shape; a null Array for sum and prod). x, a, out: one floating dtype and shape; inputs may
  /// have stride-0 axes.
  void (*scan)(ScanOp op, const Array& x, const Array& a, int64_t axis, bool reverse, const Array& out) = nullptr;
  /// y (A, M, B) = x (A, N, B) gathered along axis 1: y[a, m, b] = x[a, idx[m], b]; idx (M,) int64;
  /// x, y of one dtype, x any strides, y contiguous. IndexError (before writing) when an index is
  /// outside [0, N).
  void (*take)(const Array& x, const Array& idx, const Array& y) = nullptr;
  /// y (A, N, B) += x (A, M, B) scattered along axis 1: y[a, idx[m], b] += x[a, m, b], repeated
  /// indices accumulating in order of m (16-bit floats in float, rounded once); idx (M,) int64; one
  /// dtype, x any strides, y contiguous. IndexError (before writing) when an index is outside [0, N).
  void (*scatter_add)(const Array& x, const Array& idx, const Array& y) = nullptr;
  /// One LSTM step for B rows of H units; every array contiguous, of one floating dtype. With z = x
  /// + r (x, r (B, 4H); r may be a null Array): a = tanh(z_a); i, f, o = sigmoid(z_i, z_f, z_o);
  /// c = a i + f c_prev; h = o tanh(c). act (B, 4H) receives a, i, f, o in x's layout; c_prev, c,
  /// h are (B, H).
  void (*lstm_forward)(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c,
                       const Array& h, const LstmGates& gates) = nullptr;
  /// The gradient of lstm_forward: from its act, c_prev and c and the gradients gc, gh (B, H) of c
  /// and h (either may be a null Array: zero), gx (B, 4H, act's layout) of the pre-activations z
  /// and gc_prev (B, H) of c_prev. Same dtype and contiguity rules.
  void (*lstm_backward)(const Array& act, const Array& c_prev, const Array& c, const Array& gc, const Array& gh,
                        const Array& gx, const Array& gc_prev, const LstmGates& gates) = nullptr;
  /// One GRU step of the n_step networks for B rows of H units; every array contiguous, of one
  /// floating dtype. x, r (B, 3H): the input and hidden projections (biases included) in blocks of H
  /// columns r, z, n: g = sigmoid(x_r + r_r), z = sigmoid(x_z + r_z), n = tanh(x_n + g r_n),
  /// h = (1 - z) n + z h_prev. act (B, 3H) receives g, z, n; h_prev, h are (B, H).
  void (*gru_forward)(const Array& x, const Array& r, const Array& h_prev, const Array& act,
                      const Array& h) = nullptr;
  /// The gradient of gru_forward from its act, r and h_prev and the gradient gh (B, H) of h: gx
  /// (B, 3H) of x, gr (B, 3H) of r, and gh_prev (B, H), the part of h_prev's gradient that does not
  /// pass through r (z gh). Same dtype and contiguity rules.
  void (*gru_backward)(const Array& act, const Array& r, const Array& h_prev, const Array& gh, const Array& gx,
                       const Array& gr, const Array& gh_prev) = nullptr;
  /// Batch normalization over K sub-batches: x (N, C, S) of a floating dtype, any strides; y, of
  /// x's dtype and strides. For each k < K (K = mean's rows, dividing N) and channel c, over the
  /// G = N / K examples kG.. and all S positions (m = G S elements): mean[k, c], var[k, c] (biased,
  /// two passes) and y = (x - mean) / sqrt(var + eps) gamma[c] + beta[c]. gamma, beta (C), of any
  /// floating dtype, may be null Arrays (1 and 0); mean, var (K, C) contiguous, of any floating
  /// dtype. Sums in double, elementwise arithmetic in x's compute type.
  void (*batch_norm_forward)(const Array& x, const Array& gamma, const Array& beta, const Array& y,
                             const Array& mean, const Array& var, double eps) = nullptr;
  /// The gradient of batch_norm_forward from its x, gamma, mean, var and the gradient gy of y (gy,
  /// gx of x's strides): with xhat = (x - mean) / sqrt(var + eps), per (k, c) A = sum gy and
  /// B = sum gy xhat, gx = gamma / sqrt(var + eps) (gy - A / m - xhat B / m); ggamma, gbeta (K, C,
  /// contiguous, any floating dtype) receive B and A (the function sums them over k).
  void (*batch_norm_backward)(const Array& x, const Array& gamma, const Array& mean, const Array& var,
                              const Array& gy, const Array& gx, const Array& ggamma, const Array& gbeta,
                              double eps) = nullptr;
  /// Symmetric eigendecomposition of each matrix of a (G, C, C) (float32 or float64, any strides),
  /// reading only its lower triangle, as NumPy's eigh: w (G, C) receives the eigenvalues in
  /// ascending order and v (G, C, C) orthonormal eigenvectors as columns, a[g] = v[g] diag(w[g])
  /// v[g]^T; w and v contiguous, of a's dtype. ValueError naming the matrix when one has a
  /// non-finite entry or the iteration does not converge.
  void (*eigh)(const Array& a, const Array& w, const Array& v) = nullptr;
  // ---- convolution and pooling (N, C, H, W; inputs any strides; outputs contiguous or
  // channels-last, see MemoryFormat; one floating dtype) ----
  /// The layout this backend's convolutions of `dtype` run in without converting: functions
  /// allocate convolution outputs in it, and elementwise ops and pooling keep it. Null: contiguous.
  MemoryFormat (*conv2d_memory_format)(Dtype dtype) = nullptr;
  /// y (N, O, OH, OW) = conv(x (N, C, H, W), w (O, C/groups, KH, KW)) + b (O,) broadcast; `b` may be
  /// a null Array (no bias). See Conv2dParams.
  void (*conv2d_forward)(const Array& x, const Array& w, const Array& b, const Array& y,
                         const Conv2dParams& p) = nullptr;
  /// gx (N, C, H, W) = the transpose of conv2d_forward (without bias) in x applied to gy (N, O, OH,
  /// OW): every gy element spreads over its window through w. gx's shape fixes H and W.
  void (*conv2d_backward_data)(const Array& gy, const Array& w, const Array& gx, const Conv2dParams& p) = nullptr;
  /// gw (O, C/groups, KH, KW) = the gradient of <conv2d_forward(x, w), gy> in w (overwritten).
  void (*conv2d_backward_weights)(const Array& x, const Array& gy, const Array& gw,
                                  const Conv2dParams& p) = nullptr;
  /// y (N, C, OH, OW) = maximum of x over each window (padding never wins); `indices` (int32, y's
  /// shape) receives the flat position h*W + w of the maximum within its (H, W) plane (the first
  /// one on ties). Every window must hold at least one element of x.
  void (*max_pool2d_forward)(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p) = nullptr;
  /// gx (N, C, H, W) = 0, then gx[n, c].flat[indices[n, c, i, j]] += gy[n, c, i, j].
  void (*max_pool2d_backward)(const Array& gy, const Array& indices, const Array& gx) = nullptr;
  /// y[n, c, i, j] = x[n, c].flat[indices[n, c, i, j]] (y and indices of one shape).
  void (*max_pool2d_gather)(const Array& x, const Array& indices, const Array& y) = nullptr;
  /// y (N, C, OH, OW) = sum of x over each window / (KH * KW): padding counts as zeros.
  void (*avg_pool2d_forward)(const Array& x, const Array& y, const Pool2dParams& p) = nullptr;
  /// gx (N, C, H, W) = the transpose of avg_pool2d_forward applied to gy.
  void (*avg_pool2d_backward)(const Array& gy, const Array& gx, const Pool2dParams& p) = nullptr;
};

/// Every slot of KernelTable, in order. A backend declares its kernels from this list
/// (src/backends/kernel_slots.h: one function per slot, with the slot's type and name, in the
/// backend's namespace) and registers them from it, so a kernel is a slot here and one definition
/// per backend. The count is checked against the table.
#define RENSA_KERNEL_SLOTS(X)                                                                                     \
  X(fill) X(copy) X(unary) X(binary) X(reduce) X(matmul) X(random) X(select_item) X(scatter_item) X(where)      \
      X(scan) X(take) X(scatter_add) X(lstm_forward) X(lstm_backward) X(gru_forward) X(gru_backward)          \
      X(batch_norm_forward) X(batch_norm_backward) X(eigh)                                                     \
      X(conv2d_memory_format) X(conv2d_forward) X(conv2d_backward_data) X(conv2d_backward_weights)              \
          X(max_pool2d_forward) X(max_pool2d_backward) X(max_pool2d_gather) X(avg_pool2d_forward)               \
              X(avg_pool2d_backward)
/// Adds 1 per RENSA_KERNEL_SLOTS entry, for the table-size check below.
#define RENSA_COUNT_SLOT(name) +1
static_assert(sizeof(KernelTable) == (0 RENSA_KERNEL_SLOTS(RENSA_COUNT_SLOT)) * sizeof(void (*)()),
              "every member of KernelTable must be listed in RENSA_KERNEL_SLOTS");
#undef RENSA_COUNT_SLOT

/// A backend: memory allocation and the kernel table for one device type.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu", "reference", ...
  virtual std::string_view name() const = 0;
  /// Allocates `nbytes` (at least 16-byte aligned, 64-byte aligned from 16 KiB; a valid pointer
  /// even for 0 bytes).
  virtual void* allocate(std::size_t nbytes) = 0;
  /// Frees memory from allocate(); `nbytes` is the size it was allocated with.
  virtual void deallocate(void* ptr, std::size_t nbytes) noexcept = 0;
  /// Copies `nbytes` from host memory at `src` to this backend's memory at `dst`.
  virtual void memcpy_from_host(void* dst, const void* src, std::size_t nbytes) = 0;
  /// Copies `nbytes` from this backend's memory at `src` to host memory at `dst`.
  virtual void memcpy_to_host(void* dst, const void* src, std::size_t nbytes) = 0;
  /// The kernel table this backend fills; a null slot makes the operation using it throw NotImplementedError.
  KernelTable& kernels() { return kernels_; }
  /// The kernel table, read-only.
  const KernelTable& kernels() const { return kernels_; }

 private:
  KernelTable kernels_;
};

/// The backend of a device; DeviceError when none is registered for it.
Backend& get_backend(Device device);

namespace detail {

// ---- capture for static graphs (include/rensa/core/static_graph.h) ----

/// Number of static-graph traces open on all threads. Kernel lookups test it first: with no trace
/// open, capture costs one relaxed load per lookup.
extern std::atomic<int> g_static_captures;
inline bool static_capturing() { return g_static_captures.load(std::memory_order_relaxed) != 0; }
/// Whether the calling thread is tracing a static graph outside any kernel or static_code: what it
/// runs now is to be recorded.
bool capture_open();
/// Whether the open trace records without running (a backward's: its values are not needed until a
/// replay, and running it would overwrite buffers the forward's results still live in).
bool capture_dry();
/// Appends a step to the calling thread's trace (only when capture_open()).
void capture_step(std::function<void()> step);
/// Notes that a recorded step uses `a` (its values are then no longer the host's to read).
void capture_use(const Array& a);
/// Marks the calling thread as inside a kernel (or static_code) for its lifetime: kernels it calls
/// are not recorded again, and its reads of array values are its own.
class [[nodiscard]] UncapturedScope {
 public:
  UncapturedScope();
  ~UncapturedScope();
  UncapturedScope(const UncapturedScope&) = delete;
  UncapturedScope& operator=(const UncapturedScope&) = delete;
};
/// Records `step` in the open trace, if any; then, unless the trace is dry, runs it inside an
/// UncapturedScope. The caller notes the arrays the step uses first (capture_use).
void record_and_run(const std::function<void()>& step);

/// The device of a kernel call: its first non-null Array argument's.
template <class... A>
Device kernel_device(const A&... args) {
  std::optional<Device> device;
  auto take = [&device](const auto& a) {
    if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Array>) {
      if (!device && !a.is_null()) device = a.device();
    }
  };
  (take(args), ...);
  return device.value_or(Device::cpu());
}

template <class Fn>
struct ReturnsVoid : std::false_type {};
template <class... A>
struct ReturnsVoid<void (*)(A...)> : std::true_type {};

/// A kernel as called while a static graph is traced: records the call (the Arrays' handles, so a
/// replay writes the same buffers) and runs it.
template <auto Member, class Fn>
struct CapturedKernel;
template <auto Member, class... A>
struct CapturedKernel<Member, void (*)(A...)> {
  static void call(A... args) {
    void (*real)(A...) = get_backend(kernel_device(args...)).kernels().*Member;
    auto use = [](const auto& a) {
      if constexpr (std::is_same_v<std::decay_t<decltype(a)>, Array>) capture_use(a);
    };
    if (capture_open()) (use(args), ...);
    record_and_run([real, saved = std::tuple<std::decay_t<A>...>(args...)] { std::apply(real, saved); });
  }
};

/// The kernel `Member` of the device's backend; NotImplementedError naming the backend, kernel and
/// calling operation when absent. While a static graph is traced, a recording wrapper of it.
template <auto Member>
auto kernel(Device device, const char* kernel_name, const char* op) {
  auto fn = get_backend(device).kernels().*Member;
  if (fn == nullptr) [[unlikely]] {
    RENSA_THROW(NotImplementedError, op, ": backend '", get_backend(device).name(), "' has no kernel '",
                kernel_name, "'");
  }
  using Fn = decltype(fn);
  if constexpr (ReturnsVoid<Fn>::value) {
    if (static_capturing()) [[unlikely]]
      return Fn(&CapturedKernel<Member, Fn>::call);
  }
  return fn;
}
}  // namespace detail

}  // namespace rensa

/// Looks up kernel `name` of the KernelTable for `device`, for use in operation `op`.
#define RENSA_KERNEL(device, name, op) ::rensa::detail::kernel<&::rensa::KernelTable::name>((device), #name, (op))
