#include "src/functions/arg_checks.h"

#include <sstream>

#include "rensa/core/error.h"

namespace rensa::functions::detail {

void check_not_null(const char* op, const Variable& x, const char* what) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": ", what, " is null");
}

int64_t axis_of(const char* op, int64_t axis, int64_t ndim, const Shape& shape) {
  RENSA_CHECK(axis >= -ndim && axis < ndim, IndexError, op, ": axis ", axis, " is out of bounds for ", ndim,
              " dimensions (x of shape ", shape, ")");
  return axis < 0 ? axis + ndim : axis;
}

std::string shapes_text(std::span<const Variable> xs) {
  std::ostringstream os;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) os << (i + 1 == xs.size() ? " and " : ", ");
    os << xs[i].shape();
  }
  return os.str();
}

void check_operands(const char* op, std::span<const Variable> xs) {
  RENSA_CHECK(!xs.empty(), ValueError, op, ": needs at least one array, got an empty list");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(!xs[i].is_null(), ValueError, op, ": input ", i, " is null");
  }
  for (const auto& x : xs) {
    if (x.dtype() == xs[0].dtype()) continue;
    std::ostringstream os;
    for (std::size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << xs[i].dtype() << ' ' << xs[i].shape();
    RENSA_THROW(DtypeError, op, ": inputs have different dtypes: ", os.str());
  }
  for (const auto& x : xs) {
    RENSA_CHECK(x.device() == xs[0].device(), DeviceError, op, ": inputs are on different devices: ", xs[0].device(),
                " and ", x.device());
  }
}

}  // namespace rensa::functions::detail
