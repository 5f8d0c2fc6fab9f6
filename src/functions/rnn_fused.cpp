// The fused recurrent cells and layers (rnn_fused.h).
#include "src/functions/rnn_fused.h"

#include <functional>

#include "rensa/core/backward.h"
#include "rensa/core/config.h"
#include "rensa/core/function_node.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions::detail {
namespace {

using Grads = std::vector<Variable>;
// Gate pre-activations of x (B, 4H) at column offset `off` of each unit.
Variable gate(const Variable& x, const LstmGates& g, int64_t off) {
  const int64_t rows = x.shape()[0], units = x.shape()[1] / 4;
  if (g.unit_stride == 4) return get_item(reshape(x, {rows, units, 4}), {Slice(), Slice(), off});
  return get_item(x, {Slice(), Slice{off, off + units}});
}

// The cell from differentiable functions: (c, h).
std::pair<Variable, Variable> composite_cell(const Variable& c_prev, const Variable& x, const LstmGates& g) {
  const Variable a = tanh(gate(x, g, g.a)), i = sigmoid(gate(x, g, g.i));
  const Variable f = sigmoid(gate(x, g, g.f)), o = sigmoid(gate(x, g, g.o));
  const Variable c = add(mul(a, i), mul(f, c_prev));
  return {c, mul(o, tanh(c))};
}

LstmGates blocked(int64_t units) { return {1, 2 * units, 0, units, 3 * units}; }

std::vector<int64_t> offsets_of(const std::vector<int64_t>& batch_sizes) {
  std::vector<int64_t> off(batch_sizes.size() + 1, 0);
  for (std::size_t t = 0; t < batch_sizes.size(); ++t) off[t + 1] = off[t] + batch_sizes[t];
  return off;
}

// A layer's steps from differentiable functions: `cell(x_t, states)` maps step t's rows of p and
// the first B_t rows of every state to their new values (the first is the step's output); rows
// past a step's batch keep theirs. Returns the outputs of all steps concatenated, then the states.
using CompositeCell = std::function<std::vector<Variable>(const Variable&, const std::vector<Variable>&)>;
std::vector<Variable> composite_steps(const Variable& p, const std::vector<int64_t>& batch_sizes, bool reverse,
                                      std::vector<Variable> states, const CompositeCell& cell) {
  const int64_t steps = static_cast<int64_t>(batch_sizes.size()), units = states[0].shape()[1];
  const auto off = offsets_of(batch_sizes);
  std::vector<Variable> ys(batch_sizes.size());
  for (int64_t s = 0; s < steps; ++s) {
    const auto t = static_cast<std::size_t>(reverse ? steps - 1 - s : s);
    const int64_t rows = batch_sizes[t];
    if (rows == 0) {
      ys[t] = Variable(Array::zeros({0, units}, p.dtype(), p.device()));
      continue;
    }
    const bool split = rows < states[0].shape()[0];
    std::vector<Variable> use(states.size()), rest(states.size());
    for (std::size_t k = 0; k < states.size(); ++k) {
      if (!split) {
        use[k] = states[k];
        continue;
      }
      auto parts = split_axis(states[k], std::vector<int64_t>{rows}, 0);
      use[k] = parts[0];
      rest[k] = parts[1];
    }
    const std::vector<Variable> next = cell(get_item(p, {Slice{off[t], off[t + 1]}}), use);
    ys[t] = next[0];
    for (std::size_t k = 0; k < states.size(); ++k) states[k] = split ? concat({next[k], rest[k]}, 0) : next[k];
  }
  std::vector<Variable> out{concat(ys, 0)};
  out.insert(out.end(), states.begin(), states.end());
  return out;
}

// The LSTM layer from differentiable functions: {ys, h, c} of {p, w_h, h0, c0}.
std::vector<Variable> composite_layer(const std::vector<Variable>& in, const std::vector<int64_t>& batch_sizes,
                                      bool reverse) {
  const Variable& w_h = in[1];
  const LstmGates gates = blocked(in[2].shape()[1]);
  return composite_steps(in[0], batch_sizes, reverse, {in[2], in[3]},
                         [&](const Variable& x, const std::vector<Variable>& hc) {
                           auto [c2, h2] = composite_cell(hc[1], add(x, matmul(hc[0], w_h, false, true)), gates);
                           return std::vector<Variable>{h2, c2};
                         });
}

// The GRU layer from differentiable functions: {ys, h} of {p, w_h, b_h, h0}.
std::vector<Variable> composite_gru_layer(const std::vector<Variable>& in, const std::vector<int64_t>& batch_sizes,
                                          bool reverse) {
  const Variable &w_h = in[1], &b_h = in[2];
  const int64_t units = in[3].shape()[1];
  auto block = [units](const Variable& v, int64_t k) { return get_item(v, {Slice(), Slice{k * units, (k + 1) * units}}); };
  return composite_steps(in[0], batch_sizes, reverse, {in[3]}, [&](const Variable& x, const std::vector<Variable>& h) {
    const Variable r = linear(h[0], w_h, b_h);
    const Variable g = sigmoid(add(block(x, 0), block(r, 0))), z = sigmoid(add(block(x, 1), block(r, 1)));
    const Variable n = tanh(add(block(x, 2), mul(g, block(r, 2))));
    return std::vector<Variable>{add(mul(rsub(z, 1.0), n), mul(z, h[0]))};
  });
}

Array rows_of(const Array& a, int64_t begin, int64_t end) { return a.slice(0, begin, end); }

}  // namespace

