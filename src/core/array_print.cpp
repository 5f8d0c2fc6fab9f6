// NumPy-style printing of arrays (repr): uniform float formatting, summarization of large arrays.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/core/array.h"

namespace rensa {
namespace {

constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;  // summarize above this many elements
constexpr int64_t kEdgeItems = 3;

struct FloatFormat {
  bool scientific = false;
  int frac_digits = 0;   // digits after the point (positional) or in the mantissa (scientific)
  int int_width = 0;     // characters before the point, sign included
  int total_width = 0;
};

std::string strip_zeros(std::string s) {
  const auto dot = s.find('.');
  if (dot == std::string::npos) return s;
  std::size_t end = s.size();
  while (end > dot + 1 && s[end - 1] == '0') --end;
  return s.substr(0, end);
}

std::string positional(double v, int digits) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "1.5e-05" style with the mantissa stripped of trailing zeros, as NumPy prints.
std::string scientific(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  std::string s = buf;
  const auto e = s.find('e');
  std::string mant = strip_zeros(s.substr(0, e));
  return mant + s.substr(e);
}

std::string nonfinite(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

FloatFormat choose_format(const std::vector<double>& vals) {
  FloatFormat f;
  double max_abs = 0.0, min_abs = INFINITY;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    const double a = std::abs(v);
    max_abs = std::max(max_abs, a);
    if (a > 0) min_abs = std::min(min_abs, a);
  }
  if (max_abs >= 1e8 || (min_abs < 1e-4 && min_abs > 0) || (min_abs > 0 && max_abs / min_abs > 1e3)) {
    f.scientific = true;
  }
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    std::string s = f.scientific ? scientific(v, kPrecision) : strip_zeros(positional(v, kPrecision));
    const auto dot = s.find('.');
    const auto end = f.scientific ? s.find('e') : s.size();
    f.frac_digits = std::max(f.frac_digits, static_cast<int>(end - dot - 1));
    f.int_width = std::max(f.int_width, static_cast<int>(dot));
  }
  return f;
}

std::string format_float(double v, const FloatFormat& f) {
  std::string s;
  if (!std::isfinite(v)) {
    s = nonfinite(v);
    const int w = f.int_width + 1 + f.frac_digits;
    return std::string(static_cast<std::size_t>(std::max(0, w - static_cast<int>(s.size()))), ' ') + s;
  }
  s = f.scientific ? scientific(v, kPrecision) : strip_zeros(positional(v, kPrecision));
  const auto dot = s.find('.');
  const auto end = f.scientific ? s.find('e') : s.size();
  const int frac = static_cast<int>(end - dot - 1);
  std::string left(static_cast<std::size_t>(std::max(0, f.int_width - static_cast<int>(dot))), ' ');
  std::string pad(static_cast<std::size_t>(f.frac_digits - frac), f.scientific ? '0' : ' ');
  if (f.scientific) return left + s.substr(0, end) + pad + s.substr(end);
  return left + s + pad;
}

class Printer {
 public:
  explicit Printer(const Array& a) : a_(a.to(Device::cpu())), summarize_(a.size() > kThreshold) {
    // Gather the printed elements to choose one format for all.
    std::vector<int64_t> idx;
    collect(0, idx);
    if (is_floating(a_.dtype())) fmt_ = choose_format(printed_);
    for (double v : printed_) width_ = std::max(width_, static_cast<int>(format(v).size()));
  }

  std::string body(int indent) {
    std::ostringstream os;
    std::vector<int64_t> idx;
    emit(os, 0, idx, indent);
    return os.str();
  }

 private:
  std::vector<int64_t> axis_positions(int64_t n) const {
    std::vector<int64_t> pos;
    if (summarize_ && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) pos.push_back(i);
      pos.push_back(-1);  // the ellipsis
      for (int64_t i = n - kEdgeItems; i < n; ++i) pos.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) pos.push_back(i);
    }
    return pos;
  }

  double value(const std::vector<int64_t>& idx) const { return a_.at<double>(idx); }

  void collect(std::size_t axis, std::vector<int64_t>& idx) {
    if (axis == static_cast<std::size_t>(a_.ndim())) {
      printed_.push_back(value(idx));
      return;
    }
    for (int64_t i : axis_positions(a_.shape()[axis])) {
      if (i < 0) continue;
      idx.push_back(i);
      collect(axis + 1, idx);
      idx.pop_back();
    }
  }

  std::string format(double v) const {
    if (a_.dtype() == Dtype::bool_) return v != 0 ? "True" : "False";
    if (is_floating(a_.dtype())) return format_float(v, fmt_);
    std::ostringstream os;
    os << static_cast<int64_t>(v);
    return os.str();
  }

  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(static_cast<std::size_t>(std::max(0, width_ - static_cast<int>(s.size()))), ' ') + s;
  }

  void emit(std::ostringstream& os, std::size_t axis, std::vector<int64_t>& idx, int indent) {
    const auto nd = static_cast<std::size_t>(a_.ndim());
    if (nd == 0) {
      os << format(value(idx));
      return;
    }
    os << '[';
    bool first = true;
    for (int64_t i : axis_positions(a_.shape()[axis])) {
      if (!first) {
        if (axis + 1 == nd) {
          os << ", ";
        } else {
          os << ',' << std::string(nd - axis - 1, '\n')
             << std::string(static_cast<std::size_t>(indent) + axis + 1, ' ');
        }
      }
      first = false;
      if (i < 0) {
        os << "...";
        continue;
      }
      idx.push_back(i);
      if (axis + 1 == nd) os << padded(value(idx));
      else emit(os, axis + 1, idx, indent);
      idx.pop_back();
    }
    os << ']';
  }

  Array a_;
  bool summarize_;
  std::vector<double> printed_;
  FloatFormat fmt_;
  int width_ = 0;
};

}  // namespace

std::string Array::to_string() const {
  if (is_null()) return "array(null)";
  std::ostringstream os;
  os << "array(";
  if (size() == 0) {
    os << std::string(shape_.empty() ? 0 : 1, '[') << std::string(shape_.empty() ? 0 : 1, ']');
    os << ", shape=" << shape_;
  } else {
    Printer p(*this);
    os << p.body(6);
  }
  if (dtype_ != Dtype::float64 && dtype_ != Dtype::int64 && dtype_ != Dtype::bool_) os << ", dtype=" << dtype_;
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.to_string(); }

}  // namespace rensa
