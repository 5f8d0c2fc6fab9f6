// The tree LSTM links: the children's states combined into the gates of functions::tree_lstm.
#include "rensa/links/tree_lstm.h"

#include <algorithm>
#include <memory>
#include <string>

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/rnn.h"
#include "src/links/recurrent.h"

namespace rensa::links {
namespace F = functions;
namespace {

// Checks the children's states and x, and returns x (zeros (B, in_size) when null) with null
// states replaced by zeros.
Variable prepare(const char* link, std::vector<Variable>& cs, std::vector<Variable>& hs, const Variable& x,
                 int64_t in_size, int64_t units) {
  RENSA_CHECK(cs.size() == hs.size(), ValueError, link, ": cs and hs must have one entry per child, got ", cs.size(),
              " and ", hs.size());
  Variable base = x;
  for (const auto* list : {&cs, &hs}) {
    for (const Variable& v : *list) {
      if (base.is_null() && !v.is_null()) base = v;
    }
  }
  RENSA_CHECK(!base.is_null(), ValueError, link, ": all inputs (cs, hs, x) are null");
  Variable xv = x;
  if (xv.is_null()) {
    RENSA_CHECK(in_size >= 0, ValueError, link, ": x is null and in_size is not known yet (give x once)");
    RENSA_CHECK(base.ndim() >= 1, ShapeError, link, ": a state ", base.shape(), " must be (B, ", units, ")");
    xv = Variable(Array::zeros({base.shape()[0], in_size}, base.dtype(), base.device()));
  }
  RENSA_CHECK(xv.ndim() == 2 && (in_size < 0 || xv.shape()[1] == in_size), ShapeError, link, ": x ", xv.shape(),
              " must be (B, ", in_size < 0 ? std::string("in_size") : std::to_string(in_size), ")");
  const int64_t batch = xv.shape()[0];
  for (auto* list : {&cs, &hs}) {
    for (std::size_t k = 0; k < list->size(); ++k) {
      Variable& v = (*list)[k];
      if (v.is_null()) {
        v = Variable(Array::zeros({batch, units}, xv.dtype(), xv.device()));
        continue;
      }
      const std::string name = std::string(list == &cs ? "cs[" : "hs[") + std::to_string(k) + "]";
      detail::check_state(link, name.c_str(), v, batch, units, xv);
    }
  }
  return xv;
}

}  // namespace

// ---- ChildSumTreeLSTM ----------------------------------------------------------------------------

ChildSumTreeLSTM::ChildSumTreeLSTM(int64_t in_size, int64_t out_size, TreeLSTMOptions options)
    : state_size_((detail::check_sizes("ChildSumTreeLSTM", in_size, out_size), out_size)),
      W_x_(detail::make_linear(in_size, 4 * out_size, {.seed = detail::child_seed(options.seed, 0)})),
      W_h_aio_(out_size, 3 * out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 1)}),
      W_h_f_(out_size, out_size, {.nobias = true, .seed = detail::child_seed(options.seed, 2)}) {
  add_link("W_x", W_x_);
  add_link("W_h_aio", W_h_aio_);
  add_link("W_h_f", W_h_f_);
}

std::pair<Variable, Variable> ChildSumTreeLSTM::forward(const std::vector<Variable>& cs_in,
                                                        const std::vector<Variable>& hs_in, const Variable& x_in) {
  std::vector<Variable> cs = cs_in, hs = hs_in;
  const Variable x = prepare("ChildSumTreeLSTM", cs, hs, x_in, in_size(), state_size_);
  const int64_t units = state_size_;
  const auto parts = F::split_axis(W_x_(x), std::vector<int64_t>{3 * units}, 1);
  const Variable& aio_x = parts[0];
  const Variable& f_x = parts[1];
  if (hs.empty()) {
    const auto aio = F::split_axis(aio_x, 3, 1);
    const Variable c = F::mul(F::sigmoid(aio[1]), F::tanh(aio[0]));
    return {c, F::mul(F::sigmoid(aio[2]), F::tanh(c))};
  }
  Variable h_sum = hs[0];
  for (std::size_t k = 1; k < hs.size(); ++k) h_sum = F::add(h_sum, hs[k]);
  const Variable aio_in = F::add(W_h_aio_(h_sum), aio_x);
  std::vector<Variable> f_in;
  for (const Variable& h : hs) f_in.push_back(F::add(W_h_f_(h), f_x));
  std::vector<Variable> inputs = cs;
  f_in.insert(f_in.begin(), aio_in);
  inputs.push_back(F::concat(f_in, 1));
  return F::tree_lstm(inputs);
}

// ---- NaryTreeLSTM --------------------------------------------------------------------------------

NaryTreeLSTM::NaryTreeLSTM(int64_t in_size, int64_t out_size, int64_t n_ary, TreeLSTMOptions options)
    : state_size_((detail::check_sizes("NaryTreeLSTM", in_size, out_size), out_size)),
      n_ary_(n_ary),
      W_x_(detail::make_linear(in_size, (3 + std::max<int64_t>(n_ary, 0)) * out_size,
                               {.seed = detail::child_seed(options.seed, 0)})) {
  RENSA_CHECK(n_ary >= 1, ValueError, "NaryTreeLSTM: n_ary must be at least 1, got ", n_ary);
  add_link("W_x", W_x_);
  for (int64_t k = 1; k <= n_ary; ++k) {
    W_h_.push_back(std::make_unique<Linear>(
        out_size, (3 + n_ary) * out_size,
        LinearOptions{.nobias = true, .seed = detail::child_seed(options.seed, static_cast<uint64_t>(k))}));
    add_link("W_h" + std::to_string(k), *W_h_.back());
  }
}

Linear& NaryTreeLSTM::W_h(int64_t k) {
  RENSA_CHECK(k >= 1 && k <= n_ary_, IndexError, "NaryTreeLSTM::W_h: k must be in [1, ", n_ary_, "], got ", k);
  return *W_h_[static_cast<std::size_t>(k - 1)];
}

std::pair<Variable, Variable> NaryTreeLSTM::forward(const std::vector<Variable>& cs_in,
                                                    const std::vector<Variable>& hs_in, const Variable& x_in) {
  RENSA_CHECK(static_cast<int64_t>(cs_in.size()) == n_ary_ && static_cast<int64_t>(hs_in.size()) == n_ary_, ValueError,
              "NaryTreeLSTM: cs and hs must have n_ary = ", n_ary_, " entries each, got ", cs_in.size(), " and ",
              hs_in.size());
  std::vector<Variable> cs = cs_in, hs = hs_in;
  const Variable x = prepare("NaryTreeLSTM", cs, hs, x_in, in_size(), state_size_);
  Variable gates = W_x_(x);
  for (std::size_t k = 0; k < hs_in.size(); ++k) {
    if (!hs_in[k].is_null()) gates = F::add(gates, (*W_h_[k])(hs[k]));
  }
  std::vector<Variable> inputs = cs;
  inputs.push_back(gates);
  return F::tree_lstm(inputs);
}

}  // namespace rensa::links
