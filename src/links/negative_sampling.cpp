// NegativeSampling and BlackOut: W and a WalkerAlias sampler, forwarding to the loss functions.
#include "rensa/links/negative_sampling.h"

#include <cmath>
#include <limits>
#include <string>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/loss.h"
#include "rensa/links/black_out.h"

namespace rensa::links {
namespace {

std::vector<double> powered(const std::vector<double>& counts, double power, Dtype dtype) {
  std::vector<double> p(counts.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    p[i] = std::pow(counts[i], power);
    if (dtype != Dtype::float64) p[i] = static_cast<float>(p[i]);  // Chainer powers in the link's dtype
  }
  return p;
}

Dtype param_dtype(const char* link) {
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, link, ": parameters need a floating dtype, the config's is ", dtype);
  return dtype;
}

template <class F>
auto prefixed(const char* link, F&& f) {
  try {
    return f();
  } catch (...) {
    rethrow_with_context(std::string(link) + ": ");
  }
}

}  // namespace

NegativeSampling::NegativeSampling(int64_t in_size, const std::vector<double>& counts, int64_t sample_size,
                                   NegativeSamplingOptions options)
    : sample_size_(sample_size), sampler_(powered(counts, options.power, param_dtype("NegativeSampling"))) {
  RENSA_CHECK(in_size >= 1 && sample_size >= 0, ValueError, "NegativeSampling: in_size must be at least 1 and ",
              "sample_size non-negative, got ", in_size, " and ", sample_size);
  if (options.seed) gen_.emplace(*options.seed);
  W_ = add_param("W", Array::zeros({static_cast<int64_t>(counts.size()), in_size}, get_dtype(), device_));
}

Variable NegativeSampling::forward(const Variable& x, const Array& t, std::string_view reduce, Array* samples) {
  Generator& gen = gen_ ? *gen_ : default_generator();
  const functions::NegativeSampler sampler = [&](const Shape& shape) {
    return sampler_.sample(shape, gen).to(W_.device());
  };
  return prefixed("NegativeSampling",
                  [&] { return functions::negative_sampling(x, t, W_, sampler, sample_size_, reduce, samples); });
}

Variable NegativeSampling::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 2, ValueError, "NegativeSampling: forward takes x and t, got ", inputs.size(),
              " inputs");
  return forward(inputs[0], inputs[1].array());
}

BlackOut::BlackOut(int64_t in_size, const std::vector<double>& counts, int64_t sample_size, BlackOutOptions options)
    : sample_size_(sample_size), sampler_(powered(counts, 1.0, Dtype::float32)) {
  const Dtype dtype = param_dtype("BlackOut");
  RENSA_CHECK(in_size >= 1 && sample_size >= 1, ValueError, "BlackOut: in_size and sample_size must be at least 1, ",
              "got ", in_size, " and ", sample_size);
  if (options.seed) gen_.emplace(*options.seed);
  Array w = Array::empty({static_cast<int64_t>(counts.size()), in_size}, dtype, device_);
  if (options.initialW) {
    Generator& gen = gen_ ? *gen_ : default_generator();
    (*options.initialW)(w, gen);
  } else {
    w.fill(std::numeric_limits<double>::quiet_NaN());
  }
  W_ = add_param("W", w);
}

Variable BlackOut::forward(const Variable& x, const Array& t) {
  Array samples = sample_data;
  if (samples.is_null()) {
    RENSA_CHECK(x.array().ndim() >= 1, ShapeError, "BlackOut: x ", x.shape(), " needs a batch axis");
    Generator& gen = gen_ ? *gen_ : default_generator();
    samples = sampler_.sample({x.shape()[0], sample_size_}, gen).to(W_.device());
  }
  return prefixed("BlackOut", [&] { return functions::black_out(x, t, W_, samples); });
}

Variable BlackOut::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 2, ValueError, "BlackOut: forward takes x and t, got ", inputs.size(), " inputs");
  return forward(inputs[0], inputs[1].array());
}

}  // namespace rensa::links
