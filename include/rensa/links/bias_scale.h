#pragma once
/// \file
/// Bias and Scale: learned (or given) broadcast addition and multiplication (Chainer's L.Bias and
/// L.Scale).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/links/link.h"

namespace rensa::links {

/// With a shape: parameter b of that shape (zeros), and forward(x) = functions::bias(x, b, axis).
/// Without one: no parameter, and forward({x, y}) = functions::bias(x, y, axis). ValueError for
/// the wrong number of inputs.
class Bias : public Link {
 public:
  /// `axis`: the first axis of x that b (or y) matches; `shape` nullopt: no parameter.
  explicit Bias(int64_t axis = 1, std::optional<Shape> shape = std::nullopt);
  Variable forward(const Variable& x) override;
  Variable forward(const std::vector<Variable>& xs) override;
  using Link::forward;
  /// The parameter b, or a null Variable when b comes as an input.
  const Variable& b() const { return b_; }

 private:
  int64_t axis_;
  Variable b_;
};

/// With W_shape: parameter W of that shape (ones), forward(x) = functions::scale(x, W, axis).
/// Without: forward({x, y}) = functions::scale(x, y, axis). bias_term adds a child "bias", a Bias
/// of W_shape (or bias_shape when W comes as an input; ValueError when neither is given).
class Scale : public Chain {
 public:
  /// `axis` as Bias's; W_shape nullopt: W comes as an input. ValueError for bias_term with neither shape.
  explicit Scale(int64_t axis = 1, std::optional<Shape> W_shape = std::nullopt, bool bias_term = false,
                 const std::optional<Shape>& bias_shape = std::nullopt);
  Variable forward(const Variable& x) override;
  Variable forward(const std::vector<Variable>& xs) override;
  using Link::forward;
  /// The scale parameter W (null when it comes as an input).
  const Variable& W() const { return W_; }

 private:
  int64_t axis_;
  Variable W_;
  std::shared_ptr<Bias> bias_;
};

}  // namespace rensa::links
