// The GRU links: six Linear children combined as Chainer's GRU (h' = z h~ + (1 - z) h).
#include "rensa/links/gru.h"

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/basic_math.h"
#include "src/links/recurrent.h"

namespace rensa::links {
namespace F = functions;

GRUBase::GRUBase(const char* link, int64_t in_size, int64_t out_size, const GRUOptions& o)
    : link_(link),
      state_size_((detail::check_sizes(link, in_size, out_size), out_size)),
      W_r_(detail::make_linear(
          in_size, out_size, {.initialW = o.init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 0)})),
      U_r_(out_size, out_size,
           {.initialW = o.inner_init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 1)}),
      W_z_(detail::make_linear(
          in_size, out_size, {.initialW = o.init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 2)})),
      U_z_(out_size, out_size,
           {.initialW = o.inner_init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 3)}),
      W_(detail::make_linear(in_size, out_size,
                             {.initialW = o.init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 4)})),
      U_(out_size, out_size,
         {.initialW = o.inner_init, .initial_bias = o.bias_init, .seed = detail::child_seed(o.seed, 5)}) {
  add_link("W_r", W_r_);
  add_link("U_r", U_r_);
  add_link("W_z", W_z_);
  add_link("U_z", U_z_);
  add_link("W", W_);
  add_link("U", U_);
}

// ---- StatelessGRU --------------------------------------------------------------------------------

StatelessGRU::StatelessGRU(int64_t in_size, int64_t out_size, const GRUOptions& options)
    : GRUBase("StatelessGRU", in_size, out_size, options) {
  RENSA_CHECK(in_size >= 0, ValueError, "StatelessGRU: in_size must be non-negative, got ", in_size);
}

StatelessGRU::StatelessGRU(int64_t out_size, const GRUOptions& options)
    : GRUBase("StatelessGRU", -1, out_size, options) {}

Variable StatelessGRU::forward(const Variable& h, const Variable& x) {
  detail::check_input(link_, x, in_size());
  RENSA_CHECK(!h.is_null(), ValueError, link_, ": h is null (x ", x.shape(), ")");
  detail::check_state(link_, "h", h, x.shape()[0], state_size_, x);
  const Variable r = F::sigmoid(F::add(W_r()(x), U_r()(h)));
  const Variable z = F::sigmoid(F::add(W_z()(x), U_z()(h)));
  const Variable h_bar = F::tanh(F::add(W()(x), U()(F::mul(r, h))));
  return F::add(F::mul(z, h_bar), F::mul(F::rsub(z, 1.0), h));
}

// ---- StatefulGRU ---------------------------------------------------------------------------------

StatefulGRU::StatefulGRU(int64_t in_size, int64_t out_size, const GRUOptions& options)
    : WithHiddenState("StatefulGRU", in_size, out_size, options) {
  RENSA_CHECK(in_size >= 0, ValueError, "StatefulGRU: in_size must be non-negative, got ", in_size);
}

StatefulGRU::StatefulGRU(int64_t out_size, const GRUOptions& options)
    : WithHiddenState("StatefulGRU", -1, out_size, options) {}

Variable StatefulGRU::forward(const Variable& x) {
  detail::check_input(link_, x, in_size());
  Variable z = W_z()(x);
  Variable h_bar = W()(x);
  if (!h_.is_null()) {
    detail::check_state(link_, "h", h_, x.shape()[0], state_size_, x);
    const Variable r = F::sigmoid(F::add(W_r()(x), U_r()(h_)));
    z = F::add(z, U_z()(h_));
    h_bar = F::add(h_bar, U()(F::mul(r, h_)));
  }
  z = F::sigmoid(z);
  h_bar = F::tanh(h_bar);
  h_ = h_.is_null() ? F::mul(z, h_bar) : F::add(F::mul(z, h_bar), F::mul(F::rsub(z, 1.0), h_));
  return h_;
}

}  // namespace rensa::links
