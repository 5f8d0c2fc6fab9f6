// cpu kernels: the fused LSTM and GRU cells (src/backends/common/rnn_cells.h), rows split among
// threads, in 8-lane AVX2 code where the processor has it (same operations, no FMA contraction: the
// results are those of the baseline build).
#include "src/backends/common/rnn_cells.h"

#include <algorithm>

#include "rensa/core/cpu_features.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace {

// The row loops, as always-inlined static members: a lambda's body would not be compiled for the
// AVX2 clone's target.
struct LstmForward {
  template <class... A>
  [[gnu::always_inline]] static void run(int64_t b, int64_t e, const A&... a) {
    host::lstm_forward_rows(a..., b, e);
  }
};
struct LstmBackward {
  template <class... A>
  [[gnu::always_inline]] static void run(int64_t b, int64_t e, const A&... a) {
    host::lstm_backward_rows(a..., b, e);
  }
};
struct GruForward {
  template <class... A>
  [[gnu::always_inline]] static void run(int64_t b, int64_t e, const A&... a) {
    host::gru_forward_rows(a..., b, e);
  }
};
struct GruBackward {
  template <class... A>
  [[gnu::always_inline]] static void run(int64_t b, int64_t e, const A&... a) {
    host::gru_backward_rows(a..., b, e);
  }
};

#if defined(__x86_64__) && defined(__GNUC__)
template <class Loop, class... A>
__attribute__((target("avx2"))) void run_avx2(int64_t b, int64_t e, const A&... a) {
  Loop::run(b, e, a...);
}
bool have_avx2() {
  static const bool yes = cpu_features().avx2;
  return yes;
}
#else
template <class Loop, class... A>
void run_avx2(int64_t b, int64_t e, const A&... a) {
  Loop::run(b, e, a...);
}
bool have_avx2() {
  return false;
}
#endif

// Runs Loop over `rows` rows of `width` elements each, split among threads when a step is large
// enough to pay for it, on the widest instruction set available.
template <class Loop, class... A>
void over_rows(int64_t rows, int64_t width, const A&... a) {
  const bool wide = have_avx2();
  auto body = [&](int64_t b, int64_t e) { wide ? run_avx2<Loop>(b, e, a...) : Loop::run(b, e, a...); };
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, width));
  if (rows <= grain) {
    body(0, rows);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < rows; b += grain) body(b, std::min(rows, b + grain));
}

}  // namespace

void lstm_forward(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c, const Array& h,
                  const LstmGates& gates) {
  dispatch_floating(x.dtype(), "cpu lstm_forward", [&]<class T>() {
    over_rows<LstmForward>(c.shape()[0], x.shape()[1], host::lstm_rows<T>(x, r, c_prev, act, c, h), gates);
  });
}

void lstm_backward(const Array& act, const Array& c_prev, const Array& c, const Array& gc, const Array& gh,
                   const Array& gx, const Array& gc_prev, const LstmGates& gates) {
  dispatch_floating(act.dtype(), "cpu lstm_backward", [&]<class T>() {
    over_rows<LstmBackward>(c.shape()[0], act.shape()[1], host::lstm_grad_rows<T>(act, c_prev, c, gc, gh, gx, gc_prev),
                            gates);
  });
}

void gru_forward(const Array& x, const Array& r, const Array& h_prev, const Array& act, const Array& h) {
  dispatch_floating(x.dtype(), "cpu gru_forward", [&]<class T>() {
    over_rows<GruForward>(h.shape()[0], x.shape()[1], host::gru_rows<T>(x, r, h_prev, act, h));
  });
}

void gru_backward(const Array& act, const Array& r, const Array& h_prev, const Array& gh, const Array& gx,
                  const Array& gr, const Array& gh_prev) {
  dispatch_floating(act.dtype(), "cpu gru_backward", [&]<class T>() {
    over_rows<GruBackward>(h_prev.shape()[0], act.shape()[1],
                           host::gru_grad_rows<T>(act, r, h_prev, gh, gx, gr, gh_prev));
  });
}

}  // namespace rensa::backends::cpu
