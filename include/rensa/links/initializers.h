#pragma once
/// \file
/// Parameter initializers (Chainer's): fill an array in place, drawing from a Generator.

#include <memory>

#include "rensa/core/array.h"
#include "rensa/core/random.h"

namespace rensa::initializers {

/// Fills `array` in place. fan_in/fan_out follow Chainer: for shape (out, in, k...) fan_in =
/// in * prod(k), fan_out = out * prod(k).
class Initializer {
 public:
  virtual ~Initializer() = default;
  virtual void operator()(const Array& array, Generator& gen) const = 0;
};

/// N(0, scale^2 / fan_in) — Chainer's default for Linear and convolutions.
class LeCunNormal : public Initializer {
 public:
  explicit LeCunNormal(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-s, s) with s = scale * sqrt(3 / fan_in) (Chainer's LeCunUniform: GoogLeNet's default).
class LeCunUniform : public Initializer {
 public:
  explicit LeCunUniform(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// N(0, 2 scale^2 / fan_in).
class HeNormal : public Initializer {
 public:
  explicit HeNormal(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-s, s) with s = scale * sqrt(6 / (fan_in + fan_out)).
class GlorotUniform : public Initializer {
 public:
  explicit GlorotUniform(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// N(0, scale^2).
class Normal : public Initializer {
 public:
  explicit Normal(double scale = 0.05) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-scale, scale).
class Uniform : public Initializer {
 public:
  explicit Uniform(double scale = 0.05) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// Every element = value.
class Constant : public Initializer {
 public:
  explicit Constant(double value) : value_(value) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double value_;
};
class Zero : public Constant {
 public:
  Zero() : Constant(0.0) {}
};
class One : public Constant {
 public:
  One() : Constant(1.0) {}
};

/// (fan_in, fan_out) of a parameter shape; ShapeError for fewer than 2 axes.
std::pair<double, double> get_fans(const Shape& shape);

}  // namespace rensa::initializers
