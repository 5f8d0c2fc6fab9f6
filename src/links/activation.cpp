// Links with learned activation parameters: PReLU, Swish, Maxout.
#include "rensa/links/activation.h"

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/activation.h"

namespace rensa::links {
namespace F = rensa::functions;

PReLU::PReLU(const Shape& shape, double init) {
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "PReLU: parameters need a floating dtype, the config's is ", dtype);
  W_ = add_param("W", Array::full(shape, init, dtype, device_));
}

Variable PReLU::forward(const Variable& x) { return F::prelu(x, W_); }

Swish::Swish(std::optional<Shape> beta_shape, double beta_init) : beta_init_(beta_init), dtype_(get_dtype()) {
  RENSA_CHECK(is_floating(dtype_), DtypeError, "Swish: parameters need a floating dtype, the config's is ", dtype_);
  beta_ = add_param("beta", dtype_);
  if (beta_shape) beta_.set_array(Array::full(*beta_shape, beta_init_, dtype_, device_));
}

Variable Swish::forward(const Variable& x) {
  if (beta_.array().is_null()) {
    RENSA_CHECK(!x.is_null() && x.ndim() >= 2, ShapeError, "Swish: cannot infer beta's shape from x ",
                x.is_null() ? Shape() : x.shape());
    beta_.set_array(Array::full({x.shape()[1]}, beta_init_, dtype_, device_));
  }
  return F::swish(x, beta_);
}

Maxout::Maxout(int64_t in_size, int64_t out_size, int64_t pool_size, const LinearOptions& options)
    : pool_size_(pool_size) {
  RENSA_CHECK(out_size > 0 && pool_size > 0, ValueError, "Maxout: out_size and pool_size must be positive, got ",
              out_size, " and ", pool_size);
  RENSA_CHECK(in_size >= 0, ValueError, "Maxout: in_size must be non-negative, got ", in_size);
  linear_ = in_size > 0 ? std::make_shared<Linear>(in_size, out_size * pool_size, options)
                        : std::make_shared<Linear>(out_size * pool_size, options);
  add_link("linear", linear_);
}

Variable Maxout::forward(const Variable& x) { return F::maxout((*linear_)(x), pool_size_); }

}  // namespace rensa::links
