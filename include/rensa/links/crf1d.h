#pragma once
/// \file
/// CRF1d: the linear-chain conditional random field loss with its transition costs (Chainer's
/// L.CRF1d), applying functions::crf1d and argmax_crf1d.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of CRF1d.
struct CRF1dOptions {
  /// Initializer of cost; null means zeros, as Chainer.
  std::shared_ptr<const initializers::Initializer> initial_cost = nullptr;
  /// Seed of the generator drawing cost; unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Parameter cost (n_label, n_label) of the Config dtype. Without `transpose`, xs and ys are
/// time-major as functions::crf1d takes them (xs[t] (B_t, n_label), B_0 >= B_1 >= ...). With
/// `transpose`, they are batch-major, one (L_i, n_label) score array and one (L_i,) label array
/// per sequence, in any order: the link sorts them by decreasing length (ties keep their order)
/// and transposes them, as Chainer. The function's errors are prefixed with "CRF1d: ".
class CRF1d : public Link {
 public:
  /// ValueError for n_label < 1.
  explicit CRF1d(int64_t n_label, CRF1dOptions options = {});

  /// functions::crf1d(cost, xs, ys, reduce). With transpose and reduce "no", the losses are in
  /// the sorted order, as Chainer returns them.
  Variable forward(const std::vector<Variable>& xs, const std::vector<Array>& ys, std::string_view reduce = "mean",
                   bool transpose = false);
  /// functions::argmax_crf1d(cost, xs): the best paths' scores and the paths. With transpose the
  /// paths are batch-major in the order of xs (one int64 (L_i,) array per sequence) while the
  /// scores stay in the sorted order, as Chainer.
  std::pair<Variable, std::vector<Array>> argmax(const std::vector<Variable>& xs, bool transpose = false);

  /// The transition cost parameter (n_label, n_label).
  const Variable& cost() const { return cost_; }

 private:
  Variable cost_;
};

}  // namespace rensa::links
