#include "src/distributions/common.h"

#include <cmath>
#include <numbers>

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/special.h"

namespace rensa::distributions::detail {

namespace F = rensa::functions;

std::vector<Variable> broadcast_params(const std::string& cls,
                                       const std::vector<std::pair<const char*, Variable>>& named) {
  Shape shape;
  std::string shapes;
  for (std::size_t i = 0; i < named.size(); ++i) {
    const auto& [what, v] = named[i];
    RENSA_CHECK(!v.is_null(), ValueError, cls, ": ", what, " is a null Variable");
    RENSA_CHECK(is_floating(v.dtype()), DtypeError, cls, ": ", what, " must be of a floating dtype, got ",
                dtype_name(v.dtype()));
    RENSA_CHECK(v.dtype() == named[0].second.dtype(), DtypeError, cls, ": ", what, " is ", dtype_name(v.dtype()),
                " but ", named[0].first, " is ", dtype_name(named[0].second.dtype()));
    shapes += rensa::detail::concat(i == 0 ? "" : " and ", what, " ", v.shape());
  }
  try {
    shape = named[0].second.shape();
    for (const auto& [what, v] : named) shape = broadcast_shapes(shape, v.shape(), cls.c_str());
  } catch (const ShapeError&) {
    throw ShapeError(rensa::detail::concat(cls, ": ", shapes, " do not broadcast to one batch shape"));
  }
  std::vector<Variable> out;
  for (const auto& [what, v] : named) out.push_back(v.shape() == shape ? v : F::broadcast_to(v, shape));
  return out;
}

void check_vector_param(const std::string& cls, const char* what, const Variable& v) {
  RENSA_CHECK(!v.is_null(), ValueError, cls, ": ", what, " is a null Variable");
  RENSA_CHECK(is_floating(v.dtype()), DtypeError, cls, ": ", what, " must be of a floating dtype, got ",
              dtype_name(v.dtype()));
  RENSA_CHECK(v.ndim() >= 1, ShapeError, cls, ": ", what, " must have at least 1 axis (the last holds the ",
              "event), got shape ", v.shape());
}

Variable constant(const Variable& v, double value, const Shape& shape) {
  return Variable(Array::full(shape.empty() ? v.shape() : shape, value, v.dtype(), v.device()));
}

Array compare(const Array& a, const Array& b, const std::function<bool(double, double)>& cmp) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "compare");
  const std::vector<double> va = a.broadcast_to(shape).to_vector<double>();
  const std::vector<double> vb = b.broadcast_to(shape).to_vector<double>();
  Array out = Array::empty(shape, Dtype::bool_);
  bool* p = out.data<bool>();
  for (std::size_t i = 0; i < va.size(); ++i) p[i] = cmp(va[i], vb[i]);
  return out.to(a.device());
}

Variable modified_xlogx(const Variable& x) {
  // x log(x') with x' = x where x > 0 and 1 elsewhere: 0 at x = 0, and no NaN in the gradient.
  const Array positive = compare(x.array(), Array::scalar(0.0, x.dtype()), [](double a, double b) { return a > b; });
  const Variable safe = F::where(positive, x, constant(x, 1.0));
  return x * F::log(safe);
}

Variable lbeta(const Variable& a, const Variable& b) {
  return F::lgamma(a) + F::lgamma(b) - F::lgamma(a + b);
}

Generator& generator_or_default(Generator* gen) {
  return gen != nullptr ? *gen : default_generator();
}

void check_sample_count(const std::string& cls, int64_t n) {
  RENSA_CHECK(n >= 0, ValueError, cls, ".sample_n: n must not be negative, got ", n);
}

// ---- per-element streams ------------------------------------------------------------------------

double Stream::uniform() {
  return rensa::detail::random_at(RandomDist::uniform, ctr_++, key_);
}

double Stream::open_uniform() {
  for (;;) {
    const double u = uniform();
    if (u > 0.0) return u;
  }
}

double Stream::normal() {
  return rensa::detail::random_at(RandomDist::normal, ctr_++, key_);
}

double Stream::exponential() {
  return -std::log1p(-uniform());
}

