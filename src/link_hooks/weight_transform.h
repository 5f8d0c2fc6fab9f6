#pragma once
// What the weight-normalizing link hooks share: checking the link they are added to, and ending
// the substitution of the weight after a forward.

#include <string>

#include "rensa/links/link_hook.h"

namespace rensa::link_hooks::detail {

/// ValueError naming `hook` for a null link (the hook was used as a scope) or a link without
/// parameter `weight`.
void check_weight_link(const std::string& hook, const Link* link, const std::string& weight);
/// Clears the link's transform of `weight`; ValueError naming `hook` and the link's class when a
/// forward that returned did not read the weight through Link::param_in_forward.
void end_weight_transform(const std::string& hook, const LinkForwardCall& call, const std::string& weight);

}  // namespace rensa::link_hooks::detail
