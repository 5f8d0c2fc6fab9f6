#include "rensa/function_hooks/print_hook.h"

#include <iostream>

#include "rensa/core/function_node.h"

namespace rensa::function_hooks {

PrintHook::PrintHook(std::ostream& os, std::string end, bool flush) : os_(os), end_(std::move(end)), flush_(flush) {}
PrintHook::PrintHook() : PrintHook(std::cout) {}

void PrintHook::forward_preprocess(const ForwardCall& call) {
  os_ << "function\t" << call.label << end_ << "input data" << end_;
  for (const Variable& x : call.inputs) os_ << (x.is_null() ? std::string("(removed)") : x.debug_print()) << end_;
  if (flush_) os_.flush();
}

void PrintHook::backward_preprocess(const BackwardCall& call) {
  os_ << "function\t" << call.node.label() << end_ << "input data" << end_;
  for (const auto& in : call.node.inputs()) {
    auto impl = in ? in->variable.lock() : nullptr;
    os_ << (impl ? Variable(impl).debug_print() : std::string("(removed)")) << end_;
  }
  os_ << "output gradient" << end_;
  for (const Variable& gy : call.grad_outputs) {
    if (gy.is_null()) {
      os_ << Variable().debug_print() << end_;
      continue;
    }
    Variable v(Array::zeros(gy.shape(), gy.dtype(), gy.array().device()));
    v.set_grad(gy.array());
    os_ << v.debug_print() << end_;
  }
  if (flush_) os_.flush();
}

}  // namespace rensa::function_hooks
