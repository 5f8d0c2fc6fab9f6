#pragma once
/// \file
/// What the links with a weight W and an optional bias b share (Linear, the convolution links,
/// depthwise, local and deformable ones): initializers, the link's generator, lazy shapes, input
/// checks.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/core/random.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links::detail {

/// How W and b are drawn (the fields every such link's options have).
struct WeightInit {
  bool nobias = false;
  /// Null: the link's default (Chainer's for initialW=None).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Null: zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  std::optional<uint64_t> seed = std::nullopt;
};

/// The WeightInit fields of a link's options struct.
template <class Options>
WeightInit weight_init(const Options& o) {
  return {o.nobias, o.initialW, o.initial_bias, o.seed};
}

/// A link with parameters W and b (absent with nobias), registered in that order with the Config
/// dtype in force at construction, and drawn when the subclass knows their shapes.
class WeightBiasLink : public Link {
 public:
  /// The weight; its array is null until initialized.
  const Variable& W() const { return W_; }
  /// The bias, or a null Variable with nobias (its array may be null until initialized).
  const Variable& b() const { return b_; }

 protected:
  /// `name` names the link in errors; `default_W` replaces a null initialW. DtypeError when the
  /// config's dtype is not floating.
  WeightBiasLink(const char* name, WeightInit init, std::shared_ptr<const initializers::Initializer> default_W);
  /// Draws W of `shape` with initialW.
  void initialize_W(const Shape& shape);
  /// Draws b of `shape` with initial_bias (zeros without one); nothing with nobias.
  void initialize_b(const Shape& shape);
  bool W_pending() const { return W_.array().is_null(); }
  /// ShapeError naming the link, x and W unless x has `ndim` axes and `channels` on axis 1.
  void check_input(const Variable& x, int64_t ndim, int64_t channels) const;
  /// ShapeError naming the link and x unless x has `ndim` axes (to infer a lazy shape from).
  void check_lazy_input(const Variable& x, int64_t ndim, const char* what) const;

  const char* name_;
  Variable W_, b_;

 private:
  Generator& generator() { return gen_ ? *gen_ : default_generator(); }

  WeightInit init_;
  Dtype dtype_;
  std::optional<Generator> gen_;
};

}  // namespace rensa::links::detail
