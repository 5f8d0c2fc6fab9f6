// VisionLayers: the staged forward of the model-zoo links and their pretrained weights.
#include "rensa/links/vision_layers.h"

#include <algorithm>
#include <set>
#include <utility>

#include "rensa/core/error.h"
#include "rensa/serializers/npz.h"

namespace rensa::links {

void VisionLayers::add_stage(std::string name, std::function<Variable(const Variable&)> fn, std::string input) {
  stages_.push_back({std::move(name), std::move(fn), std::move(input)});
}

std::vector<std::string> VisionLayers::available_layers() const {
  std::vector<std::string> names;
  for (const auto& s : stages_) names.push_back(s.name);
  return names;
}

std::map<std::string, Variable> VisionLayers::forward(const Variable& x, const std::vector<std::string>& layers) {
  RENSA_CHECK(!layers.empty(), ValueError, model_, ": forward needs at least one layer name");
  std::set<std::string> targets;
  for (const auto& name : layers) {
    const bool known = std::any_of(stages_.begin(), stages_.end(), [&](const Stage& s) { return s.name == name; });
    if (!known) {
      std::string all;
      for (const auto& s : stages_) all.append(all.empty() ? "" : ", ").append(s.name);
      RENSA_CHECK(known, ValueError, model_, ": unknown layer \"", name, "\"; available layers: ", all);
    }
    targets.insert(name);
  }
  std::set<std::string> inputs;  // stages whose outputs a later stage reads
  for (const auto& s : stages_) {
    if (!s.input.empty()) inputs.insert(s.input);
  }
  std::map<std::string, Variable> out, kept;
  Variable h = x;
  for (const auto& s : stages_) {
    if (targets.empty()) break;
    if (!s.input.empty()) h = kept.at(s.input);
    try {
      h = s.fn(h);
    } catch (...) {
      rethrow_with_context(model_ + ": layer " + s.name + ": ");
    }
    if (targets.erase(s.name)) out[s.name] = h;
    if (inputs.count(s.name)) kept[s.name] = h;
  }
  return out;
}

Variable VisionLayers::forward(const Variable& x) {
  return forward(x, {"prob"}).at("prob");
}

bool VisionLayers::pretrained(const std::string& pretrained_model) const {
  RENSA_CHECK(pretrained_model != "auto", ValueError, model_, ": pretrained_model \"auto\" (download) is not ",
              "supported; convert the model with Chainer and pass the path of its .npz file");
  return !pretrained_model.empty();
}

void VisionLayers::load_pretrained(const std::string& pretrained_model) {
  if (pretrained(pretrained_model)) serializers::load_npz(pretrained_model, *this);
}

}  // namespace rensa::links
