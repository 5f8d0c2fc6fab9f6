#include "rensa/link_hooks/spectral_normalization.h"

#include <algorithm>
#include <cmath>

#include "rensa/core/backend.h"
#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/convolution_nd.h"
#include "src/link_hooks/weight_transform.h"

namespace rensa::link_hooks {

namespace F = functions;

namespace {

// The weight as an (out, -1) matrix, the output axis first.
Variable weight_matrix(const Variable& W, int axis) {
  Variable m = W;
  if (axis != 0) {
    Shape axes{axis};
    for (int64_t i = 0; i < W.ndim(); ++i) {
      if (i != axis) axes.push_back(i);
    }
    m = F::transpose(W, axes);
  }
  return m.ndim() == 2 ? m : F::reshape(m, {m.shape()[0], -1});
}

// v / (|v| + eps), a constant.
Variable l2normalize(const Variable& v, double eps) {
  const Variable norm = F::sqrt(F::sum(F::square(v)));
  return F::div(v, F::broadcast_to(norm + eps, v.shape()));
}

// The largest singular value of a matrix (float64, on the host): the square root of the largest
// eigenvalue of the smaller of m m^T and m^T m.
double largest_singular_value(const Array& m) {
  const Array a = m.astype(Dtype::float64).to(Device::cpu());
  const bool wide = a.shape()[0] <= a.shape()[1];
  const Variable av(a);
  const Array gram = (wide ? F::matmul(av, av, false, true) : F::matmul(av, av, true, false)).array();
  const int64_t n = gram.shape()[0];
  Array w = Array::empty({n}, Dtype::float64), vecs = Array::empty({n, n}, Dtype::float64);
  get_backend(Device::cpu()).kernels().eigh(gram, w, vecs);
  const auto ws = w.to_vector<double>();
  return std::sqrt(std::max(0.0, *std::max_element(ws.begin(), ws.end())));
}

}  // namespace

SpectralNormalization::SpectralNormalization(SpectralNormalizationOptions options) : options_(std::move(options)) {
  RENSA_CHECK(options_.n_power_iteration >= 1, ValueError,
              "SpectralNormalization: n_power_iteration must be at least 1, got ", options_.n_power_iteration);
  RENSA_CHECK(options_.eps >= 0, ValueError, "SpectralNormalization: eps must be >= 0, got ", options_.eps);
}

void SpectralNormalization::added(Link* link) {
  detail::check_weight_link(name(), link, options_.weight_name);
  axis_ = dynamic_cast<links::Deconvolution2D*>(link) || dynamic_cast<links::DeconvolutionND*>(link) ? 1 : 0;
  const Variable W = link->param(options_.weight_name);
  if (!W.array().is_null()) prepare(*link, W);
}

void SpectralNormalization::deleted(Link* link) {
  if (!link || !prepared_) return;
  link->remove_persistent(vector_name());
  if (options_.use_gamma) link->remove_param("gamma");
  prepared_ = false;
}

void SpectralNormalization::prepare(Link& link, const Variable& W) {
  RENSA_CHECK(W.ndim() > axis_, ValueError, name(), ": ", options_.weight_name, " of shape ", W.shape(), " has no axis ", axis_);
  const int64_t out = W.shape()[axis_];
  RENSA_CHECK(out > 0, ValueError, name(), ": expected ", options_.weight_name, ".shape[", axis_, "] > 0, got shape ",
              W.shape());
  link.add_persistent(vector_name(), random::normal({out}, 0.0, 1.0, W.dtype(), W.device()));
  if (options_.use_gamma) {
    const double s0 = largest_singular_value(weight_matrix(W, axis_).array());
    link.add_param("gamma", Array::full({}, s0, W.dtype(), W.device()));
  }
  prepared_ = true;
}

Variable SpectralNormalization::normalize(Link& link, const Variable& W) {
  if (!prepared_) prepare(link, W);
  const Variable m = weight_matrix(W, axis_);
  Variable u, v;
  {
    auto no_grad = no_backprop_mode();
    const Variable mc(m.array());
    u = Variable(link.persistent(vector_name())).array().reshape({1, m.shape()[0]});
    for (int i = 0; i < options_.n_power_iteration; ++i) {
      v = l2normalize(F::matmul(u, mc), options_.eps);        // (1, k)
      u = l2normalize(F::matmul(v, mc, false, true), options_.eps);  // (1, out)
    }
  }
  Variable sigma = F::reshape(F::matmul(F::matmul(Variable(u.array()), m), Variable(v.array()), false, true), {});
  if (options_.factor) sigma = sigma / *options_.factor;
  Variable scale = options_.use_gamma ? link.param("gamma") / sigma : 1.0 / sigma;
  if (config().train) link.persistent(vector_name()).assign(u.array().reshape({m.shape()[0]}));
  return W * F::broadcast_to(scale, W.shape());
}

void SpectralNormalization::forward_preprocess(const LinkForwardCall& call) {
  Link& link = call.link;
  call.link.set_param_transform(options_.weight_name, [this, &link](const Variable& W) { return normalize(link, W); });
}

void SpectralNormalization::forward_postprocess(const LinkForwardCall& call) {
  detail::end_weight_transform(name(), call, options_.weight_name);
}

}  // namespace rensa::link_hooks
