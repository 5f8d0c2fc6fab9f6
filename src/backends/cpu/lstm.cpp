// cpu kernels: the fused LSTM cell (src/backends/common/lstm_cell.h), rows split among threads, in
// 8-lane AVX2 code where the processor has it (same operations, no FMA contraction: the results are
// those of the baseline build).
#include <algorithm>

#include "src/backends/common/lstm_cell.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace {

// Runs body(begin, end) over the B rows, in parallel when a step is large enough to pay for it.
template <class Body>
void over_rows(int64_t rows, int64_t units, Body&& body) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, 4 * units));
  if (rows <= grain) {
    body(0, rows);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < rows; b += grain) body(b, std::min(rows, b + grain));
}

#if defined(__x86_64__) && defined(__GNUC__)
template <class T>
__attribute__((target("avx2"))) void forward_rows_avx2(const host::LstmRows<T>& p, const LstmGates& g, int64_t b,
                                                      int64_t e) {
  host::lstm_forward_rows(p, g, b, e);
}
template <class T>
__attribute__((target("avx2"))) void backward_rows_avx2(const host::LstmGradRows<T>& p, const LstmGates& g,
                                                       int64_t b, int64_t e) {
  host::lstm_backward_rows(p, g, b, e);
}
bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#else
template <class T>
void forward_rows_avx2(const host::LstmRows<T>& p, const LstmGates& g, int64_t b, int64_t e) {
  host::lstm_forward_rows(p, g, b, e);
}
template <class T>
void backward_rows_avx2(const host::LstmGradRows<T>& p, const LstmGates& g, int64_t b, int64_t e) {
  host::lstm_backward_rows(p, g, b, e);
}
bool have_avx2() { return false; }
#endif

}  // namespace

void lstm_forward(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c,
                  const Array& h, const LstmGates& gates) {
  dispatch_floating(x.dtype(), "cpu lstm_forward", [&]<class T>() {
    const auto p = host::lstm_rows<T>(x, r, c_prev, act, c, h);
    const bool wide = have_avx2();
    over_rows(c.shape()[0], p.units, [&](int64_t b, int64_t e) {
      wide ? forward_rows_avx2(p, gates, b, e) : host::lstm_forward_rows(p, gates, b, e);
    });
  });
}

void lstm_backward(const Array& act, const Array& c_prev, const Array& c, const Array& gc, const Array& gh,
                   const Array& gx, const Array& gc_prev, const LstmGates& gates) {
  dispatch_floating(act.dtype(), "cpu lstm_backward", [&]<class T>() {
    const auto p = host::lstm_grad_rows<T>(act, c_prev, c, gc, gh, gx, gc_prev);
    const bool wide = have_avx2();
    over_rows(c.shape()[0], p.units, [&](int64_t b, int64_t e) {
      wide ? backward_rows_avx2(p, gates, b, e) : host::lstm_backward_rows(p, gates, b, e);
    });
  });
}

}  // namespace rensa::backends::cpu
