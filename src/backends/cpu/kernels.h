#pragma once
// The cpu backend's kernels: one function per KernelTable slot (see rensa::KernelTable for their
// contracts), each defined in the file of its family and registered by make_cpu_backend.
#include "src/backends/kernel_slots.h"

namespace rensa::backends::cpu {
RENSA_DECLARE_KERNELS()
}  // namespace rensa::backends::cpu
