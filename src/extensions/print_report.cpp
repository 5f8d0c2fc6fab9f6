#include "rensa/extensions/print_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"
#include "src/extensions/terminal.h"

namespace rensa::extensions {
namespace {

// Python's '{:<Ng}' for a float: %g, left-aligned in N columns; NaN prints as "nan" whatever its sign.
std::string format_value(double v, int width) {
  char buf[64];
  if (std::isnan(v)) {
    std::snprintf(buf, sizeof buf, "%-*s", width, "nan");
  } else {
    std::snprintf(buf, sizeof buf, "%-*g", width, v);
  }
  return buf;
}

}  // namespace

PrintReport::PrintReport(std::vector<std::string> entries, std::string log_report, std::ostream& out)
    : entries_(std::move(entries)), log_report_name_(std::move(log_report)), out_(&out) {
  RENSA_CHECK(!log_report_name_.empty(), ValueError, "PrintReport: empty LogReport extension name");
  for (const std::string& e : entries_) widths_.push_back(std::max<int>(10, static_cast<int>(e.size())));
}

PrintReport::PrintReport(std::vector<std::string> entries, LogReport log_report, std::ostream& out)
    : entries_(std::move(entries)), own_log_report_(std::make_shared<LogReport>(std::move(log_report))), out_(&out) {
  for (const std::string& e : entries_) widths_.push_back(std::max<int>(10, static_cast<int>(e.size())));
}

void PrintReport::operator()(training::Trainer& trainer) {
  std::ostream& out = *out_;
  if (!header_printed_) {
    std::string header;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (i > 0) header += "  ";
      header += entries_[i];
      header.append(static_cast<std::size_t>(widths_[i]) - std::min(entries_[i].size(), std::size_t(widths_[i])), ' ');
    }
    out << header << '\n';
    header_printed_ = true;
  }
  const LogReport* log_report = nullptr;
  if (own_log_report_ != nullptr) {
    (*own_log_report_)(trainer);
    log_report = own_log_report_.get();
  } else {
    log_report = &trainer.get_extension<LogReport>(log_report_name_);
  }
  const auto& log = log_report->log();
  const bool terminal = detail::is_terminal(out);
  while (printed_ < log.size()) {
    // Clear what a progress bar may have drawn below the cursor.
    if (terminal) out << "\033[J";
    print_row(log[printed_]);
    ++printed_;
  }
  out.flush();
}

void PrintReport::print_row(const training::Observation& entry) {
  std::string row;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto it = entry.find(entries_[i]);
    if (it != entry.end()) {
      row += format_value(it->second, widths_[i]);
    } else {
      row.append(static_cast<std::size_t>(widths_[i]), ' ');
    }
    row += "  ";
  }
  *out_ << row << '\n';
}

void PrintReport::serialize(serializers::Serializer& s) {
  if (own_log_report_ != nullptr) own_log_report_->serialize(s.child("_log_report"));
}

}  // namespace rensa::extensions
