#include "rensa/testing/gradient_check.h"

#include <cmath>
#include <sstream>

#include "rensa/core/backward.h"
#include "rensa/core/config.h"
#include "rensa/core/random.h"

namespace rensa::testing {
namespace {

double dot(const Array& a, const Array& b) {
  const auto va = a.to(Device::cpu()).to_vector<double>();
  const auto vb = b.to(Device::cpu()).to_vector<double>();
  double s = 0.0;
  for (std::size_t i = 0; i < va.size(); ++i) s += va[i] * vb[i];
  return s;
}

bool has_overlap(const Array& a) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (a.shape()[static_cast<std::size_t>(i)] > 1 && a.strides()[static_cast<std::size_t>(i)] == 0) return true;
  }
  return false;
}

// x_i + scale * d_i written into x_i's own memory (layout kept).
void write_shifted(const Array& target, const Array& base, const Array& dir, double scale) {
  const auto vb = base.to_vector<double>();
  const auto vd = dir.to_vector<double>();
  std::vector<double> v(vb.size());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = vb[k] + scale * vd[k];
  target.assign(Array::from_vector(v, target.shape(), Device::cpu()).astype(target.dtype()).to(target.device()));
}

double objective(const TestFunction& f, const std::vector<Variable>& xs, const std::vector<Array>& gys) {
  // Recording stays as the caller set it: a function that calls rensa::grad inside needs its graph.
  auto ys = f(xs);
  RENSA_CHECK(ys.size() == gys.size(), AssertionError, "check_backward: the function returned ", ys.size(),
              " outputs on a perturbed input but ", gys.size(), " before");
  double s = 0.0;
  for (std::size_t j = 0; j < ys.size(); ++j) {
    if (ys[j].is_null() || !is_floating(ys[j].dtype())) continue;
    s += dot(ys[j].array(), gys[j]);
  }
  return s;
}

bool checked(const CheckOptions& o, std::size_t i, const Array& x) {
  return is_floating(x.dtype()) && !(i < o.no_grads.size() && o.no_grads[i]);
}

}  // namespace

void check_backward(const TestFunction& f, const std::vector<Array>& inputs, const std::vector<Array>& grad_outputs,
                    const CheckOptions& options) {
  // f may differentiate inside (rensa::grad), so it always runs with recording on.
  auto recording = force_backprop_mode();
  Generator gen(options.seed);
  // Own copies of the inputs keep the caller's arrays untouched; copies keep the layout.
  std::vector<Array> xs;
  std::vector<Variable> vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Array& a = inputs[i];
    RENSA_CHECK(!has_overlap(a), ValueError, "check_backward: input ", i, " has stride-0 (overlapping) axes, shape ",
                a.shape());
    Array own = a;
    if (!a.is_null() && a.size() > 0) {
      if (a.is_contiguous()) {
        own = a.copy();
      } else {
        own = make_noncontiguous(a);  // fresh memory, still non-contiguous
      }
    }
    xs.push_back(own);
    vars.emplace_back(own, checked(options, i, a));
  }

  std::vector<Variable> ys = f(vars);
  std::vector<Array> gys = grad_outputs;
  if (gys.empty()) {
    for (const auto& y : ys) {
      gys.push_back(y.is_null() || !is_floating(y.dtype())
                        ? Array()
                        : random::normal(y.shape(), 0.0, 1.0, y.dtype(), Device::cpu(), &gen).to(y.device()));
    }
  }
  RENSA_CHECK(gys.size() == ys.size(), ValueError, "check_backward: ", ys.size(), " outputs but ", gys.size(),
              " grad_outputs");
  std::vector<Variable> outs, seeds;
  // Outputs that are inputs themselves (an identity, e.g. the first-order gradient of add): their
  // grad_output is the gradient of that input, added to the analytic side below.
  std::vector<std::pair<std::size_t, std::size_t>> passthrough;  // (input, output)
  for (std::size_t j = 0; j < ys.size(); ++j) {
    if (ys[j].is_null() || gys[j].is_null()) continue;
    RENSA_CHECK(gys[j].shape() == ys[j].shape(), ShapeError, "check_backward: grad_output ", j, " has shape ",
                gys[j].shape(), " but output ", j, " has shape ", ys[j].shape());
    if (!ys[j].creator()) {  // a constant output contributes nothing, an input passes its gradient through
      for (std::size_t i = 0; i < vars.size(); ++i) {
        if (ys[j].is(vars[i])) passthrough.emplace_back(i, j);
      }
      continue;
    }
    outs.push_back(ys[j]);
    seeds.emplace_back(gys[j].astype(ys[j].dtype()).to(ys[j].device()));
  }
  if (!outs.empty()) backward(outs, seeds);

  std::ostringstream report;
  double analytic = 0.0;
  std::vector<Array> dirs(xs.size());
  double norm2 = 0.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].is_null()) continue;
    const Variable g = vars[i].grad();
    if (!checked(options, i, xs[i])) {
      RENSA_CHECK(g.is_null() || !is_floating(xs[i].dtype()) || (i < options.no_grads.size() && options.no_grads[i]),
                  AssertionError, "check_backward: input ", i, " should get no gradient");
      RENSA_CHECK(is_floating(xs[i].dtype()) || g.is_null(), AssertionError, "check_backward: integer input ", i,
                  " (", xs[i].dtype(), ") received a gradient");
      continue;
    }
    if (!g.is_null()) {
      RENSA_CHECK(g.shape() == xs[i].shape() && g.dtype() == xs[i].dtype(), AssertionError,
                  "check_backward: gradient of input ", i, " is ", g.shape(), " ", g.dtype(), " but the input is ",
                  xs[i].shape(), " ", xs[i].dtype());
    }
    dirs[i] = random::normal(xs[i].shape(), 0.0, 1.0, Dtype::float64, Device::cpu(), &gen);
    norm2 += dot(dirs[i], dirs[i]);
  }
  const double norm = norm2 > 0 ? std::sqrt(norm2) : 1.0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (dirs[i].is_null()) continue;
    auto v = dirs[i].to_vector<double>();
    for (double& e : v) e /= norm;
    dirs[i] = Array::from_vector(v, dirs[i].shape());
    const Variable g = vars[i].grad();
    if (!g.is_null()) analytic += dot(g.array(), dirs[i]);
  }
  for (const auto& [i, j] : passthrough) {
    if (!dirs[i].is_null()) analytic += dot(gys[j], dirs[i]);
  }

  std::vector<Array> base(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!dirs[i].is_null()) base[i] = xs[i].to(Device::cpu()).copy();
  }
  auto shift = [&](double s) {
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (!dirs[i].is_null()) write_shifted(xs[i], base[i], dirs[i], s);
    }
  };
  // Fresh variables, requiring grad as the checked ones did (a function may differentiate inside).
  std::vector<Variable> plain;
  for (std::size_t i = 0; i < xs.size(); ++i) plain.emplace_back(xs[i], checked(options, i, xs[i]));
  shift(options.eps);
  const double lp = objective(f, plain, gys);
  shift(-options.eps);
  const double lm = objective(f, plain, gys);
  shift(0.0);
  const double numerical = (lp - lm) / (2.0 * options.eps);

  if (!(std::abs(numerical - analytic) <= options.atol + options.rtol * std::abs(numerical))) {
    report << "check_backward: gradients differ: numerical " << numerical << ", analytic (backward) " << analytic
           << ", |diff| " << std::abs(numerical - analytic) << " > atol " << options.atol << " + rtol "
           << options.rtol << " * |numerical|; inputs:";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      report << " #" << i << ' ';
      if (xs[i].is_null()) {
        report << "null";
        continue;
      }
      report << xs[i].shape() << ' ' << xs[i].dtype();
      const Variable g = vars[i].grad();
      if (!dirs[i].is_null()) report << " <grad,d>=" << (g.is_null() ? 0.0 : dot(g.array(), dirs[i]));
    }
    throw AssertionError(report.str());
  }
}

