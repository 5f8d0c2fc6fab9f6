#pragma once
// The reference backend's kernels: one function per KernelTable slot (see rensa::KernelTable for
// their contracts), naive loops written for clarity, registered by make_reference_backend.
#include "src/backends/kernel_slots.h"

namespace rensa::backends::reference {
RENSA_DECLARE_KERNELS()
}  // namespace rensa::backends::reference
