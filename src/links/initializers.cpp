// Parameter initializers: each draws a fresh array from the generator and copies it into the
// target, so views and registered parameters keep aliasing the target's memory.
#include "rensa/links/initializers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "rensa/core/error.h"

namespace rensa::initializers {
namespace {

void check_target(const char* op, const Array& array) {
  RENSA_CHECK(!array.is_null(), ValueError, op, ": null array");
  RENSA_CHECK(is_floating(array.dtype()), DtypeError, op, ": expected a floating array, got ", array.dtype(),
              " with shape ", array.shape());
}

void fill_normal(const char* op, const Array& array, double stddev, Generator& gen) {
  check_target(op, array);
  if (array.size() == 0) return;
  array.assign(random::normal(array.shape(), 0.0, stddev, array.dtype(), array.device(), &gen));
}

void fill_uniform(const char* op, const Array& array, double bound, Generator& gen) {
  check_target(op, array);
  if (array.size() == 0) return;
  array.assign(random::uniform(array.shape(), -bound, bound, array.dtype(), array.device(), &gen));
}

// fan_in of a non-empty array, with the op named in the errors.
double fan_in_of(const char* op, const Array& array) {
  RENSA_CHECK(array.ndim() >= 2, ShapeError, op, ": fans need at least 2 axes, got shape ", array.shape());
  return get_fans(array.shape()).first;
}

}  // namespace

std::pair<double, double> get_fans(const Shape& shape) {
  RENSA_CHECK(shape.size() >= 2, ShapeError, "get_fans: fans need at least 2 axes, got shape ", shape);
  double receptive = 1.0;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

void LeCunNormal::operator()(const Array& array, Generator& gen) const {
  check_target("LeCunNormal", array);
  if (array.size() == 0) return;
  fill_normal("LeCunNormal", array, scale_ * std::sqrt(1.0 / fan_in_of("LeCunNormal", array)), gen);
}

void LeCunUniform::operator()(const Array& array, Generator& gen) const {
  check_target("LeCunUniform", array);
  if (array.size() == 0) return;
  fill_uniform("LeCunUniform", array, scale_ * std::sqrt(3.0 / fan_in_of("LeCunUniform", array)), gen);
}

void HeNormal::operator()(const Array& array, Generator& gen) const {
  check_target("HeNormal", array);
  if (array.size() == 0) return;
  const double fan = fan_in_of("HeNormal", array);
  fill_normal("HeNormal", array,
              scale_ * std::sqrt(2.0 / (fan_ == FanOption::fan_in ? fan : get_fans(array.shape()).second)), gen);
}

void HeUniform::operator()(const Array& array, Generator& gen) const {
  check_target("HeUniform", array);
  if (array.size() == 0) return;
  fill_uniform("HeUniform", array, scale_ * std::sqrt(6.0 / fan_in_of("HeUniform", array)), gen);
}

void GlorotNormal::operator()(const Array& array, Generator& gen) const {
  check_target("GlorotNormal", array);
  if (array.size() == 0) return;
  fan_in_of("GlorotNormal", array);
  const auto [fan_in, fan_out] = get_fans(array.shape());
  fill_normal("GlorotNormal", array, scale_ * std::sqrt(2.0 / (fan_in + fan_out)), gen);
}

void GlorotUniform::operator()(const Array& array, Generator& gen) const {
  check_target("GlorotUniform", array);
  if (array.size() == 0) return;
  RENSA_CHECK(array.ndim() >= 2, ShapeError, "GlorotUniform: fans need at least 2 axes, got shape ",
              array.shape());
  const auto [fan_in, fan_out] = get_fans(array.shape());
  fill_uniform("GlorotUniform", array, scale_ * std::sqrt(6.0 / (fan_in + fan_out)), gen);
}

void Normal::operator()(const Array& array, Generator& gen) const { fill_normal("Normal", array, scale_, gen); }

void Uniform::operator()(const Array& array, Generator& gen) const { fill_uniform("Uniform", array, scale_, gen); }

void Constant::operator()(const Array& array, Generator&) const {
  RENSA_CHECK(!array.is_null(), ValueError, "Constant: null array");
  array.fill(value_);
}

NaN::NaN() : Constant(std::numeric_limits<double>::quiet_NaN()) {}

void Identity::operator()(const Array& array, Generator&) const {
  check_target("Identity", array);
  RENSA_CHECK(array.ndim() == 2 && array.shape()[0] == array.shape()[1], ValueError,
              "Identity: the array must be a 2-d square matrix, got shape ", array.shape());
  const int64_t n = array.shape()[0];
  std::vector<double> v(static_cast<std::size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i * n + i)] = scale_;
  array.assign(Array::from_vector(v, array.shape()).astype(array.dtype()).to(array.device()));
}

Orthogonal::Orthogonal(double scale, std::string mode) : scale_(scale), mode_(std::move(mode)) {
  RENSA_CHECK(mode_ == "auto" || mode_ == "projection" || mode_ == "embedding" || mode_ == "basis", ValueError,
              "Orthogonal: invalid mode '", mode_, "'; choose from 'auto', 'projection', 'embedding', 'basis'");
}

void Orthogonal::operator()(const Array& array, Generator& gen) const {
  check_target("Orthogonal", array);
  if (array.ndim() == 0) {
    const double u = random::uniform(Shape{}, 0.0, 1.0, Dtype::float64, Device::cpu(), &gen).item<double>();
    array.fill(u < 0.5 ? -scale_ : scale_);
    return;
  }
  RENSA_CHECK(array.size() > 0, ValueError, "Orthogonal: the array to initialize must be non-empty, got shape ",
              array.shape());
  const int64_t out = array.shape()[0], in = array.size() / out;
  const bool embedding = mode_ == "embedding" || mode_ == "basis", projection = mode_ == "projection" || mode_ == "basis";
  RENSA_CHECK(!(in > out && embedding) && !(in < out && projection), ValueError, "Orthogonal: cannot make orthogonal ",
              mode_, ": shape ", array.shape(), ", interpreted as ", in, "-dim input and ", out, "-dim output");
  // A tall matrix m x n (m >= n) whose columns become orthonormal: the draw, or its transpose.
  const bool transpose = in > out;
  const int64_t m = transpose ? in : out, n = transpose ? out : in;
  const std::vector<double> draw =
      random::normal({out, in}, 0.0, 1.0, Dtype::float64, Device::cpu(), &gen).to_vector<double>();
  std::vector<double> q(static_cast<std::size_t>(m * n));  // column-major: column j at q[j * m]
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t j = 0; j < in; ++j) {
      const double v = draw[static_cast<std::size_t>(i * in + j)];
      if (transpose) q[static_cast<std::size_t>(i * m + j)] = v;  // row i of the draw is column i
      else q[static_cast<std::size_t>(j * m + i)] = v;
    }
  }
  // Modified Gram-Schmidt, twice per column for accuracy: R's diagonal (the norms) comes out
  // positive, which is the sign convention that makes Q unique.
  for (int64_t j = 0; j < n; ++j) {
    double* cj = &q[static_cast<std::size_t>(j * m)];
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t k = 0; k < j; ++k) {
        const double* ck = &q[static_cast<std::size_t>(k * m)];
        double dot = 0.0;
        for (int64_t r = 0; r < m; ++r) dot += ck[r] * cj[r];
        for (int64_t r = 0; r < m; ++r) cj[r] -= dot * ck[r];
      }
    }
    double norm = 0.0;
    for (int64_t r = 0; r < m; ++r) norm += cj[r] * cj[r];
    norm = std::sqrt(norm);
    RENSA_CHECK(norm > 0.0, ValueError, "Orthogonal: the normal draw for shape ", array.shape(), " was singular");
    for (int64_t r = 0; r < m; ++r) cj[r] /= norm;
  }
  for (double& v : q) v *= scale_;
  std::vector<double> w(static_cast<std::size_t>(out * in));
  for (int64_t i = 0; i < out; ++i) {
    for (int64_t j = 0; j < in; ++j) {
      w[static_cast<std::size_t>(i * in + j)] =
          transpose ? q[static_cast<std::size_t>(i * m + j)] : q[static_cast<std::size_t>(j * m + i)];
    }
  }
  array.assign(Array::from_vector(w, array.shape()).astype(array.dtype()).to(array.device()));
}

