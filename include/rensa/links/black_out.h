#pragma once
/// \file
/// BlackOut: the BlackOut loss with its output embeddings and sampler (Chainer's L.BlackOut),
/// applying functions::black_out.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"
#include "rensa/links/walker_alias.h"

namespace rensa::links {

/// Options of BlackOut.
struct BlackOutOptions {
  /// Initializer of W; null fills it with NaN, as Chainer's Parameter without an initializer
  /// (set or load W before use).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Seed of the link's own generator for the samples; unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Parameter W (len(counts), in_size) of the Config dtype; a WalkerAlias sampler over counts.
/// forward(x (B, in_size), t (B,) int32/int64) draws samples (B, sample_size), or uses
/// `sample_data` when set (Chainer's attribute of that name), and returns
/// functions::black_out(x, t, W, samples) (the mean over the batch). The function's errors are
/// prefixed with "BlackOut: ".
class BlackOut : public Link {
 public:
  /// ValueError for in_size < 1, sample_size < 1 or bad counts (see WalkerAlias).
  BlackOut(int64_t in_size, const std::vector<double>& counts, int64_t sample_size, BlackOutOptions options = {});

  /// The BlackOut loss of x (B, in_size) and t (B,), the mean over the batch.
  Variable forward(const Variable& x, const Array& t);
  /// forward(inputs[0], inputs[1].array()); ValueError unless there are two inputs.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// forward(x, t) between the link hooks.
  Variable operator()(const Variable& x, const Array& t) {
    return call_forward({&x, 1}, [&] { return forward(x, t); });
  }

  /// The output embedding W (len(counts), in_size).
  const Variable& W() const { return W_; }
  /// The sampler of the negative ids (proportional to counts).
  const WalkerAlias& sampler() const { return sampler_; }
  /// Negative samples drawn per example.
  int64_t sample_size() const { return sample_size_; }
  /// Fixed samples (B, S) used instead of drawing; null (the default) draws.
  Array sample_data;

 private:
  int64_t sample_size_;
  WalkerAlias sampler_;
  std::optional<Generator> gen_;
  Variable W_;
};

}  // namespace rensa::links
