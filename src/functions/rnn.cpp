// Recurrent cells and the n_step networks, as composites: gates are views of the pre-activations,
// and every step is made of differentiable functions.
#include "rensa/functions/rnn.h"

#include <string>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/noise.h"
#include "src/functions/common.h"
#include "src/functions/rnn_fused.h"

namespace rensa::functions {
namespace {

// The k-th of `n` gates interleaved per unit along axis 1 (x[:, n j + k]), as (B, H, ...).
Variable interleaved_gate(const Variable& x, int64_t n, int64_t k) {
  Shape s{x.shape()[0], x.shape()[1] / n, n};
  for (std::size_t i = 2; i < x.shape().size(); ++i) s.push_back(x.shape()[i]);
  return get_item(reshape(x, s), {Slice(), Slice(), k});
}

// The cell state's shape for pre-activations x with `n` gates per unit: (B, H, ...).
Shape cell_shape(const Variable& x, int64_t n) {
  Shape s = x.shape();
  s[1] /= n;
  return s;
}

void check_gates(const char* op, const Variable& x, int64_t n, const char* name) {
  detail::check_floating(op, x, name);
  RENSA_CHECK(x.ndim() >= 2 && x.shape()[1] % n == 0, ShapeError, op, ": ", name, " ", x.shape(),
              " must be (B, ", n, " H, ...)");
}

void check_cell(const char* op, const Variable& c, const char* name, const Variable& x, const Shape& want,
                bool more_rows_ok) {
  detail::check_floating(op, c, name);
  detail::check_same_dtype_device(op, {&c, &x});
  Shape tail_c, tail_w;
  for (std::size_t i = 1; i < c.shape().size(); ++i) tail_c.push_back(c.shape()[i]);
  for (std::size_t i = 1; i < want.size(); ++i) tail_w.push_back(want[i]);
  const bool rows = more_rows_ok ? c.ndim() > 0 && c.shape()[0] >= want[0] : c.ndim() > 0 && c.shape()[0] == want[0];
  RENSA_CHECK(rows && tail_c == tail_w, ShapeError, op, ": ", name, " ", c.shape(), " does not fit x ", x.shape(),
              " (expected ", more_rows_ok ? "at least " : "", want, ")");
}

// ---- the n_step networks -----------------------------------------------------------------------

enum class Cell { lstm, gru, rnn_tanh, rnn_relu };

int64_t weights_per_layer(Cell cell) {
  return cell == Cell::lstm ? 8 : cell == Cell::gru ? 6 : 2;
}

// Gate k's pre-activation from the layer input x and previous h: W_k x + b_k + W_{k+n} h + b_{k+n}.
Variable preact(const Variable& x, const Variable& h, const std::vector<Variable>& w, const std::vector<Variable>& b,
                int64_t k, int64_t n) {
  return add(linear(x, w[static_cast<std::size_t>(k)], b[static_cast<std::size_t>(k)]),
             linear(h, w[static_cast<std::size_t>(k + n)], b[static_cast<std::size_t>(k + n)]));
}

// One step of `cell` for the B rows of x; returns (h', c').
std::pair<Variable, Variable> step(Cell cell, const Variable& x, const Variable& h, const Variable& c,
                                   const std::vector<Variable>& w, const std::vector<Variable>& b) {
  switch (cell) {
    case Cell::lstm: {
      const Variable i = sigmoid(preact(x, h, w, b, 0, 4)), f = sigmoid(preact(x, h, w, b, 1, 4));
      const Variable a = tanh(preact(x, h, w, b, 2, 4)), o = sigmoid(preact(x, h, w, b, 3, 4));
      const Variable c2 = add(mul(a, i), mul(f, c));
      return {mul(o, tanh(c2)), c2};
    }
    case Cell::gru: {
      const Variable r = sigmoid(preact(x, h, w, b, 0, 3)), z = sigmoid(preact(x, h, w, b, 1, 3));
      const Variable cand = tanh(add(linear(x, w[2], b[2]), mul(r, linear(h, w[5], b[5]))));
      return {add(mul(rsub(z, 1.0), cand), mul(z, h)), Variable()};
    }
    case Cell::rnn_tanh:
      return {tanh(preact(x, h, w, b, 0, 1)), Variable()};
    case Cell::rnn_relu:
      return {relu(preact(x, h, w, b, 0, 1)), Variable()};
  }
  return {};
}

// Runs one direction of one layer over xs (in the given order); returns the outputs per step and
// the final (h, c) with every row of the initial state (rows past a step's batch pass through).
struct Pass {
  std::vector<Variable> ys;
  Variable h, c;
};

Pass run(Cell cell, const std::vector<Variable>& xs, Variable h, Variable c, const std::vector<Variable>& w,
         const std::vector<Variable>& b, bool reverse) {
  Pass p;
  p.ys.resize(xs.size());
  const int64_t n = static_cast<int64_t>(xs.size());
  for (int64_t s = 0; s < n; ++s) {
    const std::size_t t = static_cast<std::size_t>(reverse ? n - 1 - s : s);
    const int64_t batch = xs[t].shape()[0];
    const bool split = h.shape()[0] > batch;
    Variable h_rest, c_rest, h_use = h, c_use = c;
    if (split) {
      auto hs = split_axis(h, std::vector<int64_t>{batch}, 0);
      h_use = hs[0];
      h_rest = hs[1];
      if (!c.is_null()) {
        auto cs = split_axis(c, std::vector<int64_t>{batch}, 0);
        c_use = cs[0];
        c_rest = cs[1];
      }
    }
    auto [h2, c2] = step(cell, xs[t], h_use, c_use, w, b);
    p.ys[t] = h2;
    h = split ? concat({h2, h_rest}, 0) : h2;
    if (!c.is_null()) c = split ? concat({c2, c_rest}, 0) : c2;
  }
  p.h = h;
  p.c = c;
  return p;
}

// The n_step LSTMs and GRUs on the fused layers: per layer and direction one matrix product for
// every step's input projection and one function node for the recurrence; ys split per step at the
// end.
NStepResult fused_layers(Cell cell, bool bi, int64_t n_layers, double dropout_ratio, const std::vector<Variable>& h0,
                         const std::vector<Variable>& c0, const std::vector<std::vector<Variable>>& ws,
                         const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  const int64_t dirs = bi ? 2 : 1;
  std::vector<int64_t> sizes, splits;
  int64_t rows = 0;
  for (const auto& x : xs) {
    if (rows > 0) splits.push_back(rows);
    sizes.push_back(x.shape()[0]);
    rows += x.shape()[0];
  }
  Variable x = xs.size() == 1 ? xs[0] : concat(xs, 0);
  std::vector<Variable> hys, cys;
  for (int64_t layer = 0; layer < n_layers; ++layer) {
    if (layer > 0 && dropout_ratio > 0.0) x = dropout(x, dropout_ratio);
    std::vector<Variable> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const auto idx = static_cast<std::size_t>(layer * dirs + d);
      const auto& w = ws[idx];
      const auto& b = bs[idx];
      detail::LstmLayer l;
      if (cell == Cell::lstm) {
        const Variable w_x = concat({w[0], w[1], w[2], w[3]}, 0), w_h = concat({w[4], w[5], w[6], w[7]}, 0);
        const Variable bias = add(concat({b[0], b[1], b[2], b[3]}, 0), concat({b[4], b[5], b[6], b[7]}, 0));
        l = detail::lstm_layer(linear(x, w_x, bias), sizes, w_h, h0[idx], c0[idx], d == 1);
      } else {
        const Variable w_x = concat({w[0], w[1], w[2]}, 0), b_x = concat({b[0], b[1], b[2]}, 0);
        const Variable w_h = concat({w[3], w[4], w[5]}, 0), b_h = concat({b[3], b[4], b[5]}, 0);
        l = detail::gru_layer(linear(x, w_x, b_x), sizes, w_h, b_h, h0[idx], d == 1);
      }
      outs.push_back(l.ys);
      hys.push_back(l.h);
      cys.push_back(l.c);
    }
    x = bi ? concat(outs, 1) : outs[0];
  }
  NStepResult r;
  r.hy = stack(hys, 0);
  if (cell == Cell::lstm) r.cy = stack(cys, 0);
  r.ys = splits.empty() ? std::vector<Variable>{x} : split_axis(x, splits, 0);
  return r;
}

NStepResult n_step(const char* op, Cell cell, bool bi, int64_t n_layers, double dropout_ratio, const Variable& hx,
                   const Variable& cx, const std::vector<std::vector<Variable>>& ws,
                   const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  const int64_t dirs = bi ? 2 : 1;
  RENSA_CHECK(n_layers > 0, ValueError, op, ": n_layers must be positive, got ", n_layers);
  RENSA_CHECK(!xs.empty(), ValueError, op, ": xs is empty");
  detail::check_floating(op, hx, "hx");
  RENSA_CHECK(hx.ndim() == 3 && hx.shape()[0] == n_layers * dirs, ShapeError, op, ": hx ", hx.shape(), " must be (",
              n_layers * dirs, ", B, H)");
  const int64_t batch0 = hx.shape()[1], units = hx.shape()[2];
  if (cell == Cell::lstm) {
    detail::check_same_dtype_device(op, {&hx, &cx});
    RENSA_CHECK(cx.shape() == hx.shape(), ShapeError, op, ": cx ", cx.shape(), " must have hx's shape ", hx.shape());
  }
  const int64_t per = weights_per_layer(cell);
  RENSA_CHECK(static_cast<int64_t>(ws.size()) == n_layers * dirs && static_cast<int64_t>(bs.size()) == n_layers * dirs,
              ValueError, op, ": need ", n_layers * dirs, " weight and bias lists, got ", ws.size(), " and ", bs.size());
  int64_t prev = batch0;
  for (std::size_t t = 0; t < xs.size(); ++t) {
    detail::check_floating(op, xs[t], "xs[t]");
    detail::check_same_dtype_device(op, {&hx, &xs[t]});
    RENSA_CHECK(xs[t].ndim() == 2 && xs[t].shape()[0] <= prev, ShapeError, op, ": xs[", t, "] ", xs[t].shape(),
                " must be (B_t, I) with B_t at most ", prev, " (batch sizes may not grow over time)");
    RENSA_CHECK(xs[t].shape()[1] == xs[0].shape()[1], ShapeError, op, ": xs[", t, "] ", xs[t].shape(),
                " and xs[0] ", xs[0].shape(), " differ in width");
    prev = xs[t].shape()[0];
  }
  for (int64_t l = 0; l < n_layers * dirs; ++l) {
    const auto& w = ws[static_cast<std::size_t>(l)];
    const auto& b = bs[static_cast<std::size_t>(l)];
    RENSA_CHECK(static_cast<int64_t>(w.size()) == per && static_cast<int64_t>(b.size()) == per, ValueError, op,
                ": layer ", l, " needs ", per, " weights and ", per, " biases, got ", w.size(), " and ", b.size());
    const int64_t in = l < dirs ? xs[0].shape()[1] : units * dirs;
    for (int64_t k = 0; k < per; ++k) {
      const Variable& wk = w[static_cast<std::size_t>(k)];
      const Variable& bk = b[static_cast<std::size_t>(k)];
      detail::check_same_dtype_device(op, {&hx, &wk});
      detail::check_same_dtype_device(op, {&hx, &bk});
      const Shape want{units, k < per / 2 ? in : units};
      RENSA_CHECK(wk.shape() == want, ShapeError, op, ": ws[", l, "][", k, "] ", wk.shape(), " must be ", want);
      RENSA_CHECK(bk.shape() == Shape{units}, ShapeError, op, ": bs[", l, "][", k, "] ", bk.shape(), " must be (",
                  units, ",)");
    }
  }
  std::vector<Variable> layer_in = xs, hys, cys;
  // The initial states per layer and direction, (B, H) each.
  auto unstack = [&](const Variable& s) {
    std::vector<Variable> out;
    for (const auto& part : split_axis(s, s.shape()[0], 0)) out.push_back(reshape(part, {batch0, units}));
    return out;
  };
  const auto h0 = unstack(hx);
  const std::vector<Variable> c0 = cell == Cell::lstm ? unstack(cx) : std::vector<Variable>(h0.size());
  if (cell == Cell::lstm || cell == Cell::gru) return fused_layers(cell, bi, n_layers, dropout_ratio, h0, c0, ws, bs, xs);
  for (int64_t layer = 0; layer < n_layers; ++layer) {
    if (layer > 0 && dropout_ratio > 0.0) {
      for (auto& x : layer_in) x = dropout(x, dropout_ratio);
    }
    std::vector<Pass> passes;
    for (int64_t d = 0; d < dirs; ++d) {
      const std::size_t idx = static_cast<std::size_t>(layer * dirs + d);
      passes.push_back(run(cell, layer_in, h0[idx], c0[idx], ws[idx], bs[idx], d == 1));
      hys.push_back(passes.back().h);
      cys.push_back(passes.back().c);
    }
    if (bi) {
      for (std::size_t t = 0; t < layer_in.size(); ++t) layer_in[t] = concat({passes[0].ys[t], passes[1].ys[t]}, 1);
    } else {
      layer_in = passes[0].ys;
    }
  }
  NStepResult r;
  r.hy = stack(hys, 0);
  if (cell == Cell::lstm) r.cy = stack(cys, 0);
  r.ys = layer_in;
  return r;
}

Cell rnn_cell(const char* op, std::string_view activation) {
  return detail::parse_choice(op, "activation", activation, {"tanh", "relu"}) == 0 ? Cell::rnn_tanh : Cell::rnn_relu;
}

}  // namespace

