// embed_id: a row gather of W (src/functions/gather.h), whose gradient is a row scatter-add; ignored
// ids gather row 0 and are masked to zero, so their rows get no gradient.
#include "rensa/functions/embed_id.h"

#include <utility>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "src/functions/common.h"
#include "src/functions/gather.h"

namespace rensa::functions {

Variable embed_id(const Array& x, const Variable& W, std::optional<int64_t> ignore_label) {
  RENSA_CHECK(!x.is_null(), ValueError, "embed_id: x is null");
  RENSA_CHECK(!W.is_null(), ValueError, "embed_id: W is null (x ", x.shape(), ")");
  RENSA_CHECK(x.dtype() == Dtype::int32 || x.dtype() == Dtype::int64, DtypeError,
              "embed_id: ids x must be int32 or int64, got ", x.dtype(), " with shape ", x.shape());
  detail::check_floating("embed_id", W, "W");
  RENSA_CHECK(W.ndim() == 2, ShapeError, "embed_id: W must be (in_size, out_size), got ", W.shape(), " (x ",
              x.shape(), ")");
  RENSA_CHECK(x.device() == W.device(), DeviceError, "embed_id: x is on ", x.device(), ", W on ", W.device());
  const int64_t in_size = W.shape()[0];

  std::vector<int64_t> ids = detail::index_vector("embed_id", x, Device::cpu(), "x").to_vector<int64_t>();
  std::vector<uint8_t> keep(ids.size(), 1);
  bool any_ignored = false;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ignore_label && ids[i] == *ignore_label) {
      ids[i] = 0;  // any valid row: masked below
      keep[i] = 0;
      any_ignored = true;
      continue;
    }
    RENSA_CHECK(ids[i] >= 0 && ids[i] < in_size, IndexError, "embed_id: id ", ids[i], " at flat position ", i,
                " is out of range [0, ", in_size, ") (x ", x.shape(), ", W ", W.shape(), ")");
  }
  Shape y_shape = x.shape();
  y_shape.push_back(W.shape()[1]);
  Variable y = detail::take("embed_id", W, Array::from_vector(ids, W.device()), 0);
  if (any_ignored) {
    const auto n = static_cast<int64_t>(keep.size());
    const Array mask = Array::from_vector(std::vector<bool>(keep.begin(), keep.end()), Shape{n, 1}, W.device());
    y = where(mask, y, Variable(detail::scalar_like(0.0, W.array())));
  }
  return reshape(y, y_shape);
}

}  // namespace rensa::functions
