#include "rensa/extensions/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"
#include "src/extensions/terminal.h"

namespace rensa::extensions {
namespace {

// Samples kept for the speed: the speed is measured over the last this many updates.
constexpr std::size_t kSpeedWindow = 100;

std::string bar(double rate, int length) {
  const int marks = std::clamp(static_cast<int>(rate * length), 0, length);
  std::string out(1, '[');
  out.append(static_cast<std::size_t>(marks), '#');
  out.append(static_cast<std::size_t>(length - marks), '.');
  out += ']';
  return out;
}

// Padded to line up under the bars; the one-line form (a file, a pipe) takes it unpadded.
std::string percent(double rate, bool padded = true) {
  char buf[32];
  std::snprintf(buf, sizeof buf, padded ? "%6.2f%%" : "%.2f%%", rate * 100.0);
  return buf;
}

// H:MM:SS (days as "N days, H:MM:SS", as Python's timedelta).
std::string duration(double seconds) {
  if (!std::isfinite(seconds)) return "unknown";
  auto s = static_cast<int64_t>(std::max(0.0, seconds));
  const int64_t days = s / 86400;
  s %= 86400;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", static_cast<int>(s / 3600), static_cast<int>(s / 60 % 60),
                static_cast<int>(s % 60));
  std::string out;
  if (days > 0) {
    out += std::to_string(days);
    out += days == 1 ? " day, " : " days, ";
  }
  out += buf;
  return out;
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::optional<training::TrainingLength> training_length, int64_t update_interval,
                         std::ostream& out, int bar_length)
    : training_length_(std::move(training_length)),
      update_interval_(update_interval),
      out_(&out),
      bar_length_(bar_length) {
  RENSA_CHECK(update_interval_ >= 1, ValueError, "ProgressBar: update_interval must be >= 1, got ", update_interval_);
  RENSA_CHECK(bar_length_ >= 1, ValueError, "ProgressBar: bar_length must be >= 1, got ", bar_length_);
  if (training_length_.has_value()) {
    RENSA_CHECK(training_length_->unit == "epoch" || training_length_->unit == "iteration", ValueError,
                "ProgressBar: unit must be \"epoch\" or \"iteration\", got \"", training_length_->unit, "\"");
  }
}

void ProgressBar::operator()(training::Trainer& trainer) {
  const training::Updater& updater = trainer.updater();
  const int64_t iteration = updater.iteration();
  if (iteration % update_interval_ != 0) return;
  if (!training_length_.has_value()) training_length_ = trainer.stop_trigger().training_length();
  const double epoch = updater.epoch_detail();

  const auto now = std::chrono::steady_clock::now();
  recent_.emplace_back(iteration, epoch, now);
  if (recent_.size() > kSpeedWindow) recent_.pop_front();
  const auto& [old_it, old_epoch, old_time] = recent_.front();
  const double span = std::chrono::duration<double>(now - old_time).count();
  const double inf = std::numeric_limits<double>::infinity();
  const double speed_it = span > 0 ? static_cast<double>(iteration - old_it) / span : inf;
  const double speed_ep = span > 0 ? (epoch - old_epoch) / span : inf;

  std::optional<double> rate;
  double eta = inf;
  std::string length_text;
  if (training_length_.has_value()) {
    const auto& [length, unit] = *training_length_;
    const bool by_iter = unit == "iteration";
    rate = std::min(1.0, (by_iter ? static_cast<double>(iteration) : epoch) / length);
    const double left = by_iter ? length - static_cast<double>(iteration) : length - epoch;
    const double speed = by_iter ? speed_it : speed_ep;
    eta = speed > 0 && std::isfinite(speed) ? std::max(0.0, left / speed) : (left <= 0 ? 0.0 : inf);
    length_text.append(" / ").append(format_number(length)).append(" ").append(unit).append("s");
  }
  const double epoch_rate = epoch - std::floor(epoch);
  char speed_buf[64];
  std::snprintf(speed_buf, sizeof speed_buf, "%10.5g", speed_it);

  std::ostream& out = *out_;
  const bool terminal = terminal_.value_or(detail::is_terminal(out));
  if (terminal) {
    // Redraw in place: clear each line, then move the cursor back up to the first one.
    std::vector<std::string> lines;
    if (rate.has_value()) {
      lines.push_back(std::string("     total ").append(bar(*rate, bar_length_)).append(" ").append(percent(*rate)));
    }
    lines.push_back(std::string("this epoch ").append(bar(epoch_rate, bar_length_)).append(" ").append(percent(epoch_rate)));
    char status[128];
    std::snprintf(status, sizeof status, "%10lld iter, %lld epoch", static_cast<long long>(iteration),
                  static_cast<long long>(updater.epoch()));
    lines.push_back(std::string(status).append(length_text));
    lines.push_back(std::string(speed_buf).append(" iters/sec. Estimated time to finish: ").append(duration(eta)).append("."));
    for (const std::string& line : lines) out << "\r\033[2K" << line << '\n';
    out << "\033[" << lines.size() << "A\r";
    drawn_ = true;
  } else {
    char status[128];
    std::snprintf(status, sizeof status, "iteration %lld, epoch %lld", static_cast<long long>(iteration),
                  static_cast<long long>(updater.epoch()));
    std::string line = std::string(status).append(length_text).append(":");
    if (rate.has_value()) line.append(" total ").append(percent(*rate, false)).append(",");
    line.append(" this epoch ")
        .append(percent(epoch_rate, false))
        .append(", ")
        .append(format_number(speed_it))
        .append(" iters/sec");
    if (rate.has_value()) line.append(", estimated time to finish: ").append(duration(eta));
    out << line << '\n';
  }
  out.flush();
}

void ProgressBar::finalize(training::Trainer& trainer) {
  (void)trainer;
  if (drawn_) {
    *out_ << "\033[J";
    out_->flush();
  }
}

}  // namespace rensa::extensions
