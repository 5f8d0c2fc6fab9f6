#pragma once
// Helpers shared by the distribution families: parameter checks, constant Variables, comparison
// masks, Chainer's x log x with 0 log 0 = 0, and the per-element random streams of the samplers.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/core/variable.h"

namespace rensa::distributions::detail {

// Broadcasts the named parameters to one shape. DtypeError unless all share one floating dtype,
// ShapeError naming the class and every shape when they do not broadcast.
std::vector<Variable> broadcast_params(const std::string& cls,
                                       const std::vector<std::pair<const char*, Variable>>& named);

// Checks one parameter of a family whose batch axes end before the last: floating and at least 1-d.
void check_vector_param(const std::string& cls, const char* what, const Variable& v);

// A constant (no gradient) of v's dtype and `shape` (v's shape when empty), filled with `value`.
Variable constant(const Variable& v, double value, const Shape& shape = {});

// cmp(a, b) elementwise over the broadcast shape of a and b, as a bool Array.
Array compare(const Array& a, const Array& b, const std::function<bool(double, double)>& cmp);

// x log x with 0 log 0 = 0 (Chainer's _modified_xlogx); its gradient is 1 + log x where x > 0.
Variable modified_xlogx(const Variable& x);

// log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b).
Variable lbeta(const Variable& a, const Variable& b);

// The generator to draw from: gen, or the calling thread's default.
Generator& generator_or_default(Generator* gen);

// ValueError naming the class when n is negative.
void check_sample_count(const std::string& cls, int64_t n);

// One element's random stream: uniform and normal draws at successive counters of its own key.
class Stream {
 public:
  explicit Stream(uint64_t key) : key_(key) {}
  double uniform();       // [0, 1)
  double open_uniform();  // (0, 1)
  double normal();
  double exponential();
  double gamma(double k);  // Gamma(k, 1): Marsaglia and Tsang, boosted for k < 1
  double poisson(double lam);
  double geometric(double p);

 private:
  uint64_t key_;
  uint64_t ctr_ = 0;
};

// Draws n x batch elements: out[s, i] = draw(params[i], stream of (s, i)), params being each
// Array of `params` broadcast to `batch` and read as doubles. Each element has its own stream, so
// the draws do not depend on how rejection loops run. Advances gen by the element count.
Array draw_elementwise(int64_t n, const Shape& batch, Dtype dtype, const std::vector<Array>& params, Generator& gen,
                       const std::function<double(const double* p, Stream& s)>& draw);

// Draws n x rows vectors, a row being the last axis of params (k values): draw(row's k parameters,
// stream, out_k outputs). The result is (n,) + params.shape[:-1] + (out_k,).
Array draw_rows(int64_t n, const Array& params, int64_t out_k, Dtype dtype, Generator& gen,
                const std::function<void(const double* p, int64_t k, Stream& s, double* out)>& draw);

// The index drawn from a row of k non-negative weights (not necessarily normalized); ValueError
// naming `what` for a negative or NaN weight or a row summing to 0.
int64_t draw_category(const double* p, int64_t k, Stream& s, const char* what);

// True when any element of the bool Array is set.
bool any(const Array& mask);

}  // namespace rensa::distributions::detail
