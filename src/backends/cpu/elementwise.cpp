// cpu kernels: fill, copy (with dtype conversion), unary and binary elementwise ops.
#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {

void fill(const Array& dst, double value) {
  dispatch(dst.dtype(), [&]<class T>() {
    const T v = convert<T>(value);
    for_each_run<1>({&dst}, [&](const Run<1>& r) {
      T* p = reinterpret_cast<T*>(r.ptr[0]);
      if (r.stride[0] == 1) {
        for (int64_t i = 0; i < r.n; ++i) p[i] = v;
      } else {
        for (int64_t i = 0; i < r.n; ++i) p[i * r.stride[0]] = v;
      }
    });
  });
}

void copy(const Array& src, const Array& dst) {
  dispatch(src.dtype(), [&]<class S>() {
    dispatch(dst.dtype(), [&]<class D>() {
      for_each_run<2>({&src, &dst}, [&](const Run<2>& r) {
        const S* s = reinterpret_cast<const S*>(r.ptr[0]);
        D* d = reinterpret_cast<D*>(r.ptr[1]);
        if (r.stride[0] == 1 && r.stride[1] == 1) {
          if constexpr (std::is_same_v<S, D>) {
            std::memcpy(d, s, static_cast<std::size_t>(r.n) * sizeof(S));
          } else {
            for (int64_t i = 0; i < r.n; ++i) d[i] = convert<D>(s[i]);
          }
        } else {
          for (int64_t i = 0; i < r.n; ++i) d[i * r.stride[1]] = convert<D>(s[i * r.stride[0]]);
        }
      });
    });
  });
}

void unary(UnaryOp op, const Array& x, const Array& y, double p0, double p1) {
  dispatch_floating(x.dtype(), "cpu unary", [&]<class T>() {
    using C = compute_t<T>;
    const C c0 = static_cast<C>(p0), c1 = static_cast<C>(p1);
    dispatch_unary(op, [&]<UnaryOp Op>() {
      for_each_run<2>({&x, &y}, [&](const Run<2>& r) {
        const T* a = reinterpret_cast<const T*>(r.ptr[0]);
        T* b = reinterpret_cast<T*>(r.ptr[1]);
        if (r.stride[0] == 1 && r.stride[1] == 1) {
          // convert<T>, not T(...): GCC 12 does not vectorize this loop for a 16-bit T when the
          // result is a functional cast (an object temporary under omp simd), but does with convert.
#pragma omp simd
          for (int64_t i = 0; i < r.n; ++i) b[i] = convert<T>(unary_fn<Op, C>(static_cast<C>(a[i]), c0, c1));
        } else {
          for (int64_t i = 0; i < r.n; ++i) {
            b[i * r.stride[1]] = convert<T>(unary_fn<Op, C>(static_cast<C>(a[i * r.stride[0]]), c0, c1));
          }
        }
      });
    });
  });
}

void binary(BinaryOp op, const Array& a, const Array& b, const Array& out) {
  RENSA_CHECK(!is_floating_only(op) || is_floating(a.dtype()), DtypeError, "cpu binary: ", op_name(op),
              " expects a floating dtype, got ", a.dtype());
  dispatch(a.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    auto run = [&]<class O, BinaryOp Op>() {
      for_each_run<3>({&a, &b, &out}, [&](const Run<3>& r) {
        const T* pa = reinterpret_cast<const T*>(r.ptr[0]);
        const T* pb = reinterpret_cast<const T*>(r.ptr[1]);
        O* po = reinterpret_cast<O*>(r.ptr[2]);
        const int64_t sa = r.stride[0], sb = r.stride[1], so = r.stride[2];
        if (sa == 1 && sb == 1 && so == 1) {
#pragma omp simd
          for (int64_t i = 0; i < r.n; ++i) po[i] = convert<O>(binary_fn<Op, C>(C(pa[i]), C(pb[i])));
        } else if (sa == 1 && sb == 0 && so == 1) {
          const C vb = C(pb[0]);
#pragma omp simd
          for (int64_t i = 0; i < r.n; ++i) po[i] = convert<O>(binary_fn<Op, C>(C(pa[i]), vb));
        } else if (sa == 0 && sb == 1 && so == 1) {
          const C va = C(pa[0]);
#pragma omp simd
          for (int64_t i = 0; i < r.n; ++i) po[i] = convert<O>(binary_fn<Op, C>(va, C(pb[i])));
        } else {
          for (int64_t i = 0; i < r.n; ++i) po[i * so] = convert<O>(binary_fn<Op, C>(C(pa[i * sa]), C(pb[i * sb])));
        }
      });
    };
    dispatch_binary(op, [&]<BinaryOp Op>() {
      if (out.dtype() == a.dtype()) {
        run.template operator()<T, Op>();
      } else {
        RENSA_CHECK(is_comparison(Op) && out.dtype() == Dtype::bool_, DtypeError, "cpu binary: output dtype ",
                    out.dtype(), " does not match input dtype ", a.dtype());
        if constexpr (is_comparison(Op)) run.template operator()<bool, Op>();
      }
    });
  });
}

}  // namespace rensa::backends::cpu
