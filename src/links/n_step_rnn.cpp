// The n-step links: parameters per layer and direction, and the sort / transpose / restore around
// the n_step functions (a private transposition: sequences in, time-major batches out, and back).
#include "rensa/links/n_step_rnn.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"

namespace rensa::links {
namespace F = functions;
namespace {

// Columns `order` of s along axis 1 (s is (S, B, H)).
Variable permute_batch(const Variable& s, const std::vector<std::size_t>& order) {
  bool identity = true;
  for (std::size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == i;
  if (identity) return s;
  const auto cols = F::split_axis(s, static_cast<int64_t>(order.size()), 1);
  std::vector<Variable> picked;
  for (std::size_t i : order) picked.push_back(cols[i]);
  return F::concat(picked, 1);
}

// Sequences sorted by decreasing length to time-major batches: out[t] stacks row t of every
// sequence longer than t.
std::vector<Variable> to_time_major(const std::vector<Variable>& sorted) {
  const int64_t steps = sorted.front().shape()[0];
  std::vector<std::vector<Variable>> rows(static_cast<std::size_t>(steps));
  for (const Variable& x : sorted) {
    if (x.shape()[0] == 0) continue;
    const auto parts = x.shape()[0] == 1 ? std::vector<Variable>{x} : F::split_axis(x, x.shape()[0], 0);
    for (std::size_t t = 0; t < parts.size(); ++t) rows[t].push_back(parts[t]);
  }
  std::vector<Variable> out;
  for (auto& r : rows) out.push_back(r.size() == 1 ? r[0] : F::concat(r, 0));
  return out;
}

// The inverse of to_time_major: sequence i gathers row i of every step it lasts.
std::vector<Variable> to_sequences(const std::vector<Variable>& ys, const std::vector<int64_t>& lengths, int64_t width,
                                   Dtype dtype, Device device) {
  std::vector<std::vector<Variable>> rows(lengths.size());
  for (const Variable& y : ys) {
    const auto parts = y.shape()[0] == 1 ? std::vector<Variable>{y} : F::split_axis(y, y.shape()[0], 0);
    for (std::size_t i = 0; i < parts.size(); ++i) rows[i].push_back(parts[i]);
  }
  std::vector<Variable> out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (rows[i].empty()) {
      out.emplace_back(Array::zeros({0, width}, dtype, device));
    } else {
      out.push_back(rows[i].size() == 1 ? rows[i][0] : F::concat(rows[i], 0));
    }
  }
  return out;
}

}  // namespace

NStepRNNBase::NStepRNNBase(const char* link, Cell cell, bool bi, int64_t n_layers, int64_t in_size, int64_t out_size,
                           double dropout, const NStepRNNOptions& options)
    : link_(link),
      cell_(cell),
      n_layers_(n_layers),
      in_size_(in_size),
      out_size_(out_size),
      direction_(bi ? 2 : 1),
      dropout_(dropout) {
  RENSA_CHECK(n_layers > 0, ValueError, link, ": n_layers must be positive, got ", n_layers);
  RENSA_CHECK(in_size >= 0 && out_size > 0, ValueError, link, ": sizes must be in_size >= 0 and out_size > 0, got ",
              in_size, " and ", out_size);
  RENSA_CHECK(dropout >= 0.0 && dropout < 1.0, ValueError, link, ": dropout must be in [0, 1), got ", dropout);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, link, ": parameters need a floating dtype, the config's is ", dtype);
  std::optional<Generator> own;
  if (options.seed) own.emplace(*options.seed);
  Generator& gen = own ? *own : default_generator();
  const auto initialW = options.initialW ? options.initialW : std::make_shared<const initializers::LeCunNormal>();
  const auto initial_bias = options.initial_bias ? options.initial_bias : std::make_shared<const initializers::Zero>();
  const int64_t per = cell == Cell::lstm ? 8 : cell == Cell::gru ? 6 : 2;
  for (int64_t layer = 0; layer < n_layers; ++layer) {
    for (int64_t d = 0; d < direction_; ++d) {
      auto child = std::make_shared<Link>();
      ws_.emplace_back();
      bs_.emplace_back();
      for (int64_t j = 0; j < per; ++j) {
        const int64_t w_in = j < per / 2 ? (layer == 0 ? in_size : out_size * direction_) : out_size;
        Array w = Array::empty({out_size, w_in}, dtype, device_);
        (*initialW)(w, gen);
        Array b = Array::empty({out_size}, dtype, device_);
        (*initial_bias)(b, gen);
        ws_.back().push_back(child->add_param(std::string("w").append(std::to_string(j)), std::move(w)));
        bs_.back().push_back(child->add_param(std::string("b").append(std::to_string(j)), std::move(b)));
      }
      append(std::move(child));
    }
  }
}

