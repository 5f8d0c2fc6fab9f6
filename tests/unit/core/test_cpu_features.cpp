// The CPU's features as the kernels see them, and RENSA_MAX_CPU_ISA's cap on them (this binary also
// runs as test_cpu_features.avx2, under the cap).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "rensa/core/cpu_features.h"
#include "tests/unit/test_util.h"

namespace {

std::string cap_from_env() {
  const char* env = std::getenv("RENSA_MAX_CPU_ISA");
  return env == nullptr || *env == '\0' ? "all" : env;
}

TEST(CpuFeatures, CapHolds) {
  const rensa::CpuFeatures& f = rensa::cpu_features();
  const std::string cap = cap_from_env();
  EXPECT_EQ(rensa::cpu_isa_cap(), cap);
  if (f.avx512_bf16 || f.avx512_fp16) {
    EXPECT_TRUE(f.avx512f);
  }
  if (cap == "avx2" || cap == "sse41") {
    EXPECT_FALSE(f.avx512f);
    EXPECT_FALSE(f.avx512_bf16);
    EXPECT_FALSE(f.amx_bf16);
    EXPECT_FALSE(rensa::native_bf16());
    EXPECT_NE(rensa::half_compute_path(rensa::Dtype::bfloat16).find("float32 compute"), std::string::npos);
  }
  if (cap == "sse41") {
    EXPECT_FALSE(f.avx2);
  }
  const std::string d = rensa::cpu_description();
  EXPECT_EQ(d.find("; capped at ") != std::string::npos, cap != "all") << d;
  EXPECT_EQ(d.find("AVX-512") != std::string::npos, f.avx512f) << d;
}

TEST(CpuFeatures, BadCapIsNamed) {
  const std::string saved = cap_from_env();
  setenv("RENSA_MAX_CPU_ISA", "avx3", 1);
  rensa::test::expect_error<rensa::ValueError>([] { rensa::cpu_isa_cap(); },
                                               {"RENSA_MAX_CPU_ISA", "'avx3'", "avx2", "avx512_core"});
  setenv("RENSA_MAX_CPU_ISA", "AVX2", 1);  // oneDNN's spelling in either case
  EXPECT_EQ(rensa::cpu_isa_cap(), "avx2");
  if (saved == "all") {
    unsetenv("RENSA_MAX_CPU_ISA");
  } else {
    setenv("RENSA_MAX_CPU_ISA", saved.c_str(), 1);
  }
}

}  // namespace
