// The reference backend: host memory of its own and naive loops over multi-indices, written for
// clarity, not speed, and sharing no code with the cpu backend (elementwise formulas in formulas.h).
// Tests compare the cpu backend (and later ones) against it.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "rensa/core/random.h"
#include "src/backends/reference/formulas.h"
#include "src/backends/reference/kernels.h"
#include "src/core/convert.h"

namespace rensa::backends {
namespace reference {

using rensa::detail::convert;

namespace {

// Plain host memory: every block 64-byte aligned and a whole number of cache lines (at least one, so
// that 0 bytes still get a valid pointer).
class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  void* allocate(std::size_t nbytes) override {
    void* p = std::aligned_alloc(64, nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64);
    RENSA_CHECK(p != nullptr, Error, "reference: out of memory allocating ", nbytes, " bytes");
    return p;
  }
  void deallocate(void* ptr, std::size_t) noexcept override { std::free(ptr); }
  void memcpy_from_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }
  void memcpy_to_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }
};

// Calls f(offsets...) for every multi-index of `shape`, with each array's element offset.
template <std::size_t N, class F>
void for_each_index(const Shape& shape, const std::array<const Array*, N>& arrays, F&& f) {
  const int64_t total = shape.numel();
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    std::array<int64_t, N> off{};
    for (std::size_t k = 0; k < N; ++k) {
      for (std::size_t d = 0; d < shape.size(); ++d) off[k] += idx[d] * arrays[k]->strides()[d];
    }
    f(off);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

template <class T>
T* ptr(const Array& a) {
  return static_cast<T*>(a.raw_data());
}

}  // namespace

void fill(const Array& dst, double value) {
  dispatch(dst.dtype(), [&]<class T>() {
    for_each_index<1>(dst.shape(), {&dst}, [&](auto off) { ptr<T>(dst)[off[0]] = convert<T>(value); });
  });
}

void copy(const Array& src, const Array& dst) {
  dispatch(src.dtype(), [&]<class S>() {
    dispatch(dst.dtype(), [&]<class D>() {
      for_each_index<2>(dst.shape(), {&src, &dst},
                        [&](auto off) { ptr<D>(dst)[off[1]] = convert<D>(ptr<S>(src)[off[0]]); });
    });
  });
}

namespace {
// Floating elements widen exactly to double, integer and bool ones to int64.
template <class T>
auto widened(T v) {
  if constexpr (is_floating(dtype_of<T>())) {
    return static_cast<double>(static_cast<compute_t<T>>(v));
  } else {
    return static_cast<int64_t>(v);
  }
}
}  // namespace

void unary(UnaryOp op, const Array& x, const Array& y, double p0, double p1) {
  dispatch_floating(x.dtype(), "reference unary", [&]<class T>() {
    for_each_index<2>(x.shape(), {&x, &y}, [&](auto off) {
      ptr<T>(y)[off[1]] = convert<T>(formulas::unary(op, widened(ptr<T>(x)[off[0]]), p0, p1));
    });
  });
}

void binary(BinaryOp op, const Array& a, const Array& b, const Array& out) {
  RENSA_CHECK(!is_floating_only(op) || is_floating(a.dtype()), DtypeError, "reference binary: ", op_name(op),
              " expects a floating dtype, got ", a.dtype());
  dispatch(a.dtype(), [&]<class T>() {
    dispatch(out.dtype(), [&]<class O>() {
      for_each_index<3>(out.shape(), {&a, &b, &out}, [&](auto off) {
        ptr<O>(out)[off[2]] = convert<O>(formulas::binary(op, widened(ptr<T>(a)[off[0]]), widened(ptr<T>(b)[off[1]])));
      });
    });
  });
}

