#include "rensa/core/random.h"

#include <cmath>
#include <numbers>

#include "rensa/core/config.h"

namespace rensa {

Generator& default_generator() {
  thread_local Generator gen(config().seed);
  return gen;
}

void seed(uint64_t s) { default_generator().reseed(s); }

namespace detail {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace detail

namespace random {
namespace {
Array draw(const char* op, RandomDist dist, const Shape& shape, double p0, double p1, Dtype dtype, Device device,
           Generator* gen) {
  RENSA_CHECK(is_floating(dtype), DtypeError, op, ": expected a floating dtype, got ", dtype);
  Array out = Array::empty(shape, dtype, device);
  // Drawing advances the generator: a static graph's replay must draw anew, not repeat the trace's
  // numbers, so the whole draw is its step.
  auto draw_into = [=] {
    Generator& g = gen ? *gen : default_generator();
    const uint64_t offset = g.advance(static_cast<uint64_t>(out.size()));
    RENSA_KERNEL(device, random, op)(dist, out, g.seed(), offset, p0, p1);
  };
  if (detail::static_capturing() && detail::capture_open()) [[unlikely]] {
    detail::capture_use(out);
    detail::record_and_run(draw_into);
  } else {
    draw_into();
  }
  return out;
}
}  // namespace

Array uniform(const Shape& shape, double low, double high, Dtype dtype, Device device, Generator* gen) {
  RENSA_CHECK(low <= high, ValueError, "random::uniform: low ", low, " > high ", high);
  return draw("random::uniform", RandomDist::uniform, shape, low, high, dtype, device, gen);
}

Array normal(const Shape& shape, double mean, double stddev, Dtype dtype, Device device, Generator* gen) {
  RENSA_CHECK(stddev >= 0, ValueError, "random::normal: negative stddev ", stddev);
  return draw("random::normal", RandomDist::normal, shape, mean, stddev, dtype, device, gen);
}
}  // namespace random

namespace detail {

void philox4x32(uint64_t ctr, uint64_t seed, uint32_t out[4]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(ctr), c1 = static_cast<uint32_t>(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

double random_at(RandomDist dist, uint64_t ctr, uint64_t seed) {
  uint32_t r[4];
  philox4x32(ctr, seed, r);
  constexpr double kInv53 = 1.0 / 9007199254740992.0;  // 2^-53
  const uint64_t a = (static_cast<uint64_t>(r[0]) << 21) ^ (r[1] >> 11);
  const double u1 = static_cast<double>(a & ((uint64_t{1} << 53) - 1)) * kInv53;
  if (dist == RandomDist::uniform) return u1;
  const uint64_t b = (static_cast<uint64_t>(r[2]) << 21) ^ (r[3] >> 11);
  const double u2 = static_cast<double>(b & ((uint64_t{1} << 53) - 1)) * kInv53;
  // Box-Muller on (0, 1]: 1 - u1 avoids log(0).
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace detail
}  // namespace rensa
