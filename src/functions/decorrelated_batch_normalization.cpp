// Decorrelated batch normalization: ZCA whitening per group of channels. The training-mode function
// is one node (its forward needs the eigendecomposition kernel); its backward is written with
// differentiable functions but treats the eigenvectors as constants, so it refuses double backprop.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/normalization.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// Axes 0 and 1 swapped: (N, C, ...) <-> (C, N, ...); its own inverse.
Shape swap01(int64_t ndim) {
  Shape perm;
  for (int64_t i = 0; i < ndim; ++i) perm.push_back(i);
  std::swap(perm[0], perm[1]);
  return perm;
}

// What both functions check and use: the group layout of x.
struct Groups {
  int64_t groups, per_group, positions;
  Shape swapped;  // x's shape with axes 0 and 1 swapped
};

Groups group_layout(const char* op, const Variable& x, int64_t groups) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  detail::check_floating(op, x);
  RENSA_CHECK(groups > 0, ValueError, op, ": groups must be positive, got ", groups);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, op, ": x ", x.shape(), " must have at least 2 dimensions (N, C, ...)");
  const int64_t c = x.shape()[1];
  RENSA_CHECK(c % groups == 0, ShapeError, op, ": groups ", groups, " does not divide the ", c, " channels of x ",
              x.shape());
  Groups g{groups, c / groups, c > 0 ? x.size() / c : 0, x.shape()};
  std::swap(g.swapped[0], g.swapped[1]);
  return g;
}

// x (N, C, ...) as (groups, C / groups, m) and back.
Variable to_groups(const Variable& x, const Groups& g) {
  return reshape(transpose(x, swap01(x.ndim())), {g.groups, g.per_group, g.positions});
}
Variable from_groups(const Variable& yg, const Groups& g) {
  return transpose(reshape(yg, g.swapped), swap01(static_cast<int64_t>(g.swapped.size())));
}

// The running statistic `a`, checked (set to `init` when null).
void check_running(const char* op, const char* name, Array& a, const Shape& shape, const Variable& x,
                   const Array& init) {
  if (a.is_null()) a = init;
  RENSA_CHECK(a.shape() == shape && is_floating(a.dtype()) && a.device() == x.device(), ShapeError, op, ": ", name, " ",
              a.shape(), " ", a.dtype(), " on ", a.device(), " must be ", shape, " floating on ", x.device(), " for x ",
              x.shape());
}

Array identity_matrices(int64_t groups, int64_t n, Dtype dtype, Device device) {
  std::vector<double> eye(static_cast<std::size_t>(groups * n * n), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < n; ++i) eye[static_cast<std::size_t>((g * n + i) * n + i)] = 1.0;
  }
  return Array::from_vector(eye, {groups, n, n}, device).astype(dtype);
}

// What the backward needs from the forward (all (groups, ...) arrays of x's dtype).
struct Whitening {
  Array xc;    // centred x (G, C, m)
  Array v;     // eigenvectors of the covariance (G, C, C), as columns
  Array s;     // square roots of its eigenvalues (G, C)
  Array w;     // the whitening matrix V diag(1 / s) V^T (G, C, C)
  Array mean;  // (G, C, 1)
};

Whitening whiten(const char* op, const Variable& x, const Groups& g, double eps) {
  auto guard = no_backprop_mode();
  Whitening r;
  const Variable xg = to_groups(x, g);
  const Variable mu = mean(xg, Shape{2}, true);
  const Variable xc = sub(xg, mu);
  const Variable eye(identity_matrices(1, g.per_group, x.dtype(), x.device()).reshape({g.per_group, g.per_group}));
  const Variable cov = add(mul(matmul(xc, xc, false, true), 1.0 / static_cast<double>(g.positions)), mul(eye, eps));
  Array evals = Array::empty({g.groups, g.per_group}, x.dtype(), x.device());
  Array evecs = Array::empty({g.groups, g.per_group, g.per_group}, x.dtype(), x.device());
  try {
    RENSA_KERNEL(x.device(), eigh, op)(cov.array(), evals, evecs);
  } catch (const ValueError& e) {
    // The kernel sees covariances; say whose.
    RENSA_THROW(ValueError, op, ": the covariance of x ", x.shape(), " has no eigendecomposition (", e.what(), ")");
  }
  const Variable s = sqrt(Variable(evals));
  const Variable v(evecs);
  r.w = matmul(div(v, reshape(s, {g.groups, 1, g.per_group})), v, false, true).array();
  r.xc = xc.array();
  r.v = evecs;
  r.s = s.array();
  r.mean = mu.array();
  return r;
}

}  // namespace

