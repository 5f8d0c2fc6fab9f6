#pragma once
/// \file
/// PrintReport: prints the LogReport's entries as a table (Chainer's PrintReport).

#include <iostream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "rensa/extensions/log_report.h"
#include "rensa/training/extension.h"

namespace rensa::extensions {

/// Prints a header line once, then one row per new log entry: each column `max(10, len(name))`
/// wide, separated by two spaces, values in `%g` format, blank when the entry lacks the key.
/// Reads the log of the trainer's LogReport extension named `log_report`, or of its own LogReport.
/// On a terminal it clears below the cursor before each row (so a ProgressBar is overwritten).
class PrintReport : public training::Extension {
 public:
  /// Reads the log of the trainer's extension `log_report` (a LogReport; ValueError otherwise).
  explicit PrintReport(std::vector<std::string> entries, std::string log_report = "LogReport",
                       std::ostream& out = std::cout);
  /// Owns `log_report`, calls it at each of its own calls and saves it in snapshots.
  PrintReport(std::vector<std::string> entries, LogReport log_report, std::ostream& out = std::cout);

  void operator()(training::Trainer& trainer) override;
  std::string default_name() const override { return "PrintReport"; }
  void serialize(serializers::Serializer& s) override;

 private:
  void print_row(const training::Observation& entry);

  std::vector<std::string> entries_;
  std::vector<int> widths_;
  std::string log_report_name_;
  std::shared_ptr<LogReport> own_log_report_;
  std::ostream* out_;
  bool header_printed_ = false;
  std::size_t printed_ = 0;
};

}  // namespace rensa::extensions