std::pair<Variable, Variable> lstm_cell(const Variable& c_prev, const Variable& x, const LstmGates& gates) {
  constexpr const char* op = "lstm";
  rensa::detail::ForwardEntry entry(op, c_prev, x);
  const Array xa = x.array().contiguous(), ca = c_prev.array().contiguous();
  const Shape cell = ca.shape();
  Array act = Array::empty(xa.shape(), xa.dtype(), xa.device());
  Array c = Array::empty(cell, xa.dtype(), xa.device()), h = Array::empty(cell, xa.dtype(), xa.device());
  RENSA_KERNEL(x.device(), lstm_forward, op)(xa, Array(), ca, act, c, h, gates);
  auto outs = record(op, {c_prev, x}, {c, h}, [c_prev, x, ca, act, c, gates](const BackwardContext& ctx) {
    if (config().enable_backprop) {
      return recompute_grads(ctx, {c_prev, x}, [gates](const std::vector<Variable>& in) {
        auto [c2, h2] = composite_cell(in[0], in[1], gates);
        return std::vector<Variable>{c2, h2};
      });
    }
    Array gx = Array::empty(act.shape(), act.dtype(), act.device());
    Array gc_prev = Array::empty(c.shape(), c.dtype(), c.device());
    RENSA_KERNEL(act.device(), lstm_backward, op)(act, ca, c, ctx.grad_output(0).array().contiguous(),
                                                     ctx.grad_output(1).array().contiguous(), gx, gc_prev, gates);
    return Grads{Variable(gc_prev), Variable(gx)};
  });
  return {outs[0], outs[1]};
}

