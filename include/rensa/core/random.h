#pragma once
/// \file
/// Seeded, counter-based random numbers (Philox-4x32-10): the same seed gives the same numbers on
/// every run, machine, backend and thread count.

#include <cstdint>

#include "rensa/core/array.h"
#include "rensa/core/backend.h"

namespace rensa {

/// A random generator: a seed and a position (counter) in its stream. Drawing n numbers advances the
/// counter by n, so results never depend on how the work is split among threads.
class Generator {
 public:
  /// A generator at the start (counter 0) of the stream of `seed`.
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  /// The seed the stream is keyed by.
  uint64_t seed() const { return seed_; }
  /// Numbers drawn so far.
  uint64_t offset() const { return offset_; }
  /// Moves to position `offset` of the stream (restoring a saved generator).
  void set_offset(uint64_t offset) { offset_ = offset; }
  /// Reserves `n` numbers; returns the counter of the first.
  uint64_t advance(uint64_t n) {
    const uint64_t o = offset_;
    offset_ += n;
    return o;
  }
  /// Restarts the stream with a new seed.
  void reseed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The calling thread's default generator, seeded from Config::seed at first use.
Generator& default_generator();
/// Reseeds the calling thread's default generator.
void seed(uint64_t seed);

namespace random {
/// Uniform numbers in [low, high) of a floating dtype.
Array uniform(const Shape& shape, double low = 0.0, double high = 1.0, Dtype dtype = Dtype::float32,
              Device device = Device::cpu(), Generator* gen = nullptr);
/// Normal numbers with the given mean and standard deviation, of a floating dtype.
Array normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, Dtype dtype = Dtype::float32,
             Device device = Device::cpu(), Generator* gen = nullptr);
}  // namespace random

namespace detail {
/// Philox-4x32-10 block for counter `ctr` and key `seed`.
void philox4x32(uint64_t ctr, uint64_t seed, uint32_t out[4]);
/// The double drawn at counter `ctr`: uniform in [0, 1) or standard normal.
double random_at(RandomDist dist, uint64_t ctr, uint64_t seed);
/// splitmix64 (Steele et al.): a well-mixed 64-bit value from `x`, for deriving one stream's seed
/// from a seed and a key (an epoch, a parameter, a step).
uint64_t splitmix64(uint64_t x);
}  // namespace detail

}  // namespace rensa
