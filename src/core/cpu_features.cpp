// The CPU's instruction-set extensions, read with cpuid (and xgetbv for what the OS enables), and
// whether the cpu backend runs bfloat16 natively.
#include "rensa/core/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "rensa/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace rensa {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid(1, a, b, c, d);
  const bool osxsave = (c >> 27) & 1u;
  if (!osxsave) return f;
  const uint64_t xcr = xcr0();
  const bool os_avx = (xcr & 0x6u) == 0x6u;                 // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0u) == 0xe0u;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr & 0x60000u) == 0x60000u;         // XTILECFG, XTILEDATA
  const bool fma = (c >> 12) & 1u, f16c = (c >> 29) & 1u;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1u, avx512f = (b >> 16) & 1u;
  const bool amx_bf16 = (d >> 22) & 1u, avx512_fp16 = (d >> 23) & 1u, amx_tile = (d >> 24) & 1u;
  const unsigned max_sub = a;
  bool avx512_bf16 = false;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    avx512_bf16 = (a >> 5) & 1u;
  }
  f.avx2 = os_avx && avx2;
  f.fma = os_avx && fma;
  f.f16c = os_avx && f16c;
  f.avx512f = os_avx512 && avx512f;
  f.avx512_bf16 = f.avx512f && avx512_bf16;
  f.amx_bf16 = os_amx && amx_tile && amx_bf16;
  f.avx512_fp16 = f.avx512f && avx512_fp16;
  return f;
}
#else
CpuFeatures detect() {
  return {};
}
#endif

// RENSA_MAX_CPU_ISA's values, narrowest first, in oneDNN's spelling.
constexpr const char* kIsaCaps[] = {"sse41", "avx2", "avx512_core", "avx512_core_bf16", "all"};
constexpr int kIsaCapCount = 5;

// The index of RENSA_MAX_CPU_ISA's value in kIsaCaps (the last when unset or empty).
int isa_cap_index() {
  const char* env = std::getenv("RENSA_MAX_CPU_ISA");
  if (env == nullptr || *env == '\0') return kIsaCapCount - 1;
  std::string v(env);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  for (int i = 0; i < kIsaCapCount; ++i) {
    if (v == kIsaCaps[i]) return i;
  }
  RENSA_THROW(ValueError, "RENSA_MAX_CPU_ISA: '", env,
              "' is not an instruction-set cap; use sse41, avx2, avx512_core, avx512_core_bf16 or all");
}

// The features a CPU of the cap's level could have: those above it are switched off.
CpuFeatures capped(CpuFeatures f, int cap) {
  if (cap < 1) f.avx2 = f.fma = f.f16c = false;
  if (cap < 2) f.avx512f = false;
  if (cap < 3) f.avx512_bf16 = f.avx512_fp16 = false;
  if (cap < 4) f.amx_bf16 = false;
  if (!f.avx512f) f.avx512_bf16 = f.avx512_fp16 = false;
  return f;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = capped(detect(), isa_cap_index());
  return features;
}

std::string cpu_isa_cap() {
  return kIsaCaps[isa_cap_index()];
}

std::string cpu_description() {
  const CpuFeatures& f = cpu_features();
  std::string isa;
  auto add = [&isa](bool on, const char* name) {
    if (on) isa += (isa.empty() ? "" : ", ") + std::string(name);
  };
  add(f.avx2, "AVX2");
  add(f.fma, "FMA");
  add(f.avx512f, "AVX-512");
  add(f.avx512_bf16, "AVX512_BF16");
  add(f.amx_bf16, "AMX-BF16");
  add(f.avx512_fp16, "AVX512_FP16");
  std::string out = cpu_model() + "; " + (isa.empty() ? "no AVX" : isa);
  const std::string cap = cpu_isa_cap();
  if (cap != "all") out += "; capped at " + cap + " by RENSA_MAX_CPU_ISA";
  return out;
}

namespace {
// RENSA_NATIVE_BF16: unset or empty, "1" (use the CPU's bf16 instructions when it has them) or "0"
// (the float32 fallback); anything else ("off", "false") would silently read as on.
bool native_bf16_disabled() {
  const char* env = std::getenv("RENSA_NATIVE_BF16");
  if (env == nullptr || *env == '\0') return false;
  RENSA_CHECK(std::strcmp(env, "0") == 0 || std::strcmp(env, "1") == 0, ValueError, "RENSA_NATIVE_BF16: '", env,
              "' is neither 1 (native bfloat16 kernels where the CPU has them) nor 0 (the float32 fallback)");
  return env[0] == '0';
}
}  // namespace

bool native_bf16() {
  static const bool native = [] {
    const bool disabled = native_bf16_disabled();
    const CpuFeatures& f = cpu_features();
    return (f.avx512_bf16 || f.amx_bf16) && !disabled;
  }();
  return native;
}

std::string half_compute_path(Dtype dtype) {
  if (dtype == Dtype::bfloat16) {
    if (native_bf16()) {
      const CpuFeatures& f = cpu_features();
      std::string isa = f.avx512_bf16 ? "AVX512_BF16" : "";
      if (f.amx_bf16) isa += isa.empty() ? "AMX" : ", AMX";
      return "bfloat16: oneDNN bf16 kernels (" + isa + "), float32 accumulation";
    }
    const bool disabled = native_bf16_disabled() && (cpu_features().avx512_bf16 || cpu_features().amx_bf16);
    return std::string("bfloat16: float32 compute, rounded (") +
           (disabled ? "native bf16 disabled by RENSA_NATIVE_BF16=0" : "no native bf16 on this CPU") + ")";
  }
  if (dtype == Dtype::float16) return "float16: float32 compute, rounded";
  return std::string(dtype_name(dtype)) + ": computed in " + std::string(dtype_name(dtype));
}

}  // namespace rensa