LstmLayer lstm_layer(const Variable& p, const std::vector<int64_t>& batch_sizes, const Variable& w_h,
                     const Variable& h0, const Variable& c0, bool reverse) {
  constexpr const char* op = "n_step_lstm";
  rensa::detail::ForwardEntry entry(op, p, w_h, h0, c0);
  const Device dev = p.device();
  const Dtype dt = p.dtype();
  const int64_t steps = static_cast<int64_t>(batch_sizes.size()), units = h0.shape()[1];
  const auto off = offsets_of(batch_sizes);
  const int64_t total = off.back();
  const LstmGates g = blocked(units);
  const Array pa = p.array().contiguous();
  const Array& wa = w_h.array();  // backward's lambda captures its own copy
  // The running state (rows past a step's batch keep theirs) and what backward needs per row.
  Array hs = h0.array().copy(), cs = c0.array().copy();
  Array ys = Array::empty({total, units}, dt, dev), cn = Array::empty({total, units}, dt, dev);
  Array hprev = Array::empty({total, units}, dt, dev), cprev = Array::empty({total, units}, dt, dev);
  Array act = Array::empty({total, 4 * units}, dt, dev), r = Array::empty({h0.shape()[0], 4 * units}, dt, dev);
  const Array w_t = wa.transpose();
  for (int64_t s = 0; s < steps; ++s) {
    const auto t = static_cast<std::size_t>(reverse ? steps - 1 - s : s);
    const int64_t b = batch_sizes[t], lo = off[t], hi = off[t + 1];
    if (b == 0) continue;
    const Array hp = rows_of(hprev, lo, hi), cp = rows_of(cprev, lo, hi), rr = rows_of(r, 0, b);
    hp.assign(rows_of(hs, 0, b));
    cp.assign(rows_of(cs, 0, b));
    RENSA_KERNEL(dev, matmul, op)(hp, w_t, rr);
    const Array yt = rows_of(ys, lo, hi), ct = rows_of(cn, lo, hi);
    RENSA_KERNEL(dev, lstm_forward, op)(rows_of(pa, lo, hi), rr, cp, rows_of(act, lo, hi), ct, yt, g);
    rows_of(hs, 0, b).assign(yt);
    rows_of(cs, 0, b).assign(ct);
  }
  auto backward = [p, w_h, h0, c0, batch_sizes, reverse, off, wa, act, cn, hprev, cprev,
                   g](const BackwardContext& ctx) -> Grads {
    if (config().enable_backprop) {
      return recompute_grads(ctx, {p, w_h, h0, c0}, [&batch_sizes, reverse](const std::vector<Variable>& in) {
        return composite_layer(in, batch_sizes, reverse);
      });
    }
    const int64_t n = static_cast<int64_t>(batch_sizes.size());
    const Array gy = ctx.grad_output(0).array().contiguous();
    Array gh = ctx.grad_output(1).array().copy(), gc = ctx.grad_output(2).array().copy();
    Array gz = Array::empty(act.shape(), act.dtype(), act.device());
    Array ght = Array::empty(gh.shape(), gh.dtype(), gh.device());
    const Device d = act.device();
    for (int64_t s = n; s-- > 0;) {
      const auto t = static_cast<std::size_t>(reverse ? n - 1 - s : s);
      const int64_t b = batch_sizes[t], lo = off[t], hi = off[t + 1];
      if (b == 0) continue;
      const Array ghb = rows_of(gh, 0, b), gcb = rows_of(gc, 0, b), gzt = rows_of(gz, lo, hi), tmp = rows_of(ght, 0, b);
      RENSA_KERNEL(d, binary, "n_step_lstm")(BinaryOp::add, ghb, rows_of(gy, lo, hi), tmp);
      RENSA_KERNEL(d, lstm_backward, "n_step_lstm")(rows_of(act, lo, hi), rows_of(cprev, lo, hi),
                                                       rows_of(cn, lo, hi), gcb, tmp, gzt, gcb, g);
      RENSA_KERNEL(d, matmul, "n_step_lstm")(gzt, wa, ghb);
    }
    Grads out(4);
    if (ctx.needs_grad(0)) out[0] = Variable(gz);
    if (ctx.needs_grad(1)) {
      Array gw = Array::zeros(wa.shape(), wa.dtype(), d);
      if (gz.shape()[0] > 0) RENSA_KERNEL(d, matmul, "n_step_lstm")(gz.transpose(), hprev, gw);
      out[1] = Variable(gw);
    }
    if (ctx.needs_grad(2)) out[2] = Variable(gh);
    if (ctx.needs_grad(3)) out[3] = Variable(gc);
    return out;
  };
  auto outs = record(op, {p, w_h, h0, c0}, {ys, hs, cs}, std::move(backward));
  return {outs[0], outs[1], outs[2]};
}

