// BatchNormalization (running or population statistics) and LayerNormalization layers.
#include "rensa/links/normalization.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "rensa/links/mixed_precision.h"

namespace rensa::links {
namespace F = rensa::functions;

BatchNormalization::BatchNormalization(int64_t size, BatchNormalizationOptions options)
    : size_(size), options_(options), finetune_(options.finetune) {
  RENSA_CHECK(size >= 0, ValueError, "BatchNormalization: size must be non-negative, got ", size);
  RENSA_CHECK(options.decay >= 0.0 && options.decay <= 1.0, ValueError,
              "BatchNormalization: decay must be in [0, 1], got ", options.decay);
  RENSA_CHECK(options.eps > 0.0, ValueError, "BatchNormalization: eps must be positive, got ", options.eps);
  set_ghost_batch_size(options.ghost_batch_size);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "BatchNormalization: parameters need a floating dtype, the config's is ",
              dtype);
  if (options.use_gamma) gamma_ = add_param("gamma", Array::full({size}, 1.0, dtype, device_));
  if (options.use_beta) beta_ = add_param("beta", Array::zeros({size}, dtype, device_));
  add_persistent("avg_mean", Array::zeros({size}, dtype, device_));
  add_persistent("avg_var", Array::full({size}, 1.0, dtype, device_));
  add_persistent("N", Array::zeros({}, Dtype::int64, device_));
}

int64_t BatchNormalization::n_batches() {
  return persistent("N").to(Device::cpu()).to_vector<int64_t>()[0];
}

void BatchNormalization::start_finetuning() {
  persistent("N").fill(0.0);
}

void BatchNormalization::set_ghost_batch_size(std::optional<int64_t> ghost_batch_size) {
  RENSA_CHECK(!ghost_batch_size || *ghost_batch_size > 0, ValueError,
              "BatchNormalization: ghost_batch_size must be positive, got ", ghost_batch_size.value_or(0));
  options_.ghost_batch_size = ghost_batch_size;
}

double BatchNormalization::training_decay() {
  if (!finetune_) return options_.decay;
  Array& n = persistent("N");
  const int64_t count = n_batches() + 1;
  n.fill(static_cast<double>(count));
  return 1.0 - 1.0 / static_cast<double>(count);
}

void BatchNormalization::check_input(const char* op, const Variable& x) const {
  RENSA_CHECK(!x.is_null() && x.ndim() >= 2 && x.shape()[1] == size_, ShapeError, op, ": x ",
              x.is_null() ? Shape() : x.shape(), " does not have ", size_, " channels on axis 1");
}

Variable BatchNormalization::forward(const Variable& x) {
  check_input("BatchNormalization", x);
  Array& mean = persistent("avg_mean");
  Array& var = persistent("avg_var");
  // Under a mixed policy x is 16-bit and the parameters and statistics float32. The fused training
  // form takes that mix as it is (statistics in double, y in x's dtype); otherwise normalize in
  // float32.
  const bool mixed_fused = config().train && !allreduce_sum_ && is_half(x.dtype()) && mean.dtype() == Dtype::float32;
  auto normalize = [&](const Variable& xs) {
    if (!config().train) {
      return F::fixed_batch_normalization(xs, gamma_, beta_, Variable(mean.astype(xs.dtype())),
                                          Variable(var.astype(xs.dtype())), {options_.eps});
    }
    F::BatchNormOptions bn_options{options_.eps};
    bn_options.allreduce_sum = allreduce_sum_;
    bn_options.ghost_batch_size = options_.ghost_batch_size;
    F::BatchNormResult r = F::batch_normalization(xs, gamma_, beta_, bn_options);
    const double decay = training_decay();
    // The running variance is unbiased: m / (m - 1) times the batch's (m over every worker's batch,
    // or over one ghost sub-batch).
    const int64_t m = r.count;
    const double unbias = m > 1 ? static_cast<double>(m) / static_cast<double>(m - 1) : 1.0;
    {
      auto guard = no_backprop_mode();
      if (options_.ghost_batch_size) {
        // One update with the sub-batches' mean statistics: the mean of K workers' updates.
        r.mean = F::mean(Variable(r.mean), Shape{0}).array();
        r.var = F::mean(Variable(r.var), Shape{0}).array();
      }
      const Variable new_mean =
          F::add(F::mul(Variable(mean), decay), F::mul(Variable(r.mean.astype(mean.dtype())), 1.0 - decay));
      const Variable new_var =
          F::add(F::mul(Variable(var), decay), F::mul(Variable(r.var.astype(var.dtype())), (1.0 - decay) * unbias));
      mean.assign(new_mean.array());
      var.assign(new_var.array());
    }
    return r.y;
  };
  return mixed_fused ? normalize(x) : in_param_dtype(x, mean.dtype(), normalize);
}

