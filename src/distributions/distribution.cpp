// The base class's generic statistics and the KL registry. The built-in pairs are registered by
// each family's file through register_builtin_kls, called once when the registry is first used.
#include "rensa/distributions/distribution.h"

#include <mutex>
#include <unordered_map>

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "src/distributions/builtin_kls.h"

namespace rensa::distributions {

namespace F = rensa::functions;

void Distribution::not_implemented(const char* method) const {
  throw NotImplementedError(
      rensa::detail::concat(name(), ".", method, ": not defined for ", name(), " (as in Chainer)"));
}

void Distribution::check_x(const char* method, const Variable& x, Dtype dtype) const {
  RENSA_CHECK(!x.is_null(), ValueError, name(), ".", method, ": x is a null Variable");
  RENSA_CHECK(x.dtype() == dtype, DtypeError, name(), ".", method, ": x is ", dtype_name(x.dtype()),
              " but the parameters are ", dtype_name(dtype));
  Shape full = batch_shape();
  for (int64_t e : event_shape()) full.push_back(e);
  try {
    (void)broadcast_shapes(x.shape(), full, "check_x");
  } catch (const ShapeError&) {
    throw ShapeError(rensa::detail::concat(name(), ".", method, ": x ", x.shape(),
                                           " does not broadcast with batch_shape + event_shape ", full));
  }
}

std::string Distribution::support() const {
  not_implemented("support");
}
Variable Distribution::log_prob(const Variable&) const {
  not_implemented("log_prob");
}
Variable Distribution::prob(const Variable& x) const {
  return F::exp(log_prob(x));
}
Variable Distribution::cdf(const Variable&) const {
  not_implemented("cdf");
}
Variable Distribution::log_cdf(const Variable& x) const {
  return F::log(cdf(x));
}
Variable Distribution::icdf(const Variable&) const {
  not_implemented("icdf");
}
Variable Distribution::survival_function(const Variable& x) const {
  return 1.0 - cdf(x);
}
Variable Distribution::log_survival_function(const Variable& x) const {
  return F::log(survival_function(x));
}
Variable Distribution::perplexity(const Variable& x) const {
  return F::exp(-log_prob(x));
}
Variable Distribution::entropy() const {
  not_implemented("entropy");
}
Variable Distribution::mean() const {
  not_implemented("mean");
}
Variable Distribution::mode() const {
  not_implemented("mode");
}
Variable Distribution::variance() const {
  not_implemented("variance");
}
Variable Distribution::stddev() const {
  return F::sqrt(variance());
}
Variable Distribution::covariance() const {
  not_implemented("covariance");
}
Variable Distribution::sample_n(int64_t, Generator*) const {
  not_implemented("sample_n");
}

Variable Distribution::sample(const Shape& sample_shape, Generator* gen) const {
  int64_t n = 1;
  for (int64_t s : sample_shape) {
    RENSA_CHECK(s >= 0, ValueError, name(), ".sample: sample_shape ", sample_shape, " has a negative extent");
    n *= s;
  }
  Shape shape = sample_shape;
  for (int64_t b : batch_shape()) shape.push_back(b);
  for (int64_t e : event_shape()) shape.push_back(e);
  return F::reshape(sample_n(n, gen), shape);
}

namespace {

struct PairHash {
  std::size_t operator()(const std::pair<std::type_index, std::type_index>& p) const {
    return p.first.hash_code() * 31 + p.second.hash_code();
  }
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::pair<std::type_index, std::type_index>, KLFunction, PairHash> kls;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // leaked: may be used at exit
    detail::register_builtin_kls([reg](std::type_index a, std::type_index b, KLFunction f) {
      reg->kls[{a, b}] = std::move(f);
    });
    return reg;
  }();
  return *r;
}

}  // namespace

void register_kl(std::type_index d1, std::type_index d2, KLFunction kl) {
  RENSA_CHECK(kl != nullptr, ValueError, "register_kl: the KL function is empty");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kls[{d1, d2}] = std::move(kl);
}

Variable kl_divergence(const Distribution& d1, const Distribution& d2) {
  KLFunction f;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.kls.find({typeid(d1), typeid(d2)});
    RENSA_CHECK(it != r.kls.end(), NotImplementedError, "kl_divergence: no KL divergence is registered between ",
                d1.name(), " and ", d2.name(), " (register_kl adds one)");
    f = it->second;
  }
  // Batch shapes broadcast (a batch of posteriors against one prior); events must agree.
  bool fits = d1.event_shape() == d2.event_shape();
  if (fits) {
    try {
      (void)broadcast_shapes(d1.batch_shape(), d2.batch_shape(), "kl_divergence");
    } catch (const ShapeError&) {
      fits = false;
    }
  }
  RENSA_CHECK(fits, ShapeError, "kl_divergence: ", d1.name(), " of batch shape ", d1.batch_shape(), " and event shape ",
              d1.event_shape(), " against ", d2.name(), " of batch shape ", d2.batch_shape(), " and event shape ",
              d2.event_shape(), ": the event shapes must be equal and the batch shapes broadcast");
  return f(d1, d2);
}

Variable cross_entropy(const Distribution& d1, const Distribution& d2) {
  return d1.entropy() + kl_divergence(d1, d2);
}

}  // namespace rensa::distributions
