// The LSTM links: upward and lateral Linear children feeding functions::lstm (or its peephole and
// zoneout variants written out here), and the states they keep between calls.
#include "rensa/links/lstm.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/noise.h"
#include "rensa/functions/rnn.h"
#include "src/links/recurrent.h"

namespace rensa::links {
namespace F = functions;
namespace {

std::shared_ptr<const initializers::Initializer> zero() {
  return std::make_shared<initializers::Zero>();
}

// Gate k of pre-activations (B, 4 H) interleaved per unit, as (B, H).
Variable gate(const Variable& x, int64_t k) {
  const int64_t b = x.shape()[0], h = x.shape()[1] / 4;
  return F::get_item(F::reshape(x, {b, h, 4}), {Slice(), Slice(), k});
}

Variable zeros_like_state(int64_t rows, int64_t units, const Variable& x) {
  return Variable(Array::zeros({rows, units}, x.dtype(), x.device()));
}

}  // namespace

// ---- LSTMBase ------------------------------------------------------------------------------------

LSTMBase::LSTMBase(const char* link, int64_t in_size, int64_t out_size, LSTMOptions options)
    : link_(link),
      state_size_((detail::check_sizes(link, in_size, out_size), out_size)),
      options_(std::move(options)),
      upward_(detail::make_linear(in_size, 4 * out_size, {.initialW = zero()})),
      lateral_(out_size, 4 * out_size, {.nobias = true, .initialW = zero()}) {
  if (options_.seed) gen_.emplace(*options_.seed);
  add_link("upward", upward_);
  add_link("lateral", lateral_);
  if (in_size >= 0) initialize_params();
}

void LSTMBase::initialize_params() {
  Generator& gen = gen_ ? *gen_ : default_generator();
  const auto lecun = std::make_shared<initializers::LeCunNormal>();
  const auto& lateral_init = options_.lateral_init ? options_.lateral_init : lecun;
  const auto& upward_init = options_.upward_init ? options_.upward_init : lecun;
  const Array& lw = lateral_.W().array();
  const Array& uw = upward_.W().array();
  const int64_t h = state_size_;
  for (int64_t k = 0; k < 4; ++k) {
    (*lateral_init)(lw.slice(0, k * h, (k + 1) * h), gen);
    (*upward_init)(uw.slice(0, k * h, (k + 1) * h), gen);
  }
  // The bias, read as (H, 4): column k is gate k of every unit (a, i, f, o).
  const Array gates = upward_.b().array().reshape({h, 4});
  const auto bias_init = options_.bias_init ? options_.bias_init : zero();
  const auto forget_init =
      options_.forget_bias_init ? options_.forget_bias_init : std::make_shared<initializers::One>();
  for (int64_t k = 0; k < 4; ++k) (*(k == 2 ? forget_init : bias_init))(gates.index({Slice(), k}), gen);
}

void LSTMBase::prepare(const Variable& x) {
  detail::check_input(link_, x, in_size());
  if (!upward_.W().array().is_null()) return;
  const Dtype dtype = upward_.b().dtype();
  upward_.W().set_array(Array::zeros({4 * state_size_, detail::row_size(x)}, dtype, device_));
  initialize_params();
}

// ---- StatelessLSTM -------------------------------------------------------------------------------

StatelessLSTM::StatelessLSTM(int64_t in_size, int64_t out_size, LSTMOptions options)
    : LSTMBase("StatelessLSTM", in_size, out_size, std::move(options)) {
  RENSA_CHECK(in_size >= 0, ValueError, "StatelessLSTM: in_size must be non-negative, got ", in_size);
}

StatelessLSTM::StatelessLSTM(int64_t out_size, LSTMOptions options)
    : LSTMBase("StatelessLSTM", -1, out_size, std::move(options)) {}

std::pair<Variable, Variable> StatelessLSTM::forward(const Variable& c, const Variable& h, const Variable& x) {
  prepare(x);
  const int64_t batch = x.shape()[0];
  Variable lstm_in = upward()(x);
  if (!h.is_null()) {
    detail::check_state(link_, "h", h, batch, state_size(), x);
    lstm_in = F::add(lstm_in, lateral()(h));
  }
  Variable c_prev = c;
  if (c_prev.is_null()) {
    c_prev = zeros_like_state(batch, state_size(), x);
  } else {
    detail::check_state(link_, "c", c_prev, batch, state_size(), x);
  }
  return F::lstm(c_prev, lstm_in);
}

// ---- LSTM ----------------------------------------------------------------------------------------

LSTM::LSTM(int64_t in_size, int64_t out_size, LSTMOptions options)
    : WithCellState("LSTM", in_size, out_size, std::move(options)) {
  RENSA_CHECK(in_size >= 0, ValueError, "LSTM: in_size must be non-negative, got ", in_size);
}

LSTM::LSTM(int64_t out_size, LSTMOptions options) : WithCellState("LSTM", -1, out_size, std::move(options)) {}

Variable LSTM::forward(const Variable& x) {
  prepare(x);
  const int64_t batch = x.shape()[0];
  Variable lstm_in = upward()(x);
  Variable h_rest;
  if (!h_.is_null()) {
    const int64_t rows = h_.shape()[0];
    RENSA_CHECK(batch <= rows, ShapeError, "LSTM: x ", x.shape(), " has more rows than the state h ", h_.shape(),
                " (batches may only shrink; call reset_state() to start new sequences)");
    if (batch == 0) {
      h_rest = h_;
    } else if (batch < rows) {
      auto parts = F::split_axis(h_, std::vector<int64_t>{batch}, 0);
      h_rest = parts[1];
      lstm_in = F::add(lstm_in, lateral()(parts[0]));
    } else {
      lstm_in = F::add(lstm_in, lateral()(h_));
    }
  }
  if (c_.is_null()) c_ = zeros_like_state(batch, state_size(), x);
  RENSA_CHECK(c_.shape()[0] >= batch, ShapeError, "LSTM: x ", x.shape(), " has more rows than the state c ",
              c_.shape());
  auto [c, y] = F::lstm(c_, lstm_in);
  c_ = c;
  if (h_rest.is_null()) {
    h_ = y;
  } else if (batch == 0) {
    h_ = h_rest;
  } else {
    h_ = F::concat({y, h_rest}, 0);
  }
  return y;
}

// ---- StatefulPeepholeLSTM ------------------------------------------------------------------------

StatefulPeepholeLSTM::StatefulPeepholeLSTM(int64_t in_size, int64_t out_size, PeepholeLSTMOptions options)
    : state_size_((detail::check_sizes("StatefulPeepholeLSTM", in_size, out_size), out_size)),
      upward_(detail::make_linear(in_size, 4 * out_size, {.seed = detail::child_seed(options.seed, 0)})),
      lateral_(out_size, 4 * out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 1)}),
      peep_i_(out_size, out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 2)}),
      peep_f_(out_size, out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 3)}),
      peep_o_(out_size, out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 4)}) {
  add_link("upward", upward_);
  add_link("lateral", lateral_);
  add_link("peep_i", peep_i_);
  add_link("peep_f", peep_f_);
  add_link("peep_o", peep_o_);
}

