#include "src/link_hooks/weight_transform.h"

#include "rensa/core/debug_site.h"
#include "rensa/core/error.h"

namespace rensa::link_hooks::detail {

void check_weight_link(const std::string& hook, const Link* link, const std::string& weight) {
  RENSA_CHECK(link != nullptr, ValueError, hook,
              ": add it to a link with Link::add_hook; it cannot be installed for a scope");
  bool found = false;
  for (const auto& [path, p] : link->namedparams()) found = found || path == "/" + weight;
  RENSA_CHECK(found, ValueError, hook, ": ", rensa::detail::short_class_name(typeid(*link)), " has no parameter '",
              weight, "'");
}

void end_weight_transform(const std::string& hook, const LinkForwardCall& call, const std::string& weight) {
  const bool applied = call.link.param_transform_applied(weight);
  call.link.set_param_transform(weight, nullptr);
  RENSA_CHECK(applied || call.out.empty(), ValueError, hook, ": ", rensa::detail::short_class_name(typeid(call.link)),
              " did not read its weight '", weight,
              "' through Link::param_in_forward; supported: Linear, Convolution2D, Deconvolution2D, ConvolutionND, "
              "DeconvolutionND, EmbedID");
}

}  // namespace rensa::link_hooks::detail