BatchRenormalization::BatchRenormalization(int64_t size, double rmax, double dmax, BatchNormalizationOptions options)
    : BatchNormalization(size, options), rmax_(rmax), dmax_(dmax) {
  RENSA_CHECK(rmax >= 1.0 && dmax >= 0.0, ValueError, "BatchRenormalization: need rmax >= 1 and dmax >= 0, got rmax ",
              rmax, " and dmax ", dmax);
  RENSA_CHECK(!options.ghost_batch_size, ValueError, "BatchRenormalization: ghost_batch_size is not supported");
}

Variable BatchRenormalization::forward(const Variable& x) {
  check_input("BatchRenormalization", x);
  if (!config().train) return BatchNormalization::forward(x);
  RENSA_CHECK(!allreduce_sum(), ValueError, "BatchRenormalization: statistics over several workers are not supported");
  RENSA_CHECK(!ghost_batch_size(), ValueError, "BatchRenormalization: ghost_batch_size is not supported");
  const double decay = training_decay();
  return F::batch_renormalization(x, gamma(), beta(), rmax_, dmax_, &avg_mean(), &avg_var(), decay, true,
                                  {options().eps});
}

GroupNormalization::GroupNormalization(int64_t groups, int64_t size, double eps)
    : groups_(groups), eps_(eps), dtype_(get_dtype()) {
  RENSA_CHECK(groups > 0, ValueError, "GroupNormalization: groups must be positive, got ", groups);
  RENSA_CHECK(size >= 0, ValueError, "GroupNormalization: size must be non-negative, got ", size);
  RENSA_CHECK(eps > 0.0, ValueError, "GroupNormalization: eps must be positive, got ", eps);
  RENSA_CHECK(is_floating(dtype_), DtypeError, "GroupNormalization: parameters need a floating dtype, the config's is ",
              dtype_);
  gamma_ = add_param("gamma", dtype_);
  beta_ = add_param("beta", dtype_);
  if (size > 0) initialize(size);
}

void GroupNormalization::initialize(int64_t size) {
  gamma_.set_array(Array::full({size}, 1.0, dtype_, device_));
  beta_.set_array(Array::zeros({size}, dtype_, device_));
}

Variable GroupNormalization::forward(const Variable& x) {
  if (gamma_.array().is_null()) {
    RENSA_CHECK(!x.is_null() && x.ndim() >= 2, ShapeError, "GroupNormalization: cannot infer size from x ",
                x.is_null() ? Shape() : x.shape());
    initialize(x.shape()[1]);
  }
  return in_param_dtype(x, dtype_,
                        [&](const Variable& xs) { return F::group_normalization(xs, groups_, gamma_, beta_, eps_); });
}

LayerNormalization::LayerNormalization(int64_t size, double eps) : eps_(eps), dtype_(get_dtype()) {
  RENSA_CHECK(size >= 0, ValueError, "LayerNormalization: size must be non-negative, got ", size);
  RENSA_CHECK(eps > 0.0, ValueError, "LayerNormalization: eps must be positive, got ", eps);
  RENSA_CHECK(is_floating(dtype_), DtypeError, "LayerNormalization: parameters need a floating dtype, the config's is ",
              dtype_);
  gamma_ = add_param("gamma", dtype_);
  beta_ = add_param("beta", dtype_);
  if (size > 0) initialize(size);
}

void LayerNormalization::initialize(int64_t size) {
  gamma_.set_array(Array::full({size}, 1.0, dtype_, device_));
  beta_.set_array(Array::zeros({size}, dtype_, device_));
}

Variable LayerNormalization::forward(const Variable& x) {
  if (gamma_.array().is_null()) {
    RENSA_CHECK(!x.is_null() && x.ndim() >= 1, ShapeError, "LayerNormalization: cannot infer size from x ",
                x.is_null() ? Shape() : x.shape());
    initialize(x.shape().back());
  }
  return in_param_dtype(x, dtype_,
                        [&](const Variable& xs) { return F::layer_normalization(xs, gamma_, beta_, eps_); });
}

}  // namespace rensa::links
