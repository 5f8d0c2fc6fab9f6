// forget: the forward result without a graph; the backward recomputes it with one and runs
// rensa::grad through it, as Chainer's Forget node does.
#include "rensa/functions/forget.h"

#include <utility>

#include "rensa/core/backward.h"
#include "rensa/core/config.h"
#include "rensa/core/function_node.h"

namespace rensa::functions {
namespace {

// Fresh leaves holding the inputs' arrays: what func sees, with no history behind it.
std::vector<Variable> leaves_of(const std::vector<Array>& arrays, bool requires_grad) {
  std::vector<Variable> out;
  for (const auto& a : arrays) out.emplace_back(a, requires_grad);
  return out;
}

std::vector<Variable> call_checked(const ForgetFunction& func, const std::vector<Variable>& xs) {
  std::vector<Variable> ys = func(xs);
  RENSA_CHECK(!ys.empty(), ValueError, "forget: func returned no output");
  for (std::size_t i = 0; i < ys.size(); ++i) {
    RENSA_CHECK(!ys[i].is_null(), ValueError, "forget: output ", i, " of func is null");
  }
  return ys;
}

}  // namespace

std::vector<Variable> forget(const ForgetFunction& func, const std::vector<Variable>& xs) {
  rensa::detail::ForwardEntry entry("forget", xs);
  RENSA_CHECK(static_cast<bool>(func), ValueError, "forget: func is empty");
  std::vector<Array> arrays;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(!xs[i].is_null(), ValueError, "forget: input ", i, " is null");
    arrays.push_back(xs[i].array());
  }
  std::vector<Variable> ys;
  {
    ConfigGuard off = no_backprop_mode();
    ys = call_checked(func, leaves_of(arrays, false));
  }
  std::vector<Array> outs;
  for (const auto& y : ys) outs.push_back(y.array());
  return record("forget", xs, std::move(outs), [func, arrays](const BackwardContext& ctx) {
    RENSA_CHECK(!config().enable_backprop, NotImplementedError,
                "forget: the backward of forget cannot be differentiated (double backprop), as in Chainer");
    const std::vector<Variable> inputs = leaves_of(arrays, true);
    std::vector<Variable> recomputed;
    {
      ConfigGuard on = force_backprop_mode();
      recomputed = call_checked(func, inputs);
    }
    RENSA_CHECK(recomputed.size() == ctx.num_outputs(), ValueError, "forget: func returned ", recomputed.size(),
                " outputs when recomputed, ", ctx.num_outputs(), " the first time");
    // Outputs without a graph behind them (constants) contribute no gradient.
    std::vector<Variable> outs, gys;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i) {
      if (recomputed[i].creator() == nullptr && !recomputed[i].requires_grad()) continue;
      outs.push_back(recomputed[i]);
      gys.push_back(ctx.grad_output(i));
    }
    std::vector<Variable> gxs(inputs.size());
    if (!outs.empty()) gxs = grad(outs, inputs, gys);
    for (std::size_t i = 0; i < gxs.size(); ++i) {
      if (!ctx.needs_grad(i)) gxs[i] = Variable();
    }
    return gxs;
  });
}

}  // namespace rensa::functions
