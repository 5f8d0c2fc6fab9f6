#pragma once
// Declaring and registering a backend's kernels from the slot list (RENSA_KERNEL_SLOTS): inside the
// backend's namespace, RENSA_DECLARE_KERNELS() declares one function per KernelTable slot, named as
// the slot and of its type; RENSA_REGISTER_KERNELS(table, ns) fills a table with them. A kernel file then
// defines the function, and nothing else names it: a backend that lacks one fails to link.
#include <type_traits>

#include "rensa/core/backend.h"

namespace rensa::backends {
/// The function type of KernelTable slot `member`.
template <auto KernelTable::*Member>
using kernel_fn_t = std::remove_pointer_t<std::remove_reference_t<decltype(std::declval<KernelTable&>().*Member)>>;
}  // namespace rensa::backends

#define RENSA_DECLARE_KERNEL_(name) ::rensa::backends::kernel_fn_t<&::rensa::KernelTable::name> name;
/// Declares every kernel (one function per slot) in the current namespace.
#define RENSA_DECLARE_KERNELS() RENSA_KERNEL_SLOTS(RENSA_DECLARE_KERNEL_)

#define RENSA_REGISTER_KERNEL_(name) rensa_table_.name = rensa_kernels_::name;
/// Fills every slot of KernelTable `table` with the function of the same name in namespace `ns`.
#define RENSA_REGISTER_KERNELS(table, ns)          \
  do {                                             \
    namespace rensa_kernels_ = ns;                 \
    ::rensa::KernelTable& rensa_table_ = (table);  \
    RENSA_KERNEL_SLOTS(RENSA_REGISTER_KERNEL_)     \
  } while (false)