std::pair<Variable, Variable> lstm(const Variable& c_prev, const Variable& x) {
  constexpr const char* op = "lstm";
  check_gates(op, x, 4, "x");
  const Shape cs = cell_shape(x, 4);
  check_cell(op, c_prev, "c_prev", x, cs, true);
  const int64_t batch = x.shape()[0];
  Variable c_use = c_prev, c_rest;
  if (c_prev.shape()[0] > batch) {
    auto parts = split_axis(c_prev, std::vector<int64_t>{batch}, 0);
    c_use = parts[0];
    c_rest = parts[1];
  }
  if (x.ndim() != 2) {  // (B, 4H, ...): the composite form
    const Variable a = tanh(interleaved_gate(x, 4, 0)), i = sigmoid(interleaved_gate(x, 4, 1));
    const Variable f = sigmoid(interleaved_gate(x, 4, 2)), o = sigmoid(interleaved_gate(x, 4, 3));
    const Variable c = add(mul(a, i), mul(f, c_use));
    const Variable h = mul(o, tanh(c));
    return {c_rest.is_null() ? c : concat({c, c_rest}, 0), h};
  }
  auto [c, h] = detail::lstm_cell(c_use, x, LstmGates{});
  return {c_rest.is_null() ? c : concat({c, c_rest}, 0), h};
}

