// The links' side of the mixed-precision policy: the cast to the compute dtype.
#include "rensa/links/mixed_precision.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>

#include "rensa/core/config.h"
#include "rensa/core/cpu_features.h"
#include "rensa/functions/array_ops.h"

namespace rensa::links {

Variable detail::cast_variable(const Variable& x, Dtype dtype) {
  return x.dtype() == dtype ? x : functions::cast(x, dtype);
}

namespace {

// Says once per process and dtype (on rank 0 of an MPI job) that the policy's 16-bit products are
// emulated.
void notice_emulation(Dtype compute) {
  static std::once_flag bf16_once, f16_once;
  std::call_once(compute == Dtype::bfloat16 ? bf16_once : f16_once, [compute] {
    const std::string notice = mixed_policy_notice(compute);
    if (notice.empty()) return;
    for (const char* rank : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
      const char* v = std::getenv(rank);
      if (v != nullptr && std::strcmp(v, "0") != 0) return;
    }
    std::cerr << notice << std::endl;
  });
}

}  // namespace

std::string mixed_policy_notice(Dtype compute) {
  if (compute == Dtype::bfloat16 && !native_bf16()) {
    return "rensa: mixed_bf16 on a CPU without native bfloat16 (AVX512_BF16 or AMX-BF16): bfloat16 is emulated "
           "(computed in float32, rounded), about 0.5-1.0x the speed of float32 (docs/mixed_precision.md)";
  }
  if (compute == Dtype::float16) {
    return "rensa: mixed16: float16 is emulated on CPUs (computed in float32, rounded), slower than float32; it "
           "saves memory, not time (docs/mixed_precision.md)";
  }
  return "";
}

Variable mixed_cast(const Variable& x) {
  const std::optional<Dtype> compute = mixed_compute_dtype();
  if (!compute || x.is_null() || !is_floating(x.dtype())) return x;
  notice_emulation(*compute);
  return detail::cast_variable(x, *compute);
}

}  // namespace rensa::links
