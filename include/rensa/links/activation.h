#pragma once
/// \file
/// Links with learned activation parameters (Chainer's L.PReLU, L.Swish, L.Maxout).

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/links/initializers.h"
#include "rensa/links/linear.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Parametric ReLU: parameter W of `shape` filled with `init`; forward is functions::prelu(x, W)
/// (W's axes match x's axes 1 .. W.ndim).
class PReLU : public Link {
 public:
  /// W of `shape` ({}: a scalar slope shared by all) filled with `init`; DtypeError for a non-floating Config dtype.
  explicit PReLU(const Shape& shape = {}, double init = 0.25);
  Variable forward(const Variable& x) override;
  using Link::forward;
  /// The slope parameter W.
  const Variable& W() const { return W_; }

 private:
  Variable W_;
};

/// Swish with a learned beta: parameter beta of `beta_shape` filled with `beta_init`; with no shape
/// it is created at the first forward as (x.shape[1],), as Chainer's beta_shape=None. forward is
/// functions::swish(x, beta).
class Swish : public Link {
 public:
  /// DtypeError for a non-floating Config dtype.
  explicit Swish(std::optional<Shape> beta_shape = std::nullopt, double beta_init = 1.0);
  Variable forward(const Variable& x) override;
  using Link::forward;
  /// The beta parameter (uninitialized until the first forward when no shape was given).
  const Variable& beta() const { return beta_; }

 private:
  double beta_init_;
  Dtype dtype_;
  Variable beta_;
};

/// Maxout: child "linear", a Linear(in_size, out_size * pool_size), followed by
/// functions::maxout(y, pool_size) (Chainer's layout: output unit o takes the max of linear
/// outputs o * pool_size .. o * pool_size + pool_size - 1). in_size 0 infers it from the first
/// input. ValueError unless out_size > 0 and pool_size > 0.
class Maxout : public Chain {
 public:
  /// in_size 0: inferred from the first input. ValueError unless out_size > 0 and pool_size > 0.
  Maxout(int64_t in_size, int64_t out_size, int64_t pool_size, const LinearOptions& options = {});
  Variable forward(const Variable& x) override;
  using Link::forward;
  /// The child Linear(in_size, out_size * pool_size).
  Linear& linear() { return *linear_; }

 private:
  std::shared_ptr<Linear> linear_;
  int64_t pool_size_;
};

}  // namespace rensa::links
