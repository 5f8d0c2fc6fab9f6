#pragma once
/// \file
/// Bilinear: the bilinear layer of neural tensor networks (Chainer's L.Bilinear).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of Bilinear, in Chainer's argument order.
struct BilinearOptions {
  /// No V1, V2 and b: the output is the bilinear term alone.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Chainer's tuple (initialV1, initialV2, initialb), a null entry meaning LeCunNormal(). Unset:
  /// LeCunNormal for V1 and V2 and zeros for b.
  std::optional<std::array<std::shared_ptr<const initializers::Initializer>, 3>> initial_bias = std::nullopt;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Parameters W (left_size, right_size, out_size) and, unless nobias, V1 (left_size, out_size), V2
/// (right_size, out_size) and b (out_size,), registered in that order with the Config dtype in
/// force at construction. forward(e1, e2) is functions::bilinear: e1 (N, left_size...) and e2 (N,
/// right_size...) (flattened after the first axis) give (N, out_size). Bad inputs throw the
/// ShapeError of functions::bilinear, prefixed with "Bilinear: ". No lazy form (as Chainer).
class Bilinear : public Link {
 public:
  /// ValueError for sizes below 1 (Chainer accepts 0).
  Bilinear(int64_t left_size, int64_t right_size, int64_t out_size, BilinearOptions options = {});

  /// (N, out_size) from e1 (N, left_size...) and e2 (N, right_size...).
  Variable forward(const Variable& e1, const Variable& e2);
  /// forward(inputs[0], inputs[1]); ValueError unless there are two inputs.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// forward(e1, e2) between the link hooks.
  Variable operator()(const Variable& e1, const Variable& e2) {
    const Variable args[] = {e1, e2};
    return call_forward(args, [&] { return forward(e1, e2); });
  }

  /// The bilinear weight W (left_size, right_size, out_size).
  const Variable& W() const { return W_; }
  /// V1, V2 and b are null Variables with nobias.
  const Variable& V1() const { return V1_; }
  /// The linear weight of e2, (right_size, out_size).
  const Variable& V2() const { return V2_; }
  /// The bias (out_size,).
  const Variable& b() const { return b_; }

 private:
  Variable W_, V1_, V2_, b_;
};

}  // namespace rensa::links
