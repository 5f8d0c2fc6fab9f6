// Parameter initializers: each draws a fresh array from the generator and copies it into the
// target, so views and registered parameters keep aliasing the target's memory.
#include "rensa/links/initializers.h"

#include <cmath>

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
  fill_normal("HeNormal", array, scale_ * std::sqrt(2.0 / fan_in_of("HeNormal", array)), gen);
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

}  // namespace rensa::initializers
