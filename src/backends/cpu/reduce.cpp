// cpu reductions. The input is viewed with kept axes first and reduced axes last; the two common
// layouts (reduced axes innermost, or outermost in memory: a contiguous array's leading axes, or
// (N, H, W) of a channels-last one) run without copies, others copy once into the first layout.
#include <omp.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace {

template <class T>
using acc_t = std::conditional_t<is_floating(dtype_of<T>()), double, int64_t>;

template <class A>
A identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return A(1);
    case ReduceOp::max: return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                                     : std::numeric_limits<A>::lowest();
    case ReduceOp::min: return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                                     : std::numeric_limits<A>::max();
    default: return A(0);
  }
}

template <class A>
inline A combine(ReduceOp op, A acc, A v) {
  switch (op) {
    case ReduceOp::sum: return acc + v;
    case ReduceOp::prod: return acc * v;
    case ReduceOp::max: return binary_fn<BinaryOp::maximum, A>(acc, v);
    case ReduceOp::min: return binary_fn<BinaryOp::minimum, A>(acc, v);
    default: return acc;
  }
}

// Reduces `n` contiguous-or-strided elements.
template <class T, class A>
A reduce_run(ReduceOp op, const T* p, int64_t n, int64_t stride) {
  A acc = identity<A>(op);
  if (op == ReduceOp::sum && stride == 1) {
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += static_cast<A>(static_cast<compute_t<T>>(p[i]));
    return acc;
  }
  if constexpr (std::is_floating_point_v<A>) {
    // max and min of a contiguous run vectorized (softmax's max over a 10000-class row); a NaN
    // anywhere is the result, as in the scalar loop.
    if ((op == ReduceOp::max || op == ReduceOp::min) && stride == 1) {
      int nan = 0;
      if (op == ReduceOp::max) {
#pragma omp simd reduction(max : acc) reduction(| : nan)
        for (int64_t i = 0; i < n; ++i) {
          const A v = static_cast<A>(static_cast<compute_t<T>>(p[i]));
          acc = v > acc ? v : acc;
          nan |= v != v;
        }
      } else {
#pragma omp simd reduction(min : acc) reduction(| : nan)
        for (int64_t i = 0; i < n; ++i) {
          const A v = static_cast<A>(static_cast<compute_t<T>>(p[i]));
          acc = v < acc ? v : acc;
          nan |= v != v;
        }
      }
      return nan != 0 ? std::numeric_limits<A>::quiet_NaN() : acc;
    }
  }
  for (int64_t i = 0; i < n; ++i) acc = combine(op, acc, static_cast<A>(static_cast<compute_t<T>>(p[i * stride])));
  return acc;
}

template <class T>
int64_t arg_run(bool is_max, const T* p, int64_t n, int64_t stride) {
  using C = compute_t<T>;
  int64_t best = 0;
  C bv = static_cast<C>(p[0]);
  for (int64_t i = 1; i < n; ++i) {
    const C v = static_cast<C>(p[i * stride]);
    if (bv != bv) break;  // NaN wins (first occurrence), as NumPy
    if (v != v || (is_max ? v > bv : v < bv)) {
      bv = v;
      best = i;
    }
  }
  return best;
}

// True when x is dense (no gaps, no overlaps) and, in memory order, all its reduced axes come
// before its kept axes, which keep their logical order: x is then rsize rows of ksize elements.
bool reduced_outermost(const Array& x, const std::vector<char>& red) {
  // On the stack: this runs for every sum, small ones included.
  constexpr std::size_t kMaxAxes = 16;
  if (x.size() == 0 || x.shape().size() > kMaxAxes) return false;
  std::size_t order[kMaxAxes];
  std::size_t n = 0;
  for (std::size_t i = 0; i < x.shape().size(); ++i) {
    if (x.shape()[i] != 1) order[n++] = i;
  }
  const Shape& st = x.strides();
  std::stable_sort(order, order + n, [&](std::size_t a, std::size_t b) { return st[a] > st[b]; });
  int64_t expected = 1;
  for (std::size_t k = n; k-- > 0;) {
    if (st[order[k]] != expected) return false;
    expected *= x.shape()[order[k]];
  }
  bool in_kept = false;
  std::size_t last_kept = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t a = order[k];
    if (red[a]) {
      if (in_kept) return false;
    } else {
      if (in_kept && a < last_kept) return false;
      in_kept = true;
      last_kept = a;
    }
  }
  return true;
}

}  // namespace

