// CTC loss: the forward (alpha) recursion over the extended label sequence (blank, l1, blank, l2,
// ..., blank) in log space, made of differentiable functions (log_softmax, batched matmul,
// logsumexp, where), so its gradient is exact to every order.
#include <string_view>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

constexpr const char* kCtc = "connectionist_temporal_classification";

std::vector<int64_t> lengths(const char* name, const Array& a, int64_t batch, int64_t fallback, int64_t min,
                             int64_t max) {
  if (a.is_null()) return std::vector<int64_t>(static_cast<std::size_t>(batch), fallback);
  RENSA_CHECK(a.dtype() == Dtype::int32 || a.dtype() == Dtype::int64, DtypeError, kCtc, ": ", name,
              " must be int32 or int64, got ", a.dtype());
  RENSA_CHECK(a.shape() == Shape{batch}, ShapeError, kCtc, ": ", name, " ", a.shape(), " must be (", batch, ",)");
  auto v = a.astype(Dtype::int64).to_vector<int64_t>();
  for (int64_t e : v) {
    RENSA_CHECK(e >= min && e <= max, ValueError, kCtc, ": ", name, " ", e, " is outside [", min, ", ", max, "]");
  }
  return v;
}

Variable constant(const std::vector<double>& v, const Shape& shape, const Variable& like) {
  return Variable(Array::from_vector(v, shape).astype(like.dtype()).to(like.device()));
}

// v shifted right by k along axis 1, the vacated columns `fill`.
Variable shift_right(const Variable& v, int64_t k, const Variable& fill_cols) {
  const int64_t s = v.shape()[1];
  if (k >= s) return get_item(fill_cols, {Slice(), Slice{0, s}});
  return concat({get_item(fill_cols, {Slice(), Slice{0, k}}), get_item(v, {Slice(), Slice{0, s - k}})}, 1);
}

}  // namespace

Variable connectionist_temporal_classification(const std::vector<Variable>& x, const Array& t, int64_t blank_symbol,
                                               const Array& input_length, const Array& label_length,
                                               std::string_view reduce) {
  const bool mean_over_n = detail::parse_choice(kCtc, "reduce", reduce, {"mean", "no"}) == 0;
  RENSA_CHECK(!x.empty(), ValueError, kCtc, ": x is empty");
  for (const auto& xt : x) {
    detail::check_floating(kCtc, xt, "x[t]");
    detail::check_same_dtype_device(kCtc, {&x[0], &xt});
    RENSA_CHECK(xt.shape() == x[0].shape() && xt.ndim() == 2, ShapeError, kCtc, ": every x[t] must be (B, V) as x[0] ",
                x[0].shape(), ", got ", xt.shape());
  }
  const int64_t steps = static_cast<int64_t>(x.size()), batch = x[0].shape()[0], vocab = x[0].shape()[1];
  RENSA_CHECK(blank_symbol >= 0 && blank_symbol < vocab, ValueError, kCtc, ": blank_symbol ", blank_symbol,
              " is outside [0, ", vocab, ")");
  RENSA_CHECK(!t.is_null() && (t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64), DtypeError, kCtc,
              ": t must be int32 or int64");
  RENSA_CHECK(t.ndim() == 2 && t.shape()[0] == batch, ShapeError, kCtc, ": t ", t.shape(), " must be (", batch, ", L)");
  const int64_t max_label = t.shape()[1], states = 2 * max_label + 1;
  const auto labels = t.astype(Dtype::int64).to_vector<int64_t>();
  const auto in_len = lengths("input_length", input_length, batch, steps, 1, steps);
  const auto lab_len = lengths("label_length", label_length, batch, max_label, 0, max_label);
  constexpr double kImpossible = -1e10;

  // Constants over (B, S): the extended labels as one-hot (B, V, S), the start, skip and final masks.
  std::vector<double> onehot(static_cast<std::size_t>(batch * vocab * states), 0.0);
  std::vector<double> start(static_cast<std::size_t>(batch * states), kImpossible), skip(start), final_mask(start);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = 2 * lab_len[static_cast<std::size_t>(b)] + 1;
    for (int64_t s = 0; s < states; ++s) {
      int64_t label = blank_symbol;
      if (s % 2 == 1) {
        label = labels[static_cast<std::size_t>(b * max_label + s / 2)];
        if (s < used) {
          RENSA_CHECK(label >= 0 && label < vocab && label != blank_symbol, IndexError, kCtc, ": label ", label,
                      " of sequence ", b, " is out of range [0, ", vocab, ") or the blank");
        } else {
          label = blank_symbol;  // padding: never reached
        }
      }
      onehot[static_cast<std::size_t>((b * vocab + label) * states + s)] = 1.0;
      const std::size_t at = static_cast<std::size_t>(b * states + s);
      if (s < 2 && s < used) start[at] = 0.0;
      if (s >= 2 && s % 2 == 1 && s < used &&
          labels[static_cast<std::size_t>(b * max_label + s / 2)] != labels[static_cast<std::size_t>(b * max_label + s / 2 - 1)]) {
        skip[at] = 0.0;
      }
      if (s == used - 1 || (s == used - 2 && used >= 2)) final_mask[at] = 0.0;
    }
  }
  const Variable& like = x[0];
  const Variable emit_map = constant(onehot, {batch, vocab, states}, like);
  const Variable skip_ok = constant(skip, {batch, states}, like);
  const Variable fill = constant(std::vector<double>(static_cast<std::size_t>(batch * 2), kImpossible), {batch, 2}, like);
  auto emit = [&](int64_t step) {
    // log p(extended label s at this step), (B, S).
    const Variable logp = log_softmax(x[static_cast<std::size_t>(step)], 1);
    return reshape(matmul(expand_dims(logp, 1), emit_map), {batch, states});
  };
  Variable alpha = add(emit(0), constant(start, {batch, states}, like));
  for (int64_t step = 1; step < steps; ++step) {
    const Variable stay_or_advance =
        stack({alpha, shift_right(alpha, 1, fill), add(shift_right(alpha, 2, fill), skip_ok)}, 0);
    const Variable next = add(logsumexp(stay_or_advance, {0}), emit(step));
    // Sequences already past their input length keep their alpha.
    std::vector<uint8_t> running(static_cast<std::size_t>(batch * states));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < states; ++s) {
        running[static_cast<std::size_t>(b * states + s)] = step < in_len[static_cast<std::size_t>(b)] ? 1 : 0;
      }
    }
    const Array cond = Array::from_vector(running, {batch, states}).astype(Dtype::bool_).to(like.device());
    alpha = where(cond, next, alpha);
  }
  const Variable loss = neg(logsumexp(add(alpha, constant(final_mask, {batch, states}, like)), {1}));
  return mean_over_n ? mean(loss) : loss;
}

}  // namespace rensa::functions
