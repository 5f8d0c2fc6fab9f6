// The MGU links: one forget gate shared by the state update and the candidate.
#include "rensa/links/mgu.h"

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "src/links/recurrent.h"

namespace rensa::links {
namespace F = functions;

MGUBase::MGUBase(const char* link, int64_t in_size, int64_t out_size, const MGUOptions& options)
    : link_(link),
      in_size_((detail::check_sizes(link, in_size, out_size), in_size)),
      state_size_(out_size),
      W_f_(in_size + out_size, out_size, {.seed = detail::child_seed(options.seed, 0)}),
      W_h_(in_size + out_size, out_size, {.seed = detail::child_seed(options.seed, 1)}) {
  RENSA_CHECK(in_size >= 0, ValueError, link, ": in_size must be non-negative, got ", in_size);
  add_link("W_f", W_f_);
  add_link("W_h", W_h_);
}

Variable MGUBase::step(const Variable& h, const Variable& x) {
  detail::check_input(link_, x, -1);
  RENSA_CHECK(x.ndim() == 2 && x.shape()[1] == in_size_, ShapeError, link_, ": x ", x.shape(), " must be (B, ",
              in_size_, ")");
  RENSA_CHECK(!h.is_null(), ValueError, link_, ": h is null (x ", x.shape(), ")");
  detail::check_state(link_, "h", h, x.shape()[0], state_size_, x);
  const Variable f = F::sigmoid(W_f_(F::concat({h, x}, 1)));
  const Variable h_bar = F::tanh(W_h_(F::concat({F::mul(f, h), x}, 1)));
  return F::add(F::mul(f, h_bar), F::mul(F::rsub(f, 1.0), h));
}

StatelessMGU::StatelessMGU(int64_t in_size, int64_t out_size, MGUOptions options)
    : MGUBase("StatelessMGU", in_size, out_size, options) {}

StatefulMGU::StatefulMGU(int64_t in_size, int64_t out_size, MGUOptions options)
    : WithHiddenState("StatefulMGU", in_size, out_size, options) {}

Variable StatefulMGU::forward(const Variable& x) {
  detail::check_input(link_, x, -1);
  Variable h = h_;
  if (h.is_null()) h = Variable(Array::zeros({x.shape()[0], state_size()}, x.dtype(), x.device()));
  h_ = step(h, x);
  return h_;
}

}  // namespace rensa::links
