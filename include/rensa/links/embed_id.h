#pragma once
/// \file
/// EmbedID: a lookup table of vectors indexed by integer ids (Chainer's L.EmbedID), applying
/// functions::embed_id.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/random.h"
#include "rensa/core/variable.h"
#include "rensa/functions/embed_id.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of EmbedID.
struct EmbedIDOptions {
  /// Ids equal to this give zero vectors (and no gradient).
  std::optional<int64_t> ignore_label = std::nullopt;
  /// Initializer of W; null means Normal(1.0).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Seed of the generator drawing W; unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Embedding layer: parameter W (in_size, out_size) of the Config dtype; forward(x) maps integer
/// ids x to rows of W (functions::embed_id).
class EmbedID : public Link {
 public:
  /// ValueError for a negative size.
  EmbedID(int64_t in_size, int64_t out_size, EmbedIDOptions options = {});
  /// Rows of W for the ids in x (x's array must be int32 or int64).
  Variable forward(const Variable& x) override;
  using Link::forward;

  /// The embedding matrix W (in_size, out_size).
  const Variable& W() const { return W_; }
  /// The id that gives zero vectors, if any.
  std::optional<int64_t> ignore_label() const { return ignore_label_; }

 private:
  std::optional<int64_t> ignore_label_;
  Variable W_;
};

}  // namespace rensa::links