void reduce(ReduceOp op, const Array& x, const Shape& axes, const Array& out) {
  // out has x's shape with reduced axes 1: broadcasting out's strides maps each x index to its slot.
  const Array o = out.broadcast_to(x.shape());
  std::vector<char> red(x.shape().size(), 0);
  for (int64_t a : axes) red[static_cast<std::size_t>(a)] = 1;
  int64_t rsize = 1;
  for (int64_t a : axes) rsize *= x.shape()[static_cast<std::size_t>(a)];
  const bool needs_elements = op != ReduceOp::sum && op != ReduceOp::prod;
  RENSA_CHECK(rsize > 0 || out.size() == 0 || !needs_elements, ValueError, "reduce: zero-size reduction of shape ",
              x.shape(), " has no identity");
  dispatch(x.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    // Integers accumulate exactly in int64 (double would round above 2^53).
    using A = std::conditional_t<is_floating(dtype_of<T>()), double, int64_t>;
    const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
    const int64_t osize = out.size();
    std::vector<A> acc(static_cast<std::size_t>(osize));
    std::vector<int64_t> best(static_cast<std::size_t>(osize), -1), count(static_cast<std::size_t>(osize), 0);
    const Array oc = Array::empty(out.shape(), Dtype::int64, Device::reference()).broadcast_to(x.shape());
    constexpr A lowest = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                              : std::numeric_limits<A>::lowest();
    constexpr A highest = std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                               : std::numeric_limits<A>::max();
    for (auto& v : acc) {
      v = op == ReduceOp::prod ? A(1) : op == ReduceOp::max ? lowest : op == ReduceOp::min ? highest : A(0);
    }
    for_each_index<2>(x.shape(), {&x, &oc}, [&](auto off) {
      const auto slot = static_cast<std::size_t>(off[1]);
      const A v = static_cast<A>(static_cast<C>(ptr<T>(x)[off[0]]));
      const int64_t pos = count[slot]++;
      switch (op) {
        case ReduceOp::sum: acc[slot] += v; break;
        case ReduceOp::prod: acc[slot] *= v; break;
        case ReduceOp::max: acc[slot] = (std::isnan(acc[slot]) || v <= acc[slot]) ? acc[slot] : v; break;
        case ReduceOp::min: acc[slot] = (std::isnan(acc[slot]) || v >= acc[slot]) ? acc[slot] : v; break;
        case ReduceOp::argmax:
        case ReduceOp::argmin: {
          const bool better = best[slot] < 0 || (!std::isnan(acc[slot]) &&
                                                 (std::isnan(v) || (op == ReduceOp::argmax ? v > acc[slot] : v < acc[slot])));
          if (better) {
            acc[slot] = v;
            best[slot] = pos;
          }
          break;
        }
      }
    });
    dispatch(out.dtype(), [&]<class O>() {
      // Slot s is the s-th element of out in row-major order.
      std::vector<int64_t> idx(out.shape().size(), 0);
      for (int64_t s = 0; s < osize; ++s) {
        int64_t off = 0;
        for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * out.strides()[d];
        ptr<O>(out)[off] = arg ? convert<O>(best[static_cast<std::size_t>(s)])
                               : convert<O>(acc[static_cast<std::size_t>(s)]);
        for (std::size_t d = idx.size(); d-- > 0;) {
          if (++idx[d] < out.shape()[d]) break;
          idx[d] = 0;
        }
      }
    });
  });
}

