#pragma once
/// \file
/// ParameterStatistics (Chainer's extensions.ParameterStatistics): statistics of links' parameters
/// and gradients (mean, std, min, max, zeros, percentiles) observed for LogReport and plots.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rensa/training/extension.h"
#include "rensa/training/summary.h"
#include "rensa/training/triggers.h"

namespace rensa {
class Link;
}

namespace rensa::extensions {

/// A statistic: the elements of one parameter (or gradient), flattened, in; one or more values out.
using StatisticFunction = std::function<std::vector<double>(const std::vector<double>& x)>;

/// Options of ParameterStatistics.
struct ParameterStatisticsOptions {
  /// Report statistics of the parameters' values.
  bool report_params = true;
  /// Report statistics of the parameters' gradients.
  bool report_grads = true;
  /// Prepended to every key with a '/' when not empty.
  std::string prefix;
  /// When the interval means are observed (and the sums restart).
  training::Trigger trigger = {1, "epoch"};
  /// A parameter holding a NaN gets NaN for every statistic instead of computing them.
  bool skip_nan_params = false;
};

/// Every iteration, computes each statistic of each initialized parameter of the links (its data
/// and, where it has one, its gradient) and adds it to a summary; when `trigger` fires, observes
/// the means under "<prefix/><link name><param path>/<data|grad>/<statistic>" (Chainer's keys:
/// "main/l1/W/data/mean"; a link without a name() is "None", as Chainer's), with "/<i>" appended
/// for the i-th value of a statistic of several values. Priority: writer.
class ParameterStatistics : public training::Extension {
 public:
  /// The default statistics: mean, std (population), min, max, zeros (how many elements are 0) and
  /// percentile (NumPy's linear interpolation at 0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87: the
  /// mean and +-1, 2, 3 sigma of a normal distribution).
  static std::map<std::string, StatisticFunction> default_statistics();

  /// `links` must outlive the trainer; ValueError for none or a null one.
  explicit ParameterStatistics(std::vector<Link*> links, ParameterStatisticsOptions options = {});
  /// The parameters of `link` and its descendants (which must outlive the trainer).
  explicit ParameterStatistics(Link& link, ParameterStatisticsOptions options = {});
  /// The same with `statistics` instead of the default ones.
  ParameterStatistics(std::vector<Link*> links, std::map<std::string, StatisticFunction> statistics,
                      ParameterStatisticsOptions options = {});
  /// Adds (or replaces) statistic `name`; ValueError for an empty name or a null function.
  void register_statistics(const std::string& name, StatisticFunction function);

  void operator()(training::Trainer& trainer) override;
  int default_priority() const override { return training::kPriorityWriter; }
  std::string default_name() const override { return "parameter_statistics"; }
  void serialize(serializers::Serializer& s) override;

 private:
  std::vector<Link*> links_;
  std::map<std::string, StatisticFunction> statistics_;
  ParameterStatisticsOptions options_;
  training::DictSummary summary_;
};

}  // namespace rensa::extensions
