// Parameter: one trainable array as a link.
#include "rensa/links/parameter.h"

#include "rensa/core/error.h"

namespace rensa::links {

Parameter::Parameter(Array array) {
  RENSA_CHECK(!array.is_null(), ValueError, "Parameter: the array is null");
  W_ = add_param("W", std::move(array));
}

Variable Parameter::forward(const Variable& x) {
  RENSA_CHECK(x.is_null(), ValueError, "Parameter: forward takes no input, got x ", x.shape());
  return W_;
}

}  // namespace rensa::links