F::NStepResult NStepRNNBase::run(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
  RENSA_CHECK(!xs.empty(), ValueError, link_, ": xs holds no sequence");
  const Variable& first = ws_[0][0];
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(!xs[i].is_null(), ValueError, link_, ": xs[", i, "] is null");
    RENSA_CHECK(xs[i].ndim() == 2 && xs[i].shape()[1] == in_size_, ShapeError, link_, ": xs[", i, "] ", xs[i].shape(),
                " must be (L, ", in_size_, ")");
    RENSA_CHECK(xs[i].dtype() == first.dtype(), DtypeError, link_, ": xs[", i, "] is ", xs[i].dtype(), " with shape ",
                xs[i].shape(), ", the parameters ", first.dtype());
  }
  const int64_t batch = static_cast<int64_t>(xs.size());
  const Shape state_shape{n_layers_ * direction_, batch, out_size_};
  const bool lstm = cell_ == Cell::lstm;
  for (const auto& [name, s] : {std::pair<const char*, const Variable*>{"hx", &hx}, {"cx", &cx}}) {
    if (s->is_null() || (!lstm && s == &cx)) continue;
    RENSA_CHECK(s->shape() == state_shape, ShapeError, link_, ": ", name, " ", s->shape(), " must be ", state_shape,
                " for ", batch, " sequences");
    RENSA_CHECK(s->dtype() == first.dtype(), DtypeError, link_, ": ", name, " is ", s->dtype(), ", the parameters ",
                first.dtype());
  }

  // Sort by decreasing length; equal lengths keep their order.
  std::vector<std::size_t> order(xs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return xs[a].shape()[0] > xs[b].shape()[0]; });
  std::vector<Variable> sorted;
  std::vector<int64_t> lengths;
  for (std::size_t i : order) {
    sorted.push_back(xs[i]);
    lengths.push_back(xs[i].shape()[0]);
  }
  auto zeros = [&] { return Variable(Array::zeros(state_shape, first.dtype(), first.device())); };
  const Variable h0 = hx.is_null() ? zeros() : permute_batch(hx, order);
  const Variable c0 = !lstm ? Variable() : cx.is_null() ? zeros() : permute_batch(cx, order);

  F::NStepResult r;
  const int64_t width = out_size_ * direction_;
  if (lengths.front() == 0) {
    // No time steps at all: the states pass through.
    r.hy = h0;
    r.cy = c0;
  } else {
    const std::vector<Variable> txs = to_time_major(sorted);
    const bool bi = direction_ == 2;
    switch (cell_) {
      case Cell::lstm:
        r = bi ? F::n_step_bilstm(n_layers_, dropout_, h0, c0, ws_, bs_, txs)
               : F::n_step_lstm(n_layers_, dropout_, h0, c0, ws_, bs_, txs);
        break;
      case Cell::gru:
        r = bi ? F::n_step_bigru(n_layers_, dropout_, h0, ws_, bs_, txs)
               : F::n_step_gru(n_layers_, dropout_, h0, ws_, bs_, txs);
        break;
      case Cell::rnn_tanh:
      case Cell::rnn_relu: {
        const char* act = cell_ == Cell::rnn_tanh ? "tanh" : "relu";
        r = bi ? F::n_step_birnn(n_layers_, dropout_, h0, ws_, bs_, txs, act)
               : F::n_step_rnn(n_layers_, dropout_, h0, ws_, bs_, txs, act);
        break;
      }
    }
  }
  r.ys = to_sequences(r.ys, lengths, width, first.dtype(), first.device());

  // Back to the callers' order: sorted position i is sequence order[i].
  std::vector<std::size_t> inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) inverse[order[i]] = i;
  F::NStepResult out;
  out.hy = permute_batch(r.hy, inverse);
  if (lstm) out.cy = permute_batch(r.cy, inverse);
  for (std::size_t j = 0; j < xs.size(); ++j) out.ys.push_back(r.ys[inverse[j]]);
  return out;
}

NStepLSTM::NStepLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                     const NStepRNNOptions& options)
    : NStepRNNBase("NStepLSTM", Cell::lstm, false, n_layers, in_size, out_size, dropout, options) {}
NStepBiLSTM::NStepBiLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                         const NStepRNNOptions& options)
    : NStepRNNBase("NStepBiLSTM", Cell::lstm, true, n_layers, in_size, out_size, dropout, options) {}
NStepGRU::NStepGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepGRU", Cell::gru, false, n_layers, in_size, out_size, dropout, options) {}
NStepBiGRU::NStepBiGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                       const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepBiGRU", Cell::gru, true, n_layers, in_size, out_size, dropout, options) {}
NStepRNNTanh::NStepRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                           const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepRNNTanh", Cell::rnn_tanh, false, n_layers, in_size, out_size, dropout, options) {}
NStepRNNReLU::NStepRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                           const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepRNNReLU", Cell::rnn_relu, false, n_layers, in_size, out_size, dropout, options) {}
NStepBiRNNTanh::NStepBiRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                               const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepBiRNNTanh", Cell::rnn_tanh, true, n_layers, in_size, out_size, dropout, options) {}
NStepBiRNNReLU::NStepBiRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                               const NStepRNNOptions& options)
    : NStepHiddenOnlyBase("NStepBiRNNReLU", Cell::rnn_relu, true, n_layers, in_size, out_size, dropout, options) {}

}  // namespace rensa::links
