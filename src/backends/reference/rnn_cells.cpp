// Reference kernels: the fused LSTM and GRU cells, every row in order on one thread.
#include "src/backends/common/rnn_cells.h"
#include "src/backends/reference/kernels.h"

namespace rensa::backends::reference {

void lstm_forward(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c,
                  const Array& h, const LstmGates& gates) {
  dispatch_floating(x.dtype(), "reference lstm_forward", [&]<class T>() {
    host::lstm_forward_rows(host::lstm_rows<T>(x, r, c_prev, act, c, h), gates, 0, c.shape()[0]);
  });
}

void lstm_backward(const Array& act, const Array& c_prev, const Array& c, const Array& gc, const Array& gh,
                   const Array& gx, const Array& gc_prev, const LstmGates& gates) {
  dispatch_floating(act.dtype(), "reference lstm_backward", [&]<class T>() {
    host::lstm_backward_rows(host::lstm_grad_rows<T>(act, c_prev, c, gc, gh, gx, gc_prev), gates, 0, c.shape()[0]);
  });
}

void gru_forward(const Array& x, const Array& r, const Array& h_prev, const Array& act, const Array& h) {
  dispatch_floating(x.dtype(), "reference gru_forward", [&]<class T>() {
    host::gru_forward_rows(host::gru_rows<T>(x, r, h_prev, act, h), 0, h.shape()[0]);
  });
}

void gru_backward(const Array& act, const Array& r, const Array& h_prev, const Array& gh, const Array& gx,
                  const Array& gr, const Array& gh_prev) {
  dispatch_floating(act.dtype(), "reference gru_backward", [&]<class T>() {
    host::gru_backward_rows(host::gru_grad_rows<T>(act, r, h_prev, gh, gx, gr, gh_prev), 0, h_prev.shape()[0]);
  });
}

}  // namespace rensa::backends::reference
