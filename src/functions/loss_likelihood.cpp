// The variational autoencoder's losses (Chainer's vae.py): Gaussian KL divergence, Gaussian and
// Bernoulli negative log-likelihoods. Composites of differentiable functions.
#include <numbers>
#include <string_view>

#include "rensa/functions/activation.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// Floating inputs of one dtype, device and shape, each named as in the signature.
void check_same(const char* op, std::initializer_list<std::pair<const char*, const Variable*>> vs) {
  const auto& [first_name, first] = *vs.begin();
  for (const auto& [name, v] : vs) {
    detail::check_floating(op, *v, name);
    detail::check_same_dtype_device(op, {first, v});
    RENSA_CHECK(v->shape() == first->shape(), ShapeError, op, ": ", first_name, " ", first->shape(), " and ", name, " ",
                v->shape(), " must have the same shape");
  }
}

// Chainer's reduce: "sum", "mean" (over every element) or "no" (elementwise).
Variable reduced(const char* op, std::string_view reduce, const Variable& loss) {
  switch (detail::parse_choice(op, "reduce", reduce, {"sum", "mean", "no"})) {
    case 0:
      return sum(loss);
    case 1:
      return mean(loss);
    default:
      return loss;
  }
}

}  // namespace

Variable gaussian_kl_divergence(const Variable& mean, const Variable& ln_var, std::string_view reduce) {
  const char* op = "gaussian_kl_divergence";
  check_same(op, {{"mean", &mean}, {"ln_var", &ln_var}});
  return reduced(op, reduce, mul(add(sub(add(square(mean), exp(ln_var)), ln_var), -1.0), 0.5));
}

Variable gaussian_nll(const Variable& x, const Variable& mean, const Variable& ln_var, std::string_view reduce) {
  const char* op = "gaussian_nll";
  check_same(op, {{"x", &x}, {"mean", &mean}, {"ln_var", &ln_var}});
  const double log_2pi = std::log(2.0 * std::numbers::pi);
  return reduced(op, reduce, mul(add(add(ln_var, mul(square(sub(x, mean)), exp(neg(ln_var)))), log_2pi), 0.5));
}

Variable bernoulli_nll(const Variable& x, const Variable& y, std::string_view reduce) {
  const char* op = "bernoulli_nll";
  check_same(op, {{"x", &x}, {"y", &y}});
  return reduced(op, reduce, sub(softplus(y), mul(x, y)));
}

}  // namespace rensa::functions
