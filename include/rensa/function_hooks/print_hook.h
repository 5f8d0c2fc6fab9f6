#pragma once
/// \file
/// PrintHook (Chainer's function_hooks.PrintHook): prints each function's inputs before its
/// forward, and its inputs and output gradients before its backward.

#include <iosfwd>
#include <string>

#include "rensa/core/function_hook.h"

namespace rensa::function_hooks {

/// Writes, before every forward and backward on the installing thread, "function\t<label>", then
/// "input data" and Variable::debug_print() of each input ("(removed)" for one gone by backward),
/// and before a backward "output gradient" and each gradient (as a Variable of zeros whose grad
/// it is, as Chainer). Each line ends with `end`; the stream is flushed after each function when
/// `flush`. The stream must outlive the hook.
class PrintHook : public FunctionHook {
 public:
  /// Prints to `os`, ending each line with `end` and flushing after each function when `flush`.
  explicit PrintHook(std::ostream& os, std::string end = "\n", bool flush = true);
  /// Prints to standard output.
  PrintHook();
  std::string name() const override { return "PrintHook"; }
  void forward_preprocess(const ForwardCall& call) override;
  void backward_preprocess(const BackwardCall& call) override;

 private:
  std::ostream& os_;
  std::string end_;
  bool flush_;
};

}  // namespace rensa::function_hooks
