#pragma once
/// \file
/// VisionLayers: what the model-zoo architectures (VGG16Layers, VGG19Layers, ResNet50Layers,
/// ResNet101Layers, ResNet152Layers, GoogLeNet) share: named stages applied in order, forward
/// returning the activations of the requested stages by Chainer's layer names, and weights loaded
/// from a Chainer .npz file.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rensa/links/link.h"

namespace rensa::links {

/// A Chain whose forward is a list of named stages (Chainer's `functions` OrderedDict).
/// Pretrained weights: construct with `pretrained_model` the path of an .npz file written by
/// Chainer's `save_npz` of the same architecture (or by rensa's); the parameters are then made
/// with zeros (as Chainer does before loading) and the file is loaded. An empty path draws the
/// paper's initial values. Chainer's "auto" (download and convert the Caffe model) is not
/// supported: ValueError; convert once with Chainer and pass the .npz path.
class VisionLayers : public Chain {
 public:
  /// Runs the stages in order until every layer in `layers` is computed and returns their
  /// activations by name. ValueError for a name not in available_layers() (Chainer ignores it and
  /// runs every stage) or an empty list (Chainer returns an empty map without running any).
  /// Errors of the stages are prefixed with the model's name and the stage's.
  std::map<std::string, Variable> forward(const Variable& x, const std::vector<std::string>& layers);
  /// forward(x, {"prob"}).at("prob"): the class probabilities.
  Variable forward(const Variable& x) override;
  using Link::forward;
  using Link::operator();
  /// forward(x, layers) between the link hooks.
  std::map<std::string, Variable> operator()(const Variable& x, const std::vector<std::string>& layers) {
    return call_forward({&x, 1}, [&] { return forward(x, layers); });
  }

  /// The layer names forward accepts, in the order they are computed (Chainer's available_layers).
  std::vector<std::string> available_layers() const;

 protected:
  /// `model` names the link in messages (VGG16Layers, ...).
  explicit VisionLayers(std::string model) : model_(std::move(model)) {}
  /// Appends stage `name`. `input`: the stage whose output it takes (GoogLeNet's auxiliary
  /// classifiers); empty: the previous stage's.
  void add_stage(std::string name, std::function<Variable(const Variable&)> fn, std::string input = "");
  /// Whether `pretrained_model` names a file (ValueError for "auto").
  bool pretrained(const std::string& pretrained_model) const;
  /// Loads `pretrained_model` when it names a file (after the children are registered).
  void load_pretrained(const std::string& pretrained_model);

 private:
  struct Stage {
    std::string name;
    std::function<Variable(const Variable&)> fn;
    std::string input;
  };
  std::string model_;
  std::vector<Stage> stages_;
};

}  // namespace rensa::links