std::pair<Variable, Variable> slstm(const Variable& c_prev1, const Variable& c_prev2, const Variable& x1,
                                    const Variable& x2) {
  constexpr const char* op = "slstm";
  check_gates(op, x1, 4, "x1");
  check_gates(op, x2, 4, "x2");
  detail::check_same_dtype_device(op, {&x1, &x2});
  RENSA_CHECK(x1.shape() == x2.shape(), ShapeError, op, ": x1 ", x1.shape(), " and x2 ", x2.shape(), " differ");
  const Shape cs = cell_shape(x1, 4);
  check_cell(op, c_prev1, "c_prev1", x1, cs, false);
  check_cell(op, c_prev2, "c_prev2", x1, cs, false);
  auto gate = [](const Variable& x, int64_t k) { return interleaved_gate(x, 4, k); };
  const Variable in1 = mul(tanh(gate(x1, 0)), sigmoid(gate(x1, 1)));
  const Variable in2 = mul(tanh(gate(x2, 0)), sigmoid(gate(x2, 1)));
  const Variable c = add(add(in1, in2), add(mul(sigmoid(gate(x1, 2)), c_prev1), mul(sigmoid(gate(x2, 2)), c_prev2)));
  return {c, mul(sigmoid(add(gate(x1, 3), gate(x2, 3))), tanh(c))};
}

