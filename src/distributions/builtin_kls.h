#pragma once
// The KL divergences rensa registers itself, one function per family file, all called once by
// distribution.cpp when the registry is first used (no static initializers).

#include <functional>
#include <typeindex>

#include "rensa/distributions/distribution.h"

namespace rensa::distributions::detail {

using AddKL = std::function<void(std::type_index, std::type_index, KLFunction)>;

// Adds the typed pair D1, D2 through `add`.
template <class D1, class D2, class Fn>
void add_kl(const AddKL& add, Fn fn) {
  add(typeid(D1), typeid(D2), [fn](const Distribution& a, const Distribution& b) {
    return fn(static_cast<const D1&>(a), static_cast<const D2&>(b));
  });
}

void register_normal_kls(const AddKL& add);
void register_discrete_kls(const AddKL& add);
void register_gamma_kls(const AddKL& add);
void register_location_scale_kls(const AddKL& add);
void register_independent_kls(const AddKL& add);

inline void register_builtin_kls(const AddKL& add) {
  register_normal_kls(add);
  register_discrete_kls(add);
  register_gamma_kls(add);
  register_location_scale_kls(add);
  register_independent_kls(add);
}

}  // namespace rensa::distributions::detail