double Stream::gamma(double k) {
  if (!(k > 0.0)) return std::nan("");
  if (k < 1.0) {
    // Gamma(k) = Gamma(k + 1) U^(1/k), in logs so that tiny k does not underflow to 0 at once.
    const double g = gamma(k + 1.0);
    return std::exp(std::log(g) + std::log(open_uniform()) / k);
  }
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = open_uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double Stream::poisson(double lam) {
  if (!(lam >= 0.0)) return std::nan("");
  if (lam == 0.0) return 0.0;
  if (lam < 10.0) {
    // Multiplication of uniforms (Knuth).
    const double limit = std::exp(-lam);
    double prod = uniform();
    double k = 0.0;
    while (prod > limit) {
      prod *= uniform();
      k += 1.0;
    }
    return k;
  }
  // Transformed rejection with squeeze (Hoermann's PTRS).
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = uniform() - 0.5, v = uniform();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -lam + k * loglam - std::lgamma(k + 1.0)) {
      return k;
    }
  }
}

double Stream::geometric(double p) {
  if (!(p > 0.0 && p <= 1.0)) return std::nan("");
  if (p == 1.0) return 1.0;
  // Inversion: the smallest x >= 1 with 1 - (1 - p)^x >= u.
  return std::max(1.0, std::ceil(std::log1p(-open_uniform()) / std::log1p(-p)));
}

namespace {
uint64_t stream_key(uint64_t seed, uint64_t ctr) {
  return rensa::detail::splitmix64(seed ^ rensa::detail::splitmix64(ctr));
}

Array cast_out(std::vector<double>& values, const Shape& shape, Dtype dtype) {
  return Array::from_vector(values, shape).astype(dtype);
}
}  // namespace

Array draw_elementwise(int64_t n, const Shape& batch, Dtype dtype, const std::vector<Array>& params, Generator& gen,
                       const std::function<double(const double* p, Stream& s)>& draw) {
  const int64_t b = batch.numel();
  std::vector<std::vector<double>> values;
  for (const Array& p : params) values.push_back(p.broadcast_to(batch).to_vector<double>());
  const uint64_t base = gen.advance(static_cast<uint64_t>(n * b));
  std::vector<double> out(static_cast<std::size_t>(n * b));
  std::vector<double> args(params.size());
  for (int64_t i = 0; i < n * b; ++i) {
    for (std::size_t j = 0; j < params.size(); ++j) args[j] = values[j][static_cast<std::size_t>(i % b)];
    Stream s(stream_key(gen.seed(), base + static_cast<uint64_t>(i)));
    out[static_cast<std::size_t>(i)] = draw(args.data(), s);
  }
  Shape shape = batch;
  shape.insert(0, n);
  return cast_out(out, shape, dtype);
}

Array draw_rows(int64_t n, const Array& params, int64_t out_k, Dtype dtype, Generator& gen,
                const std::function<void(const double* p, int64_t k, Stream& s, double* out)>& draw) {
  const int64_t k = params.shape().back();
  Shape shape = params.shape();
  shape.resize(shape.size() - 1);
  const int64_t rows = shape.numel();
  const std::vector<double> p = params.to_vector<double>();
  const uint64_t base = gen.advance(static_cast<uint64_t>(n * rows));
  std::vector<double> out(static_cast<std::size_t>(n * rows * out_k));
  for (int64_t i = 0; i < n * rows; ++i) {
    Stream s(stream_key(gen.seed(), base + static_cast<uint64_t>(i)));
    draw(p.data() + (i % rows) * k, k, s, out.data() + i * out_k);
  }
  shape.insert(0, n);
  shape.push_back(out_k);
  return cast_out(out, shape, dtype);
}

int64_t draw_category(const double* p, int64_t k, Stream& s, const char* what) {
  double total = 0.0;
  for (int64_t j = 0; j < k; ++j) {
    RENSA_CHECK(p[j] >= 0.0, ValueError, what, ": probabilities must be non-negative, got ", p[j], " for class ", j);
    total += p[j];
  }
  RENSA_CHECK(total > 0.0 && std::isfinite(total), ValueError, what, ": the probabilities of a row sum to ", total);
  const double u = s.uniform() * total;
  double cum = 0.0;
  int64_t last = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (p[j] > 0.0) last = j;
    cum += p[j];
    if (u < cum) return j;
  }
  return last;  // rounding left u at the total
}

bool any(const Array& mask) {
  const Array c = mask.contiguous();
  const bool* p = c.data<bool>();
  for (int64_t i = 0; i < c.size(); ++i) {
    if (p[i]) return true;
  }
  return false;
}

}  // namespace rensa::distributions::detail
