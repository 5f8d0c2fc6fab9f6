#include "rensa/extensions/computational_graph.h"

#include <filesystem>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/training/trainer.h"
#include "src/serializers/atomic_file.h"

namespace rensa::extensions {

DumpGraph::DumpGraph(std::string root_name, std::string filename, ComputationalGraphOptions options)
    : root_name_(std::move(root_name)), filename_(std::move(filename)), options_(std::move(options)) {
  RENSA_CHECK(!root_name_.empty() && !filename_.empty(), ValueError, "DumpGraph: empty root name or file name");
}

void DumpGraph::initialize(training::Trainer&) {
  if (called_ || flag_set_) return;
  original_flag_ = global_config().keep_graph_on_report;
  global_config().keep_graph_on_report = true;
  flag_set_ = true;
}

void DumpGraph::restore_flag() {
  if (!flag_set_) return;
  global_config().keep_graph_on_report = original_flag_;
  flag_set_ = false;
}

void DumpGraph::operator()(training::Trainer& trainer) {
  if (called_) return;
  called_ = true;
  struct Restore {
    DumpGraph& self;
    ~Restore() { self.restore_flag(); }
  } restore{*this};
  const auto& vars = trainer.observed_variables();
  auto it = vars.find(root_name_);
  if (it == vars.end()) {
    std::string kept;
    for (const auto& [k, v] : vars) kept += (kept.empty() ? "" : ", ") + k;
    RENSA_THROW(ValueError, "DumpGraph: '", root_name_, "' was not reported as a Variable in iteration ",
                trainer.updater().iteration(), " (kept: ", kept.empty() ? "none" : kept,
                "; report it with rensa::report(key, variable))");
  }
  const std::string text = build_computational_graph({it->second}, options_).dump();
  std::filesystem::create_directories(trainer.out());
  serializers::detail::write_file_atomically((std::filesystem::path(trainer.out()) / filename_).string(), text,
                                             "DumpGraph");
}

void DumpGraph::finalize(training::Trainer&) { restore_flag(); }

void DumpGraph::serialize(serializers::Serializer& s) {
  s.scalar("_original_flag", original_flag_);
  s.scalar("_flag_called", called_);
}

void UnchainVariables::initialize(training::Trainer&) { previous_flag_ = config().keep_graph_on_report; }

void UnchainVariables::operator()(training::Trainer& trainer) {
  const bool run = previous_flag_;
  previous_flag_ = config().keep_graph_on_report;
  if (!run) return;
  for (const auto& [key, v] : trainer.observed_variables()) v.unchain_backward();
}

}  // namespace rensa::extensions
