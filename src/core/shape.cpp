#include "rensa/core/shape.h"

#include <sstream>

#include "rensa/core/error.h"

namespace rensa {

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '(';
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) os << ", ";
    os << s[i];
  }
  if (s.size() == 1) os << ',';
  return os << ')';
}

std::string to_string(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 0);
  int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  RENSA_CHECK(axis >= -ndim && axis < ndim, IndexError, op, ": axis ", axis,
              " is out of bounds for an array of dimension ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RENSA_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": shapes ", a, " and ", b,
                " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace rensa
