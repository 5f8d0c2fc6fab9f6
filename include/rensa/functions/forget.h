#pragma once
/// \file
/// forget (Chainer's F.forget): trades computation for memory by keeping no intermediate results of
/// a function and recomputing them during backward.

#include <functional>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// A function forget can call: Variables in, Variables out.
using ForgetFunction = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

/// func(xs), run without recording a graph, so none of func's intermediate arrays stay alive; the
/// result is one recorded node holding only xs. Its backward calls func again on copies of the
/// inputs with recording on and backpropagates through that graph. func must be deterministic
/// (give the same outputs when called twice). As in Chainer, the backward itself cannot be
/// differentiated: a double backward through forget throws NotImplementedError. ValueError for an
/// empty func, a null input, or func returning no output or a null one.
std::vector<Variable> forget(const ForgetFunction& func, const std::vector<Variable>& xs);

}  // namespace rensa::functions
