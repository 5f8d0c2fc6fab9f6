// bilinear as a composite: the outer products e1 e2^T of each row, flattened, times W flattened.
#include "rensa/functions/bilinear.h"

#include <algorithm>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "src/functions/common.h"

namespace rensa::functions {

Variable bilinear(const Variable& e1, const Variable& e2, const Variable& W, const Variable& V1, const Variable& V2,
                  const Variable& b) {
  const char* op = "bilinear";
  const bool linear_terms = !V1.is_null() || !V2.is_null() || !b.is_null();
  RENSA_CHECK(!linear_terms || (!V1.is_null() && !V2.is_null() && !b.is_null()), ValueError, op,
              ": V1, V2 and b must be given all together or not at all (e1 ", e1.shape(), ", e2 ", e2.shape(), ")");
  detail::check_floating(op, e1, "e1");
  if (linear_terms) {
    detail::check_same_dtype_device(op, {&e1, &e2, &W, &V1, &V2, &b});
  } else {
    detail::check_same_dtype_device(op, {&e1, &e2, &W});
  }
  RENSA_CHECK(e1.ndim() >= 2 && e2.ndim() >= 2 && e1.shape()[0] == e2.shape()[0], ShapeError, op, ": e1 ", e1.shape(),
              " and e2 ", e2.shape(), " must have 2 or more axes and the same first one");
  const int64_t N = e1.shape()[0];
  int64_t Jn = 1, Kn = 1;
  for (std::size_t i = 1; i < e1.shape().size(); ++i) Jn *= e1.shape()[i];
  for (std::size_t i = 1; i < e2.shape().size(); ++i) Kn *= e2.shape()[i];
  RENSA_CHECK(W.ndim() == 3 && W.shape()[0] == Jn && W.shape()[1] == Kn, ShapeError, op, ": W ", W.shape(),
              " must be (", Jn, ", ", Kn, ", L) for e1 ", e1.shape(), " and e2 ", e2.shape());
  const int64_t L = W.shape()[2];
  if (linear_terms) {
    RENSA_CHECK(V1.shape() == Shape({Jn, L}) && V2.shape() == Shape({Kn, L}) && b.shape() == Shape({L}), ShapeError, op,
                ": V1 ", V1.shape(), ", V2 ", V2.shape(), " and b ", b.shape(), " must be (", Jn, ", ", L, "), (", Kn,
                ", ", L, ") and (", L, ",) for W ", W.shape());
  }
  const Variable a = reshape(e1, {N, Jn}), c = reshape(e2, {N, Kn});
  const Variable outer = reshape(mul(reshape(a, {N, Jn, 1}), reshape(c, {N, 1, Kn})), {N, Jn * Kn});
  Variable y = matmul(outer, reshape(W, {Jn * Kn, L}));
  if (linear_terms) y = add(add(add(y, matmul(a, V1)), matmul(c, V2)), reshape(b, {1, L}));
  return y;
}

}  // namespace rensa::functions