LstmLayer gru_layer(const Variable& p, const std::vector<int64_t>& batch_sizes, const Variable& w_h,
                    const Variable& b_h, const Variable& h0, bool reverse) {
  constexpr const char* op = "n_step_gru";
  rensa::detail::ForwardEntry entry(op, p, w_h, b_h, h0);
  const Device dev = p.device();
  const Dtype dt = p.dtype();
  const int64_t steps = static_cast<int64_t>(batch_sizes.size()), units = h0.shape()[1];
  const auto off = offsets_of(batch_sizes);
  const int64_t total = off.back();
  const Array pa = p.array().contiguous();
  const Array& wa = w_h.array();  // backward's lambda captures its own copy
  const Array& ba = b_h.array();
  Array hs = h0.array().copy();
  Array ys = Array::empty({total, units}, dt, dev), hprev = Array::empty({total, units}, dt, dev);
  Array act = Array::empty({total, 3 * units}, dt, dev), rs = Array::empty({total, 3 * units}, dt, dev);
  const Array w_t = wa.transpose();
  for (int64_t s = 0; s < steps; ++s) {
    const auto t = static_cast<std::size_t>(reverse ? steps - 1 - s : s);
    const int64_t b = batch_sizes[t], lo = off[t], hi = off[t + 1];
    if (b == 0) continue;
    const Array hp = rows_of(hprev, lo, hi), rr = rows_of(rs, lo, hi), yt = rows_of(ys, lo, hi);
    hp.assign(rows_of(hs, 0, b));
    RENSA_KERNEL(dev, matmul, op)(hp, w_t, rr);
    RENSA_KERNEL(dev, binary, op)(BinaryOp::add, rr, ba.broadcast_to(rr.shape()), rr);
    RENSA_KERNEL(dev, gru_forward, op)(rows_of(pa, lo, hi), rr, hp, rows_of(act, lo, hi), yt);
    rows_of(hs, 0, b).assign(yt);
  }
  auto backward = [p, w_h, b_h, h0, batch_sizes, reverse, off, wa, act, rs, hprev](const BackwardContext& ctx) -> Grads {
    if (config().enable_backprop) {
      return recompute_grads(ctx, {p, w_h, b_h, h0}, [&batch_sizes, reverse](const std::vector<Variable>& in) {
        return composite_gru_layer(in, batch_sizes, reverse);
      });
    }
    const int64_t n = static_cast<int64_t>(batch_sizes.size());
    const Array gy = ctx.grad_output(0).array().contiguous();
    Array gh = ctx.grad_output(1).array().copy();
    Array gx = Array::empty(act.shape(), act.dtype(), act.device()), gr = Array::empty(act.shape(), act.dtype(), act.device());
    Array ght = Array::empty(gh.shape(), gh.dtype(), gh.device()), back = Array::empty(gh.shape(), gh.dtype(), gh.device());
    const Device d = act.device();
    for (int64_t s = n; s-- > 0;) {
      const auto t = static_cast<std::size_t>(reverse ? n - 1 - s : s);
      const int64_t b = batch_sizes[t], lo = off[t], hi = off[t + 1];
      if (b == 0) continue;
      const Array ghb = rows_of(gh, 0, b), tmp = rows_of(ght, 0, b), grt = rows_of(gr, lo, hi), bk = rows_of(back, 0, b);
      RENSA_KERNEL(d, binary, "n_step_gru")(BinaryOp::add, ghb, rows_of(gy, lo, hi), tmp);
      RENSA_KERNEL(d, gru_backward, "n_step_gru")(rows_of(act, lo, hi), rows_of(rs, lo, hi), rows_of(hprev, lo, hi),
                                                     tmp, rows_of(gx, lo, hi), grt, ghb);
      RENSA_KERNEL(d, matmul, "n_step_gru")(grt, wa, bk);
      RENSA_KERNEL(d, binary, "n_step_gru")(BinaryOp::add, ghb, bk, ghb);
    }
    Grads out(4);
    if (ctx.needs_grad(0)) out[0] = Variable(gx);
    if (ctx.needs_grad(1)) {
      Array gw = Array::zeros(wa.shape(), wa.dtype(), d);
      if (gr.shape()[0] > 0) RENSA_KERNEL(d, matmul, "n_step_gru")(gr.transpose(), hprev, gw);
      out[1] = Variable(gw);
    }
    if (ctx.needs_grad(2)) out[2] = sum(Variable(gr), {0});
    if (ctx.needs_grad(3)) out[3] = Variable(gh);
    return out;
  };
  auto outs = record(op, {p, w_h, b_h, h0}, {ys, hs}, std::move(backward));
  return {outs[0], outs[1], Variable()};
}

}  // namespace rensa::functions::detail