void matmul(const Array& a, const Array& b, const Array& out) {
  const std::size_t nd = out.shape().size();
  const int64_t m = out.shape()[nd - 2], n = out.shape()[nd - 1], k = a.shape().back();
  Shape batch_shape(std::span<const int64_t>(out.shape().data(), nd - 2));
  // 16-bit operands with a float32 out: widened exactly, then as float32.
  const Array a2 = a.dtype() == out.dtype() ? a : a.astype(out.dtype());
  const Array b2 = b.dtype() == out.dtype() ? b : b.astype(out.dtype());
  dispatch(out.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    using A = std::conditional_t<is_floating(dtype_of<T>()), double, int64_t>;
    for (int64_t bi = 0; bi < batch_shape.numel(); ++bi) {
      int64_t ao = 0, bo = 0, oo = 0, rem = bi;
      for (std::size_t d = nd - 2; d-- > 0;) {
        const int64_t i = rem % out.shape()[d];
        rem /= out.shape()[d];
        ao += i * a2.strides()[d];
        bo += i * b2.strides()[d];
        oo += i * out.strides()[d];
      }
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          A acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            acc += static_cast<A>(C(ptr<T>(a2)[ao + i * a2.strides()[nd - 2] + p * a2.strides()[nd - 1]])) *
                   static_cast<A>(C(ptr<T>(b2)[bo + p * b2.strides()[nd - 2] + j * b2.strides()[nd - 1]]));
          }
          ptr<T>(out)[oo + i * out.strides()[nd - 2] + j * out.strides()[nd - 1]] = convert<T>(acc);
        }
      }
    }
  });
}

void random(RandomDist dist, const Array& out, uint64_t seed, uint64_t offset, double p0, double p1) {
  dispatch_floating(out.dtype(), "random", [&]<class T>() {
    int64_t i = 0;
    const double scale = dist == RandomDist::uniform ? p1 - p0 : p1;
    for_each_index<1>(out.shape(), {&out}, [&](auto off) {
      ptr<T>(out)[off[0]] = T(p0 + scale * detail::random_at(dist, offset + static_cast<uint64_t>(i++), seed));
    });
  });
}

void where(const Array& cond, const Array& a, const Array& b, const Array& out) {
  dispatch(out.dtype(), [&]<class T>() {
    for_each_index<4>(out.shape(), {&cond, &a, &b, &out}, [&](auto off) {
      ptr<T>(out)[off[3]] = ptr<bool>(cond)[off[0]] ? ptr<T>(a)[off[1]] : ptr<T>(b)[off[2]];
    });
  });
}

namespace {
// Calls f(i, label) for each row i of the labels t (N,), checked against [0, classes); `op` names the
// function in errors.
template <class F>
void for_each_label(const Array& t, int64_t classes, const char* op, F&& f) {
  dispatch(t.dtype(), [&]<class I>() {
    if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
      for (int64_t i = 0; i < t.shape()[0]; ++i) {
        const int64_t label = ptr<I>(t)[i * t.strides()[0]];
        RENSA_CHECK(label >= 0 && label < classes, IndexError, op, ": label ", label, " at position ", i,
                    " is out of range [0, ", classes, ")");
        f(i, label);
      }
    } else {
      RENSA_THROW(DtypeError, op, ": labels must be int32 or int64, got ", t.dtype());
    }
  });
}
}  // namespace

void select_item(const Array& x, const Array& t, const Array& y) {
  dispatch(x.dtype(), [&]<class T>() {
    for_each_label(t, x.shape()[1], "select_item", [&](int64_t i, int64_t c) {
      ptr<T>(y)[i * y.strides()[0]] = ptr<T>(x)[i * x.strides()[0] + c * x.strides()[1]];
    });
  });
}

void scatter_item(const Array& gy, const Array& t, const Array& gx) {
  fill(gx, 0.0);
  dispatch(gx.dtype(), [&]<class T>() {
    // The function that calls this kernel is select_item's backward: errors name select_item.
    for_each_label(t, gx.shape()[1], "select_item", [&](int64_t i, int64_t c) {
      ptr<T>(gx)[i * gx.strides()[0] + c * gx.strides()[1]] = ptr<T>(gy)[i * gy.strides()[0]];
    });
  });
}
// Naive loops index any strides: no layout is cheaper than another.
MemoryFormat conv2d_memory_format(Dtype) { return MemoryFormat::contiguous; }

}  // namespace reference

std::unique_ptr<Backend> make_reference_backend() {
  auto b = std::make_unique<reference::ReferenceBackend>();
  RENSA_REGISTER_KERNELS(b->kernels(), reference);
  return b;
}

}  // namespace rensa::backends