void check_backward(const std::function<Variable(const Variable&)>& f, const Array& x, const Array& grad_output,
                    const CheckOptions& options) {
  TestFunction g = [&](const std::vector<Variable>& xs) { return std::vector<Variable>{f(xs[0])}; };
  std::vector<Array> gys;
  if (!grad_output.is_null()) gys.push_back(grad_output);
  check_backward(g, {x}, gys, options);
}

void check_double_backward(const TestFunction& f, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs, const std::vector<Array>& grad_grad_inputs,
                           const CheckOptions& options) {
  const std::size_t n_in = inputs.size();
  std::vector<std::size_t> float_inputs;
  for (std::size_t i = 0; i < n_in; ++i) {
    if (checked(options, i, inputs[i])) float_inputs.push_back(i);
  }
  TestFunction first_order = [&, n_in](const std::vector<Variable>& args) {
    std::vector<Variable> xs(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n_in));
    std::vector<Variable> gys(args.begin() + static_cast<std::ptrdiff_t>(n_in), args.end());
    auto guard = force_backprop_mode();
    // Inputs that are constants in the outer check still need a graph here.
    std::vector<Variable> targets;
    for (std::size_t i : float_inputs) {
      Variable x = xs[i];
      if (!x.requires_grad() && !x.creator()) {
        x = Variable(x.array(), true);
        xs[i] = x;
      }
      targets.push_back(x);
    }
    std::vector<Variable> ys = f(xs);
    return grad(ys, targets, gys, {.enable_double_backprop = true});
  };
  std::vector<Array> args = inputs;
  args.insert(args.end(), grad_outputs.begin(), grad_outputs.end());
  CheckOptions o = options;
  o.no_grads.resize(args.size(), false);
  check_backward(first_order, args, grad_grad_inputs, o);
}

Array make_noncontiguous(const Array& a) {
  if (a.ndim() == 0 || a.size() == 0) return a.copy();
  Shape big = a.shape();
  big[big.size() - 1] *= 2;
  Array buf = Array::zeros(big, a.dtype(), a.device());
  Array view = buf.slice(a.ndim() - 1, 0, std::nullopt, 2);
  view.assign(a);
  return view;
}

}  // namespace rensa::testing
