// WeightBiasLink: drawing W and b with their initializers and the link's generator, and the input
// checks of the W/b links.
#include "rensa/links/weight_bias_link.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"

namespace rensa::links::detail {

WeightBiasLink::WeightBiasLink(const char* name, WeightInit init,
                               std::shared_ptr<const initializers::Initializer> default_W)
    : name_(name), init_(std::move(init)), dtype_(get_dtype()) {
  RENSA_CHECK(is_floating(dtype_), DtypeError, name_, ": parameters need a floating dtype, the config's is ", dtype_);
  if (init_.seed) gen_.emplace(*init_.seed);
  if (!init_.initialW) init_.initialW = std::move(default_W);
  W_ = add_param("W", dtype_);
  if (!init_.nobias) b_ = add_param("b", dtype_);
}

void WeightBiasLink::initialize_W(const Shape& shape) {
  Array w = Array::empty(shape, dtype_, device_);
  (*init_.initialW)(w, generator());
  W_.set_array(std::move(w));
}

void WeightBiasLink::initialize_b(const Shape& shape) {
  if (init_.nobias) return;
  Array b = Array::empty(shape, dtype_, device_);
  if (init_.initial_bias) {
    (*init_.initial_bias)(b, generator());
  } else {
    b.fill(0.0);
  }
  b_.set_array(std::move(b));
}

void WeightBiasLink::check_input(const Variable& x, int64_t ndim, int64_t channels) const {
  RENSA_CHECK(!x.is_null(), ValueError, name_, ": x is null");
  RENSA_CHECK(x.ndim() == ndim && x.shape()[1] == channels, ShapeError, name_, ": x ", x.shape(), " does not fit W ",
              W_.shape(), " (expected ", ndim, " axes with ", channels, " channels on axis 1)");
}

void WeightBiasLink::check_lazy_input(const Variable& x, int64_t ndim, const char* what) const {
  RENSA_CHECK(!x.is_null() && x.ndim() == ndim, ShapeError, name_, ": cannot infer ", what, " from x ",
              x.is_null() ? Shape() : x.shape(), " (expected ", ndim, " axes: N, C and ", ndim - 2, " spatial)");
}

}  // namespace rensa::links::detail