StatefulPeepholeLSTM::StatefulPeepholeLSTM(int64_t out_size, PeepholeLSTMOptions options)
    : StatefulPeepholeLSTM(-1, out_size, options) {}

Variable StatefulPeepholeLSTM::forward(const Variable& x) {
  constexpr const char* link = "StatefulPeepholeLSTM";
  detail::check_input(link, x, upward_.in_size());
  const int64_t batch = x.shape()[0];
  Variable lstm_in = upward_(x);
  if (!h_.is_null()) {
    detail::check_state(link, "h", h_, batch, state_size_, x);
    lstm_in = F::add(lstm_in, lateral_(h_));
  }
  if (c_.is_null()) c_ = zeros_like_state(batch, state_size_, x);
  detail::check_state(link, "c", c_, batch, state_size_, x);
  const Variable a = F::tanh(gate(lstm_in, 0));
  const Variable i = F::sigmoid(F::add(gate(lstm_in, 1), peep_i_(c_)));
  const Variable f = F::sigmoid(F::add(gate(lstm_in, 2), peep_f_(c_)));
  c_ = F::add(F::mul(a, i), F::mul(f, c_));
  const Variable o = F::sigmoid(F::add(gate(lstm_in, 3), peep_o_(c_)));
  h_ = F::mul(o, F::tanh(c_));
  return h_;
}

// ---- StatefulZoneoutLSTM -------------------------------------------------------------------------

StatefulZoneoutLSTM::StatefulZoneoutLSTM(int64_t in_size, int64_t out_size, ZoneoutLSTMOptions options)
    : state_size_((detail::check_sizes("StatefulZoneoutLSTM", in_size, out_size), out_size)),
      c_ratio_(options.c_ratio),
      h_ratio_(options.h_ratio),
      mask_gen_(options.mask_generator),
      upward_(detail::make_linear(in_size, 4 * out_size, {.seed = detail::child_seed(options.seed, 0)})),
      lateral_(out_size, 4 * out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 1)}) {
  for (double r : {c_ratio_, h_ratio_}) {
    RENSA_CHECK(r >= 0.0 && r <= 1.0, ValueError, "StatefulZoneoutLSTM: c_ratio and h_ratio must be in [0, 1], got ",
                c_ratio_, " and ", h_ratio_);
  }
  add_link("upward", upward_);
  add_link("lateral", lateral_);
}

StatefulZoneoutLSTM::StatefulZoneoutLSTM(int64_t out_size, ZoneoutLSTMOptions options)
    : StatefulZoneoutLSTM(-1, out_size, options) {}

Variable StatefulZoneoutLSTM::forward(const Variable& x) {
  constexpr const char* link = "StatefulZoneoutLSTM";
  detail::check_input(link, x, upward_.in_size());
  const int64_t batch = x.shape()[0];
  Variable lstm_in = upward_(x);
  if (!h_.is_null()) {
    detail::check_state(link, "h", h_, batch, state_size_, x);
    lstm_in = F::add(lstm_in, lateral_(h_));
  } else {
    h_ = zeros_like_state(batch, state_size_, x);
  }
  if (c_.is_null()) c_ = zeros_like_state(batch, state_size_, x);
  detail::check_state(link, "c", c_, batch, state_size_, x);
  const Variable c_tmp =
      F::add(F::mul(F::tanh(gate(lstm_in, 0)), F::sigmoid(gate(lstm_in, 1))), F::mul(F::sigmoid(gate(lstm_in, 2)), c_));
  c_ = F::zoneout(c_, c_tmp, c_ratio_, mask_gen_);
  h_ = F::zoneout(h_, F::mul(F::sigmoid(gate(lstm_in, 3)), F::tanh(c_tmp)), h_ratio_, mask_gen_);
  return h_;
}

}  // namespace rensa::links