namespace {

// Fills W (in, out, k, ..., k) with the linear interpolation filter of size k on the diagonal (or
// every in channel of out == 1), normalized to sum 1 when downsampling.
void fill_sampling_filter(const char* op, const Array& array, bool upsampling) {
  check_target(op, array);
  RENSA_CHECK(array.ndim() >= 3, ShapeError, op, ": W must be (in, out, k, ...), got shape ", array.shape());
  const int64_t in_c = array.shape()[0], out_c = array.shape()[1], k = array.shape()[2];
  RENSA_CHECK(in_c == out_c || out_c == 1, ValueError, op, ": W ", array.shape(),
              " needs as many out channels as in channels, or one");
  for (int64_t d = 2; d < array.ndim(); ++d) {
    RENSA_CHECK(array.shape()[static_cast<std::size_t>(d)] == k, ValueError, op, ": ksize must be all same, got shape ",
                array.shape());
  }
  const int64_t nd = array.ndim() - 2;
  // Chainer's factor = (size + 1) // 2: the truncation is intended.
  const int64_t half_k = (k + 1) / 2;
  const double factor = static_cast<double>(half_k);
  const double center = k % 2 == 1 ? factor - 1.0 : factor - 0.5;
  int64_t taps = 1;
  for (int64_t d = 0; d < nd; ++d) taps *= k;
  std::vector<double> filt(static_cast<std::size_t>(taps));
  double total = 0.0;
  for (int64_t t = 0; t < taps; ++t) {
    double v = 1.0;
    for (int64_t d = 0, rest = t; d < nd; ++d, rest /= k) v *= 1.0 - std::abs(static_cast<double>(rest % k) - center) / factor;
    filt[static_cast<std::size_t>(t)] = v;
    total += v;
  }
  if (!upsampling) {
    for (double& v : filt) v /= total;
  }
  std::vector<double> w(static_cast<std::size_t>(array.size()), 0.0);
  for (int64_t c = 0; c < in_c; ++c) {
    const int64_t o = out_c == 1 ? 0 : c;
    std::copy(filt.begin(), filt.end(), w.begin() + (c * out_c + o) * taps);
  }
  array.assign(Array::from_vector(w, array.shape()).astype(array.dtype()).to(array.device()));
}

void check_interpolation(const char* op, const std::string& interpolation) {
  RENSA_CHECK(interpolation == "linear", ValueError, op, ": unsupported interpolation method '", interpolation,
              "' (only 'linear')");
}

}  // namespace

UpsamplingDeconvFilter::UpsamplingDeconvFilter(const std::string& interpolation) {
  check_interpolation("UpsamplingDeconvFilter", interpolation);
}
void UpsamplingDeconvFilter::operator()(const Array& array, Generator&) const {
  fill_sampling_filter("UpsamplingDeconvFilter", array, true);
}

DownsamplingConvFilter::DownsamplingConvFilter(const std::string& interpolation) {
  check_interpolation("DownsamplingConvFilter", interpolation);
}
void DownsamplingConvFilter::operator()(const Array& array, Generator&) const {
  fill_sampling_filter("DownsamplingConvFilter", array, false);
}

}  // namespace rensa::initializers
