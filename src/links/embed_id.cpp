// EmbedID and the embed_id function: a row gather whose gradient is a row scatter-add (and whose
// second-order gradient is the gather again).
#include "rensa/links/embed_id.h"

#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "src/functions/common.h"

namespace rensa {
namespace functions {
namespace {

using Grads = std::vector<Variable>;

// Ids of `x` (contiguous, row-major) as int64.
std::vector<int64_t> read_ids(const Array& x) { return x.to_vector<int64_t>(); }

bool ignored(int64_t id, std::optional<int64_t> ignore_label) { return ignore_label && id == *ignore_label; }

// The gradient of embed_id with respect to W: zeros (in_size, out_size) with every row of gy added
// to the row of its id. Differentiable in gy: its gradient is embed_id of the same ids.
Variable embed_id_grad(const Variable& gy, const Array& x, int64_t in_size, std::optional<int64_t> ignore_label) {
  const int64_t out_size = gy.shape().back();
  Array gW = Array::zeros({in_size, out_size}, gy.dtype(), gy.device());
  const std::vector<int64_t> ids = read_ids(x);
  const Array g = gy.array().contiguous();
  dispatch_floating(gy.dtype(), "embed_id", [&]<class T>() {
    using C = compute_t<T>;
    const T* src = g.data<T>();
    T* dst = gW.data<T>();
    if constexpr (std::is_same_v<T, C>) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ignored(ids[i], ignore_label)) continue;
        T* row = dst + ids[i] * out_size;
        const T* grow = src + static_cast<int64_t>(i) * out_size;
        for (int64_t j = 0; j < out_size; ++j) row[j] += grow[j];
      }
    } else {
      // 16-bit floats: sum in float, round once.
      std::vector<C> acc(static_cast<std::size_t>(in_size * out_size), C(0));
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ignored(ids[i], ignore_label)) continue;
        C* row = acc.data() + ids[i] * out_size;
        const T* grow = src + static_cast<int64_t>(i) * out_size;
        for (int64_t j = 0; j < out_size; ++j) row[j] += static_cast<C>(grow[j]);
      }
      for (std::size_t k = 0; k < acc.size(); ++k) dst[k] = static_cast<T>(acc[k]);
    }
  });
  return record1("embed_id_grad", {gy}, std::move(gW), [x, ignore_label](const BackwardContext& ctx) {
    return Grads{embed_id(x, ctx.grad_output(), ignore_label)};
  });
}

}  // namespace

Variable embed_id(const Array& x, const Variable& W, std::optional<int64_t> ignore_label) {
  RENSA_CHECK(!x.is_null(), ValueError, "embed_id: x is null");
  RENSA_CHECK(!W.is_null(), ValueError, "embed_id: W is null (x ", x.shape(), ")");
  RENSA_CHECK(x.dtype() == Dtype::int32 || x.dtype() == Dtype::int64, DtypeError,
              "embed_id: ids x must be int32 or int64, got ", x.dtype(), " with shape ", x.shape());
  detail::check_floating("embed_id", W, "W");
  RENSA_CHECK(W.ndim() == 2, ShapeError, "embed_id: W must be (in_size, out_size), got ", W.shape(), " (x ",
              x.shape(), ")");
  RENSA_CHECK(x.device() == W.device(), DeviceError, "embed_id: x is on ", x.device(), ", W on ", W.device());
  RENSA_CHECK(W.device().is_host(), NotImplementedError, "embed_id: no implementation for device ", W.device());
  const int64_t in_size = W.shape()[0];
  const int64_t out_size = W.shape()[1];

  const std::vector<int64_t> ids = read_ids(x);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    RENSA_CHECK(ignored(ids[i], ignore_label) || (ids[i] >= 0 && ids[i] < in_size), IndexError, "embed_id: id ",
                ids[i], " at flat position ", i, " is out of range [0, ", in_size, ") (x ", x.shape(), ", W ",
                W.shape(), ")");
  }

  Shape y_shape = x.shape();
  y_shape.push_back(out_size);
  Array y = Array::empty(y_shape, W.dtype(), W.device());
  const Array w = W.array().contiguous();
  const std::size_t row_bytes = static_cast<std::size_t>(out_size) * w.itemsize();
  auto* dst = static_cast<unsigned char*>(y.raw_data());
  const auto* src = static_cast<const unsigned char*>(w.raw_data());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (row_bytes == 0) break;
    if (ignored(ids[i], ignore_label)) {
      std::memset(dst + i * row_bytes, 0, row_bytes);  // +0.0 in every floating format
    } else {
      std::memcpy(dst + i * row_bytes, src + static_cast<std::size_t>(ids[i]) * row_bytes, row_bytes);
    }
  }

  return record1("embed_id", {W}, std::move(y), [x, in_size, ignore_label](const BackwardContext& ctx) {
    return Grads{embed_id_grad(ctx.grad_output(), x, in_size, ignore_label)};
  });
}

}  // namespace functions

namespace links {

EmbedID::EmbedID(int64_t in_size, int64_t out_size, EmbedIDOptions options)
    : ignore_label_(options.ignore_label) {
  RENSA_CHECK(in_size >= 0 && out_size >= 0, ValueError, "EmbedID: sizes must be non-negative, got in_size ",
              in_size, " and out_size ", out_size);
  const Dtype dtype = config().dtype;
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
  return functions::embed_id(x.array(), W_, ignore_label_);
}

}  // namespace links
}  // namespace rensa
