#pragma once
/// \file
/// DumpGraph (Chainer's extensions.DumpGraph) and unchain_variables: the extensions that read the
/// graphs of reported variables (Config::keep_graph_on_report).

#include <string>

#include "rensa/core/computational_graph.h"
#include "rensa/training/extension.h"

namespace rensa::extensions {

/// Writes the computational graph behind observation `root_name` (a Variable reported with
/// report(key, variable), such as Classifier's "main/loss") at the first iteration as Graphviz dot
/// text to `<out>/<filename>`, atomically; `dot -Tpng cg.dot -o cg.png` draws it. initialize() turns
/// the process's Config::keep_graph_on_report on (a using_config guard around Trainer::run would
/// hide it) and the dump restores it. ValueError at the dump when `root_name` was not reported as a
/// Variable in that iteration.
class DumpGraph : public training::Extension {
 public:
  /// Dumps the graph of the Variable reported as `root_name` to `filename` in the out directory.
  explicit DumpGraph(std::string root_name, std::string filename = "cg.dot", ComputationalGraphOptions options = {});
  void initialize(training::Trainer& trainer) override;
  void operator()(training::Trainer& trainer) override;
  void finalize(training::Trainer& trainer) override;
  std::string default_name() const override { return "DumpGraph"; }
  void serialize(serializers::Serializer& s) override;

 private:
  void restore_flag();
  std::string root_name_, filename_;
  ComputationalGraphOptions options_;
  bool original_flag_ = false;
  bool flag_set_ = false;
  bool called_ = false;
};

/// Chainer's unchain_variables: after the other extensions (priority 0), cuts the graph behind every
/// variable kept by the reporter in the iteration (Variable::unchain_backward), so a graph kept for
/// an extension does not keep memory alive. It runs when Config::keep_graph_on_report was on in the
/// previous call, as Chainer's.
class UnchainVariables : public training::Extension {
 public:
  void initialize(training::Trainer& trainer) override;
  void operator()(training::Trainer& trainer) override;
  int default_priority() const override { return 0; }
  std::string default_name() const override { return "unchain_variables"; }

 private:
  bool previous_flag_ = false;
};

/// Chainer's spelling: `trainer.extend(unchain_variables())`.
inline UnchainVariables unchain_variables() { return {}; }

}  // namespace rensa::extensions
