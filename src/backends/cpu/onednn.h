#pragma once
// The oneDNN engine and per-thread stream the cpu kernels share (convolutions, bfloat16 matrix
// products), and rensa's dtypes as oneDNN's data types.
#include <oneapi/dnnl/dnnl.hpp>

#include "rensa/core/dtype.h"

namespace rensa::backends::cpu::detail {

inline dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& onednn_stream() {
  thread_local dnnl::stream s(onednn_engine());
  return s;
}

// oneDNN's data type of a floating `d` (f32 for the ones oneDNN lacks: callers never pass them).
inline dnnl::memory::data_type onednn_type(Dtype d) {
  switch (d) {
    case Dtype::bfloat16:
      return dnnl::memory::data_type::bf16;
    case Dtype::float16:
      return dnnl::memory::data_type::f16;
    default:
      return dnnl::memory::data_type::f32;
  }
}

}  // namespace rensa::backends::cpu::detail