std::pair<Variable, Variable> tree_lstm(const std::vector<Variable>& inputs) {
  constexpr const char* op = "tree_lstm";
  RENSA_CHECK(inputs.size() >= 2, ValueError, op, ": needs at least one cell state and x, got ", inputs.size(),
              " inputs");
  const Variable& x = inputs.back();
  const int64_t n = static_cast<int64_t>(inputs.size()) - 1;
  check_gates(op, x, 3 + n, "x");
  const int64_t units = x.shape()[1] / (3 + n);
  const Shape cs = cell_shape(x, 3 + n);
  auto gate = [&](int64_t k) {
    return get_item(x, {Slice(), Slice{k * units, (k + 1) * units}});
  };
  Variable c = mul(tanh(gate(0)), sigmoid(gate(1)));
  for (int64_t k = 0; k < n; ++k) {
    const Variable& ck = inputs[static_cast<std::size_t>(k)];
    const std::string name = std::string("c").append(std::to_string(k + 1));
    check_cell(op, ck, name.c_str(), x, cs, false);
    c = add(c, mul(sigmoid(gate(3 + k)), ck));
  }
  return {c, mul(sigmoid(gate(2)), tanh(c))};
}

NStepResult n_step_lstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                        const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                        const std::vector<Variable>& xs) {
  return n_step("n_step_lstm", Cell::lstm, false, n_layers, dropout_ratio, hx, cx, ws, bs, xs);
}

NStepResult n_step_bilstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs) {
  return n_step("n_step_bilstm", Cell::lstm, true, n_layers, dropout_ratio, hx, cx, ws, bs, xs);
}

NStepResult n_step_gru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                       const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                       const std::vector<Variable>& xs) {
  return n_step("n_step_gru", Cell::gru, false, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs);
}

NStepResult n_step_bigru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                         const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                         const std::vector<Variable>& xs) {
  return n_step("n_step_bigru", Cell::gru, true, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs);
}

NStepResult n_step_rnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                       const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                       const std::vector<Variable>& xs, std::string_view activation) {
  const Cell cell = rnn_cell("n_step_rnn", activation);
  return n_step("n_step_rnn", cell, false, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs);
}

NStepResult n_step_birnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                         const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                         const std::vector<Variable>& xs, std::string_view activation) {
  const Cell cell = rnn_cell("n_step_birnn", activation);
  return n_step("n_step_birnn", cell, true, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs);
}

}  // namespace rensa::functions
