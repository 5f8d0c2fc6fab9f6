// EmbedID: a table W (in_size, out_size) whose rows functions::embed_id selects.
#include "rensa/links/embed_id.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/links/mixed_precision.h"

namespace rensa::links {

EmbedID::EmbedID(int64_t in_size, int64_t out_size, EmbedIDOptions options)
    : ignore_label_(options.ignore_label) {
  RENSA_CHECK(in_size >= 0 && out_size >= 0, ValueError, "EmbedID: sizes must be non-negative, got in_size ",
              in_size, " and out_size ", out_size);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "EmbedID: parameters need a floating dtype, the config's is ", dtype);
  Array w = Array::empty({in_size, out_size}, dtype, device_);
  std::optional<Generator> own;
  if (options.seed) own.emplace(*options.seed);
  Generator& gen = own ? *own : default_generator();
  if (options.initialW) {
    (*options.initialW)(w, gen);
  } else {
    initializers::Normal(1.0)(w, gen);
  }
  W_ = add_param("W", std::move(w));
}

Variable EmbedID::forward(const Variable& x) {
  RENSA_CHECK(!x.is_null(), ValueError, "EmbedID: x is null");
  // Under a mixed policy the selected rows are cast, not the table (the same values, less work).
  return mixed_cast(functions::embed_id(x.array(), param_in_forward(W_), ignore_label_));
}

}  // namespace rensa::links
