// Checks and state serialization shared by the recurrent links.
#include "src/links/recurrent.h"

#include "rensa/core/config.h"
#include "rensa/core/error.h"

namespace rensa::links::detail {

void check_sizes(const char* link, int64_t in_size, int64_t out_size) {
  RENSA_CHECK(out_size > 0, ValueError, link, ": out_size must be positive, got ", out_size);
  RENSA_CHECK(in_size >= -1, ValueError, link, ": in_size must be non-negative (or unset), got ", in_size);
  RENSA_CHECK(is_floating(get_dtype()), DtypeError, link, ": parameters need a floating dtype, the config's is ",
              get_dtype());
}

int64_t row_size(const Variable& x) {
  int64_t n = 1;
  for (std::size_t i = 1; i < x.shape().size(); ++i) n *= x.shape()[i];
  return n;
}

void check_input(const char* link, const Variable& x, int64_t in_size, const char* what) {
  RENSA_CHECK(!x.is_null(), ValueError, link, ": ", what, " is null");
  RENSA_CHECK(x.ndim() >= 1, ShapeError, link, ": ", what, " ", x.shape(), " must be (B, ...)");
  RENSA_CHECK(in_size < 0 || row_size(x) == in_size, ShapeError, link, ": ", what, " ", x.shape(),
              " does not fit in_size ", in_size, " (expected (B, ", in_size, "))");
}

void check_state(const char* link, const char* name, const Variable& state, int64_t rows, int64_t units,
                 const Variable& x) {
  RENSA_CHECK(state.ndim() == 2 && state.shape()[0] == rows && state.shape()[1] == units, ShapeError, link, ": ", name,
              " ", state.shape(), " does not fit x ", x.shape(), " (expected (", rows, ", ", units, "))");
}

void move_state(Variable& state, Device device) {
  if (!state.is_null() && state.device() != device) state = Variable(state.array().to(device));
}

void check_hidden_state(const char* link, int64_t units, const Variable& h) {
  RENSA_CHECK(!h.is_null() && h.ndim() == 2 && h.shape()[1] == units, ShapeError, link,
              "::set_state: h must be (B, ", units, "), got ", h.is_null() ? Shape() : h.shape());
}

void check_cell_state(const char* link, int64_t units, const Variable& c, const Variable& h) {
  RENSA_CHECK(!c.is_null() && !h.is_null(), ValueError, link, "::set_state: c and h must both be set");
  RENSA_CHECK(c.ndim() == 2 && c.shape() == h.shape() && c.shape()[1] == units, ShapeError, link, "::set_state: c ",
              c.shape(), " and h ", h.shape(), " must both be (B, ", units, ")");
}

void serialize_state(serializers::Serializer& s, const char* key, Variable& state, Device device) {
  if (!s.is_loading()) {
    if (!state.is_null()) {
      Array a = state.array();
      s.array(key, a);
    }
    return;
  }
  if (!s.contains(key)) {
    state = Variable();
    return;
  }
  Array a;
  s.array(key, a);
  state = Variable(a.device() == device ? a.copy() : a.to(device));
}

}  // namespace rensa::links::detail
