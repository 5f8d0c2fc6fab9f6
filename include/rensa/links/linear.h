#pragma once
/// \file
/// Linear: the fully connected layer y = x W^T + b (Chainer's L.Linear), with lazy in_size.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/links/initializers.h"
#include "rensa/links/weight_bias_link.h"

namespace rensa::links {

/// Options of Linear.
struct LinearOptions {
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator for drawing parameters (also at lazy initialization). Unset:
  /// the calling thread's default generator (rensa::default_generator()) at the time of drawing.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Fully connected layer: parameters W (out_size, in_size) and b (out_size,), created with the
/// Config dtype in force at construction, on the link's device. forward(x) is
/// functions::linear(x, W, b): x (N, ...) is read as (N, -1). W() and b() (WeightBiasLink): W's
/// array is null until initialized; b is a null Variable with nobias.
class Linear : public detail::WeightBiasLink {
 public:
  /// A layer with known input size.
  Linear(int64_t in_size, int64_t out_size, const LinearOptions& options = {});
  /// A layer whose in_size is inferred from the first input (W is uninitialized until then; b is
  /// created now).
  explicit Linear(int64_t out_size, const LinearOptions& options = {});

  /// y = x W^T + b. Initializes W from x's shape at the first call when in_size is unknown.
  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Input size, or -1 while W is uninitialized (W may also be initialized by copyparams or by
  /// loading).
  int64_t in_size() const { return W_.array().is_null() ? -1 : W_.shape()[1]; }
  /// Output size.
  int64_t out_size() const { return out_size_; }

 protected:
  /// Creates W from x's shape when in_size is still unknown (ShapeError when x cannot tell).
  void ensure_initialized(const Variable& x);
  /// Draws W (out_size, in_size) with its initializer.
  void initialize_W(int64_t in_size);

 private:
  int64_t out_size_;
};

}  // namespace rensa::links
