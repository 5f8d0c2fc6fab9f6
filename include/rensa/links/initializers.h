#pragma once
/// \file
/// Parameter initializers (Chainer's): fill an array in place, drawing from a Generator.

#include <memory>
#include <string>

#include "rensa/core/array.h"
#include "rensa/core/random.h"

namespace rensa::initializers {

/// Fills `array` in place. fan_in/fan_out follow Chainer: for shape (out, in, k...) fan_in =
/// in * prod(k), fan_out = out * prod(k).
class Initializer {
 public:
  virtual ~Initializer() = default;
  /// Fills `array` (any shape, floating dtype, written in place) with values drawn from `gen`.
  virtual void operator()(const Array& array, Generator& gen) const = 0;
};

/// N(0, scale^2 / fan_in) — Chainer's default for Linear and convolutions.
class LeCunNormal : public Initializer {
 public:
  /// `scale` multiplies the standard deviation.
  explicit LeCunNormal(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-s, s) with s = scale * sqrt(3 / fan_in) (Chainer's LeCunUniform: GoogLeNet's default).
class LeCunUniform : public Initializer {
 public:
  /// `scale` multiplies the bound.
  explicit LeCunUniform(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// Which fan an initializer's scale divides by (Chainer's fan_option).
enum class FanOption { fan_in, fan_out };

/// N(0, 2 scale^2 / fan), fan = fan_in (default) or fan_out.
class HeNormal : public Initializer {
 public:
  /// `scale` multiplies the standard deviation; `fan` picks the fan it divides by.
  explicit HeNormal(double scale = 1.0, FanOption fan = FanOption::fan_in) : scale_(scale), fan_(fan) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
  FanOption fan_;
};
/// U(-s, s) with s = scale * sqrt(6 / fan_in).
class HeUniform : public Initializer {
 public:
  /// `scale` multiplies the bound.
  explicit HeUniform(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// N(0, s^2) with s = scale * sqrt(2 / (fan_in + fan_out)).
class GlorotNormal : public Initializer {
 public:
  /// `scale` multiplies the standard deviation.
  explicit GlorotNormal(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-s, s) with s = scale * sqrt(6 / (fan_in + fan_out)).
class GlorotUniform : public Initializer {
 public:
  /// `scale` multiplies the bound.
  explicit GlorotUniform(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// N(0, scale^2).
class Normal : public Initializer {
 public:
  /// `scale` is the standard deviation.
  explicit Normal(double scale = 0.05) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// U(-scale, scale).
class Uniform : public Initializer {
 public:
  /// `scale` is the bound.
  explicit Uniform(double scale = 0.05) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// Every element = value.
class Constant : public Initializer {
 public:
  /// Fills with `value` (converted to the array's dtype).
  explicit Constant(double value) : value_(value) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double value_;
};
/// Every element 0 (Chainer's Zero).
class Zero : public Constant {
 public:
  Zero() : Constant(0.0) {}
};
/// Every element 1 (Chainer's One).
class One : public Constant {
 public:
  One() : Constant(1.0) {}
};
/// Every element NaN (Chainer's NaN: to find parameters a program forgot to initialize).
class NaN : public Constant {
 public:
  NaN();
};
/// scale times the identity; ValueError unless the array is a 2-d square matrix.
class Identity : public Initializer {
 public:
  /// `scale` multiplies the identity.
  explicit Identity(double scale = 1.0) : scale_(scale) {}
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
};
/// A scaled orthogonal system (Saxe et al.; the usual recurrent weight): the array, read as a
/// matrix (shape[0], prod(shape[1:])), gets rows (or, when it is taller than wide, columns) that
/// are orthogonal with norm `scale`: the Q of the QR decomposition of a standard normal draw, with
/// R's diagonal made positive. A 0-d array gets +-scale. `mode`: "auto" (any shape), "projection"
/// (ValueError unless rows <= columns), "embedding" (rows >= columns) or "basis" (square). ValueError
/// for an empty array or another mode.
class Orthogonal : public Initializer {
 public:
  /// ValueError for a mode other than "auto", "projection", "embedding" or "basis".
  explicit Orthogonal(double scale = 1.1, std::string mode = "auto");
  void operator()(const Array& array, Generator& gen) const override;
 private:
  double scale_;
  std::string mode_;
};
/// The bilinear upsampling filter of a deconvolution with stride (ksize + 1) / 2 (Long et al., as
/// Chainer's): W (in, out, k, ..., k) with in == out (one filter per channel on the diagonal) or
/// out == 1; ValueError for other shapes, unequal kernel sizes or an interpolation other than
/// "linear".
class UpsamplingDeconvFilter : public Initializer {
 public:
  /// ValueError for an interpolation other than "linear".
  explicit UpsamplingDeconvFilter(const std::string& interpolation = "linear");
  void operator()(const Array& array, Generator& gen) const override;
};
/// The same filter normalized to sum 1, for a downsampling convolution with stride (ksize + 1) / 2.
class DownsamplingConvFilter : public Initializer {
 public:
  /// ValueError for an interpolation other than "linear".
  explicit DownsamplingConvFilter(const std::string& interpolation = "linear");
  void operator()(const Array& array, Generator& gen) const override;
};

/// (fan_in, fan_out) of a parameter shape; ShapeError for fewer than 2 axes.
std::pair<double, double> get_fans(const Shape& shape);

}  // namespace rensa::initializers
