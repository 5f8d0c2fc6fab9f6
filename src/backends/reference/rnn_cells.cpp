// Reference kernels: the fused LSTM and GRU cells (the formulas of KernelTable's lstm_ and gru_
// slots), one plain loop per row and unit in double, each stored value rounded once.
#include <cmath>

#include "src/backends/reference/kernels.h"
#include "src/core/convert.h"

namespace rensa::backends::reference {
namespace {

using rensa::detail::convert;

double sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// Element i of a contiguous array, widened exactly to double (0 for a null array).
template <class T>
double at(const Array& a, int64_t i) {
  return a.is_null() ? 0.0 : static_cast<double>(static_cast<compute_t<T>>(a.data<T>()[i]));
}

template <class T>
void put(const Array& a, int64_t i, double v) {
  a.data<T>()[i] = convert<T>(v);
}

}  // namespace

void lstm_forward(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c, const Array& h,
                  const LstmGates& gates) {
  dispatch_floating(x.dtype(), "reference lstm_forward", [&]<class T>() {
    const int64_t B = c.shape()[0], H = c.shape()[1];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        // The pre-activation of gate column g: x + r.
        auto z = [&](int64_t g) {
          const int64_t col = b * 4 * H + j * gates.unit_stride + g;
          return at<T>(x, col) + at<T>(r, col);
        };
        const double a = std::tanh(z(gates.a)), i = sigmoid(z(gates.i)), f = sigmoid(z(gates.f)),
                     o = sigmoid(z(gates.o));
        const double cell = a * i + f * at<T>(c_prev, b * H + j);
        const int64_t row = b * 4 * H + j * gates.unit_stride;
        put<T>(act, row + gates.a, a);
        put<T>(act, row + gates.i, i);
        put<T>(act, row + gates.f, f);
        put<T>(act, row + gates.o, o);
        put<T>(c, b * H + j, cell);
        put<T>(h, b * H + j, o * std::tanh(cell));
      }
    }
  });
}

void lstm_backward(const Array& act, const Array& c_prev, const Array& c, const Array& gc, const Array& gh,
                   const Array& gx, const Array& gc_prev, const LstmGates& gates) {
  dispatch_floating(act.dtype(), "reference lstm_backward", [&]<class T>() {
    const int64_t B = c.shape()[0], H = c.shape()[1];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        const int64_t row = b * 4 * H + j * gates.unit_stride, k = b * H + j;
        const double a = at<T>(act, row + gates.a), i = at<T>(act, row + gates.i), f = at<T>(act, row + gates.f),
                     o = at<T>(act, row + gates.o);
        const double tc = std::tanh(at<T>(c, k)), dh = at<T>(gh, k);
        // c reaches the loss directly (gc) and through h = o tanh(c).
        const double dc = at<T>(gc, k) + dh * o * (1 - tc * tc);
        // d tanh(z) = 1 - tanh^2, d sigmoid(z) = sigmoid (1 - sigmoid).
        put<T>(gx, row + gates.a, dc * i * (1 - a * a));
        put<T>(gx, row + gates.i, dc * a * i * (1 - i));
        put<T>(gx, row + gates.f, dc * at<T>(c_prev, k) * f * (1 - f));
        put<T>(gx, row + gates.o, dh * tc * o * (1 - o));
        put<T>(gc_prev, k, dc * f);
      }
    }
  });
}

void gru_forward(const Array& x, const Array& r, const Array& h_prev, const Array& act, const Array& h) {
  dispatch_floating(x.dtype(), "reference gru_forward", [&]<class T>() {
    const int64_t B = h.shape()[0], H = h.shape()[1];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        // Blocks of H columns: the reset gate g, the update gate z and the candidate n.
        const int64_t cg = b * 3 * H + j, cz = cg + H, cn = cg + 2 * H;
        const double g = sigmoid(at<T>(x, cg) + at<T>(r, cg));
        const double z = sigmoid(at<T>(x, cz) + at<T>(r, cz));
        const double n = std::tanh(at<T>(x, cn) + g * at<T>(r, cn));
        put<T>(act, cg, g);
        put<T>(act, cz, z);
        put<T>(act, cn, n);
        put<T>(h, b * H + j, (1 - z) * n + z * at<T>(h_prev, b * H + j));
      }
    }
  });
}

void gru_backward(const Array& act, const Array& r, const Array& h_prev, const Array& gh, const Array& gx,
                  const Array& gr, const Array& gh_prev) {
  dispatch_floating(act.dtype(), "reference gru_backward", [&]<class T>() {
    const int64_t B = h_prev.shape()[0], H = h_prev.shape()[1];
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        const int64_t cg = b * 3 * H + j, cz = cg + H, cn = cg + 2 * H, k = b * H + j;
        const double g = at<T>(act, cg), z = at<T>(act, cz), n = at<T>(act, cn), dh = at<T>(gh, k);
        // h = (1 - z) n + z h_prev: the pre-activations of n and z, then of g through g r_n.
        const double dn = dh * (1 - z) * (1 - n * n);
        const double dz = dh * (at<T>(h_prev, k) - n) * z * (1 - z);
        const double dg = dn * at<T>(r, cn) * g * (1 - g);
        put<T>(gx, cg, dg);
        put<T>(gx, cz, dz);
        put<T>(gx, cn, dn);
        put<T>(gr, cg, dg);
        put<T>(gr, cz, dz);
        put<T>(gr, cn, dn * g);
        put<T>(gh_prev, k, dh * z);
      }
    }
  });
}

}  // namespace rensa::backends::reference