void reduce(ReduceOp op, const Array& x, const Shape& axes, const Array& out) {
  const int64_t nd = x.ndim();
  std::vector<char> red(static_cast<std::size_t>(nd), 0);
  for (int64_t a : axes) red[static_cast<std::size_t>(a)] = 1;
  Shape perm, kept_shape;
  int64_t rsize = 1;
  for (int64_t i = 0; i < nd; ++i) {
    if (!red[static_cast<std::size_t>(i)]) {
      perm.push_back(i);
      kept_shape.push_back(x.shape()[static_cast<std::size_t>(i)]);
    }
  }
  for (int64_t i = 0; i < nd; ++i) {
    if (red[static_cast<std::size_t>(i)]) {
      perm.push_back(i);
      rsize *= x.shape()[static_cast<std::size_t>(i)];
    }
  }
  const int64_t ksize = kept_shape.numel();
  if (ksize == 0) return;
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  RENSA_CHECK(rsize > 0 || !(arg || op == ReduceOp::max || op == ReduceOp::min), ValueError,
              "reduce: zero-size reduction of shape ", x.shape(), " has no identity");
  Array xp = x.transpose(perm);
  // Output as a flat contiguous-or-not view over kept elements; when out's layout allows no such
  // view, reshape copies, and the results are copied back into out at the end.
  Array o = out.reshape(kept_shape).reshape(Shape{ksize});
  const bool scratch = !o.shares_storage(out);
  dispatch(x.dtype(), [&]<class T>() {
    using A = acc_t<T>;
    // Layout 2: reduced axes outermost in memory -> accumulate rows.
    if (!arg && op == ReduceOp::sum && static_cast<int64_t>(axes.size()) < nd && reduced_outermost(x, red)) {
      const T* p = static_cast<const T*>(x.raw_data());
      std::vector<A> acc(static_cast<std::size_t>(ksize), A(0));
      // Read only by the pragma: unused where OpenMP is off.
      [[maybe_unused]] const bool par = rsize * ksize >= kParallelGrain && ksize >= 64 && omp_get_max_threads() > 1;
#pragma omp parallel for schedule(static) if (par)
      for (int64_t k0 = 0; k0 < ksize; k0 += 64) {
        const int64_t k1 = std::min(ksize, k0 + 64);
        for (int64_t r = 0; r < rsize; ++r) {
          const T* row = p + r * ksize;
#pragma omp simd
          for (int64_t k = k0; k < k1; ++k) acc[static_cast<std::size_t>(k)] += static_cast<A>(static_cast<compute_t<T>>(row[k]));
        }
      }
      dispatch(out.dtype(), [&]<class O>() {
        O* po = static_cast<O*>(o.raw_data());
        const int64_t so = o.strides()[0];
        for (int64_t k = 0; k < ksize; ++k) po[k * so] = convert<O>(acc[static_cast<std::size_t>(k)]);
      });
      return;
    }
    // Layout 1: reduced axes innermost; make them one contiguous run if they are not.
    Array src = xp;
    Shape rshape = kept_shape;
    rshape.push_back(rsize);
    int64_t rstride = 1;
    {
      Array trial = xp.reshape(rshape);  // a view when the reduced axes merge, else a copy
      src = trial;
      rstride = rsize > 0 ? trial.strides().back() : 1;
    }
    Array src2 = src.reshape(Shape{ksize, rsize});
    const T* base = static_cast<const T*>(src2.raw_data());
    const int64_t s0 = src2.strides()[0], s1 = rsize > 1 ? src2.strides()[1] : rstride;
    dispatch(out.dtype(), [&]<class O>() {
      O* po = static_cast<O*>(o.raw_data());
      const int64_t so = o.strides()[0];
      // Read only by the pragma: unused where OpenMP is off.
      [[maybe_unused]] const bool par =
          ksize * std::max<int64_t>(rsize, 1) >= kParallelGrain && ksize > 1 && omp_get_max_threads() > 1;
#pragma omp parallel for schedule(static) if (par)
      for (int64_t k = 0; k < ksize; ++k) {
        const T* p = base + k * s0;
        if (arg) {
          po[k * so] = convert<O>(arg_run<T>(op == ReduceOp::argmax, p, rsize, s1));
        } else {
          po[k * so] = convert<O>(reduce_run<T, A>(op, p, rsize, s1));
        }
      }
    });
  });
  if (scratch) copy(o.reshape(out.shape()), out);
}

}  // namespace rensa::backends::cpu
