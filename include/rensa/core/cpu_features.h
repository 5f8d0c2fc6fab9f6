#pragma once
/// \file
/// What the host CPU can do, as the cpu backend's kernels see it: the instruction-set extensions
/// it picks kernels by, and how 16-bit floating-point matrix products and convolutions run.

#include <string>

#include "rensa/core/dtype.h"

namespace rensa {

/// Instruction-set extensions of the CPU the process runs on (read once, at the first call), capped
/// by the environment variable `RENSA_MAX_CPU_ISA` when it is set (see cpu_isa_cap()).
struct CpuFeatures {
  /// AVX2: 256-bit integer and float vectors.
  bool avx2 = false;
  /// FMA3: fused multiply-add.
  bool fma = false;
  /// F16C: conversions between half and float.
  bool f16c = false;
  /// AVX-512 Foundation.
  bool avx512f = false;
  bool avx512_bf16 = false;  ///< AVX512_BF16: bfloat16 dot products (vdpbf16ps)
  bool amx_bf16 = false;     ///< AMX tiles with bfloat16 multiplication
  bool avx512_fp16 = false;  ///< AVX512_FP16: IEEE half arithmetic
};

/// The features of this machine's CPU, less those above `RENSA_MAX_CPU_ISA`.
/// Throws ValueError (naming the variable and its accepted values) when that variable is set to
/// anything else.
const CpuFeatures& cpu_features();

/// The cap `RENSA_MAX_CPU_ISA` sets on the kernels of the cpu backend, so that a wide CPU can run
/// (and test) the code paths of a narrower one. Its values are oneDNN's `ONEDNN_MAX_CPU_ISA` names:
/// `sse41` (no AVX: the portable loops), `avx2`, `avx512_core`, `avx512_core_bf16`, `all`. The cap
/// applies to rensa's own kernels and, unless `ONEDNN_MAX_CPU_ISA` is set too, to oneDNN's.
/// Returns the lower-case value, or "all" when the variable is unset or empty. Throws ValueError as
/// cpu_features() does.
std::string cpu_isa_cap();

/// One line naming the CPU's model and the instruction sets the cpu backend uses ("AMD EPYC;
/// AVX2, FMA, AVX-512, AVX512_BF16; capped at avx2"), for benchmarks and logs.
std::string cpu_description();

/// True when the cpu backend computes bfloat16 matrix products and convolutions natively (oneDNN's
/// bfloat16 kernels, float32 accumulation): the CPU has AVX512_BF16 or AMX-BF16, and the environment
/// variable `RENSA_NATIVE_BF16` is not `0` (read once, at the first call). Otherwise bfloat16 is
/// computed in float32 and rounded. Never throws.
bool native_bf16();

/// One line saying how the cpu backend computes matrix products and convolutions of `dtype`
/// ("bfloat16: oneDNN bf16 kernels (AVX512_BF16, AMX)", "float16: float32 compute, rounded", ...),
/// for benchmarks and logs. Other dtypes: "<dtype>: computed in <dtype>".
std::string half_compute_path(Dtype dtype);

}  // namespace rensa