Variable decorrelated_batch_normalization(const Variable& x, int64_t groups, double eps, Array* running_mean,
                                          Array* running_projection, double decay) {
  constexpr const char* op = "decorrelated_batch_normalization";
  rensa::detail::ForwardEntry entry(op, x);
  const Groups g = group_layout(op, x, groups);
  RENSA_CHECK(eps > 0.0, ValueError, op, ": eps must be positive, got ", eps);
  RENSA_CHECK(decay >= 0.0 && decay <= 1.0, ValueError, op, ": decay must be in [0, 1], got ", decay);
  RENSA_CHECK(g.positions > 0, ValueError, op, ": x ", x.shape(), " has no position to take statistics over");
  if (x.dtype() != Dtype::float32 && x.dtype() != Dtype::float64) {
    return cast(
        decorrelated_batch_normalization(cast(x, Dtype::float32), groups, eps, running_mean, running_projection, decay),
        x.dtype());
  }
  const Shape mean_shape{g.groups, g.per_group}, proj_shape{g.groups, g.per_group, g.per_group};
  if (running_mean != nullptr) {
    check_running(op, "running_mean", *running_mean, mean_shape, x, Array::zeros(mean_shape, x.dtype(), x.device()));
  }
  if (running_projection != nullptr) {
    check_running(op, "running_projection", *running_projection, proj_shape, x,
                  identity_matrices(g.groups, g.per_group, x.dtype(), x.device()));
  }
  const Whitening wt = whiten(op, x, g, eps);
  Array y;
  {
    auto guard = no_backprop_mode();
    y = from_groups(matmul(Variable(wt.w), Variable(wt.xc)), g).array();
    if (running_mean != nullptr) {
      Array& rm = *running_mean;
      const Variable batch = reshape(Variable(wt.mean), mean_shape);
      rm.assign(add(mul(Variable(rm), decay), mul(cast(batch, rm.dtype()), 1.0 - decay)).array());
    }
    if (running_projection != nullptr) {
      Array& rp = *running_projection;
      const auto m = static_cast<double>(g.positions);
      const double adjust = m / std::max(m - 1.0, 1.0);  // unbiased, as Chainer
      rp.assign(add(mul(Variable(rp), decay), mul(cast(Variable(wt.w), rp.dtype()), (1.0 - decay) * adjust)).array());
    }
  }
  return record1(op, {x}, std::move(y), [wt, g](const BackwardContext& ctx) {
    RENSA_CHECK(!config().enable_backprop, NotImplementedError,
                "decorrelated_batch_normalization: its backward cannot be differentiated (double backprop), as in "
                "Chainer");
    // y = W xc with W = f(Sigma), f(t) = t^-1/2, Sigma = xc xc^T / m + eps I. Through W: the
    // Daleckii-Krein formula, dL/dSigma = V (K o (V^T gW V)) V^T with K[i][j] the divided difference
    // (f(w_i) - f(w_j)) / (w_i - w_j) = -1 / (s_i s_j (s_i + s_j)), which is f'(w_i) on ties: no
    // cancellation, and exact for repeated eigenvalues. Then Sigma's gradient reaches xc through
    // both factors, and the centring projects out the mean.
    const Variable gy = to_groups(ctx.grad_output(0), g);
    const Variable xc(wt.xc), v(wt.v), w(wt.w);
    const Variable si = reshape(Variable(wt.s), {g.groups, g.per_group, 1});
    const Variable sj = reshape(Variable(wt.s), {g.groups, 1, g.per_group});
    const Variable k = rdiv(mul(mul(si, sj), add(si, sj)), -1.0);
    const Variable gw = matmul(gy, xc, false, true);
    const Variable inner = mul(k, matmul(matmul(v, gw, true, false), v));
    const Variable gsigma = matmul(matmul(v, inner), v, false, true);
    const Variable sym = add(gsigma, swapaxes(gsigma, 1, 2));
    const Variable gxc = add(matmul(w, gy, true, false), mul(matmul(sym, xc), 1.0 / static_cast<double>(g.positions)));
    return std::vector<Variable>{from_groups(sub(gxc, mean(gxc, Shape{2}, true)), g)};
  });
}

Variable fixed_decorrelated_batch_normalization(const Variable& x, const Variable& mean_, const Variable& projection,
                                                int64_t groups) {
  constexpr const char* op = "fixed_decorrelated_batch_normalization";
  const Groups g = group_layout(op, x, groups);
  RENSA_CHECK(!mean_.is_null() && !projection.is_null(), ValueError, op, ": mean and projection are required");
  detail::check_same_dtype_device(op, {&x, &mean_, &projection});
  const Shape mean_shape{g.groups, g.per_group}, proj_shape{g.groups, g.per_group, g.per_group};
  RENSA_CHECK((mean_.shape() == mean_shape && projection.shape() == proj_shape), ShapeError, op, ": mean ",
              mean_.shape(), " and projection ", projection.shape(), " must be ", mean_shape, " and ", proj_shape,
              " for x ", x.shape(), " in ", g.groups, " groups");
  const Variable xc = sub(to_groups(x, g), reshape(mean_, {g.groups, g.per_group, 1}));
  return from_groups(matmul(projection, xc), g);
}

}  // namespace rensa::functions
