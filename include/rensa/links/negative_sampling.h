#pragma once
/// \file
/// NegativeSampling: the negative sampling loss with its output embeddings and sampler (Chainer's
/// L.NegativeSampling), applying functions::negative_sampling.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/links/link.h"
#include "rensa/links/walker_alias.h"

namespace rensa::links {

/// Options of NegativeSampling.
struct NegativeSamplingOptions {
  /// The sampler draws id i with probability proportional to counts[i]^power.
  double power = 0.75;
  /// Seed of the link's own generator for the samples; unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Parameter W (len(counts), in_size) of the Config dtype, zeros as Chainer's; a WalkerAlias
/// sampler over counts^power. forward(x (B, in_size), t (B,) int32/int64, reduce "sum" or "no")
/// is functions::negative_sampling(x, t, W, sampler, sample_size, reduce); `samples` receives the
/// (B, sample_size + 1) ids used (Chainer's return_samples). The function's errors are prefixed
/// with "NegativeSampling: ".
class NegativeSampling : public Link {
 public:
  /// ValueError for in_size < 1, sample_size < 0 or bad counts (see WalkerAlias).
  NegativeSampling(int64_t in_size, const std::vector<double>& counts, int64_t sample_size,
                   NegativeSamplingOptions options = {});

  /// The loss of x (B, in_size) and t (B,); `reduce` "sum" or "no"; `samples`, if not null, receives the ids used.
  Variable forward(const Variable& x, const Array& t, std::string_view reduce = "sum", Array* samples = nullptr);
  /// forward(inputs[0], inputs[1].array()); ValueError unless there are two inputs.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// forward(x, t, reduce) between the link hooks.
  Variable operator()(const Variable& x, const Array& t, std::string_view reduce = "sum") {
    return call_forward({&x, 1}, [&] { return forward(x, t, reduce); });
  }

  /// The embedding parameter W (len(counts), in_size).
  const Variable& W() const { return W_; }
  /// The sampler of the negative ids (counts^power).
  const WalkerAlias& sampler() const { return sampler_; }
  /// Negative samples drawn per example.
  int64_t sample_size() const { return sample_size_; }

 private:
  int64_t sample_size_;
  WalkerAlias sampler_;
  std::optional<Generator> gen_;
  Variable W_;
};

}  // namespace rensa::links
