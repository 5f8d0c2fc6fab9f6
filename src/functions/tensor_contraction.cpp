// Tensor contractions: tensordot, batch_matmul and einsum, all lowered to transpose, reshape and
// matmul (so they are as fast as matmul and differentiable to every order).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

}  // namespace

Variable tensordot(const Variable& a, const Variable& b, const Shape& a_axes, const Shape& b_axes) {
  constexpr const char* op = "tensordot";
  detail::check_floating(op, a, "a");
  detail::check_floating(op, b, "b");
  detail::check_same_dtype_device(op, {&a, &b});
  RENSA_CHECK(a_axes.size() == b_axes.size(), ShapeError, op, ": ", a_axes.size(), " axes of a ", a.shape(),
              " but ", b_axes.size(), " of b ", b.shape());
  std::vector<bool> ca(static_cast<std::size_t>(a.ndim())), cb(static_cast<std::size_t>(b.ndim()));
  Shape pa, pb;  // a's axes: free then contracted; b's: contracted then free
  Shape contracted_a, contracted_b;
  for (std::size_t i = 0; i < a_axes.size(); ++i) {
    const int64_t x = normalize_axis(a_axes[i], a.ndim(), op), y = normalize_axis(b_axes[i], b.ndim(), op);
    RENSA_CHECK(!ca[static_cast<std::size_t>(x)] && !cb[static_cast<std::size_t>(y)], IndexError, op,
                ": an axis is listed twice (a axes ", a_axes, ", b axes ", b_axes, ")");
    RENSA_CHECK(a.shape()[static_cast<std::size_t>(x)] == b.shape()[static_cast<std::size_t>(y)], ShapeError, op,
                ": axis ", x, " of a ", a.shape(), " and axis ", y, " of b ", b.shape(), " differ");
    ca[static_cast<std::size_t>(x)] = cb[static_cast<std::size_t>(y)] = true;
    contracted_a.push_back(x);
    contracted_b.push_back(y);
  }
  Shape out_shape;
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (!ca[static_cast<std::size_t>(i)]) {
      pa.push_back(i);
      out_shape.push_back(a.shape()[static_cast<std::size_t>(i)]);
    }
  }
  const std::size_t free_a = pa.size();
  for (int64_t x : contracted_a) pa.push_back(x);
  pb = contracted_b;
  for (int64_t i = 0; i < b.ndim(); ++i) {
    if (!cb[static_cast<std::size_t>(i)]) {
      pb.push_back(i);
      out_shape.push_back(b.shape()[static_cast<std::size_t>(i)]);
    }
  }
  const Variable at = transpose(a, pa), bt = transpose(b, pb);
  const int64_t m = product(at.shape(), 0, free_a), k = product(at.shape(), free_a, at.shape().size());
  const int64_t n = product(bt.shape(), contracted_b.size(), bt.shape().size());
  return reshape(matmul(reshape(at, {m, k}), reshape(bt, {k, n})), out_shape);
}

Variable tensordot(const Variable& a, const Variable& b, int64_t axes) {
  RENSA_CHECK(!a.is_null() && !b.is_null(), ValueError, "tensordot: a or b is null");
  RENSA_CHECK(axes >= 0 && axes <= a.ndim() && axes <= b.ndim(), ShapeError, "tensordot: axes ", axes,
              " must be in [0, min(", a.ndim(), ", ", b.ndim(), ")] for a ", a.shape(), " and b ", b.shape());
  Shape aa, ba;
  for (int64_t i = 0; i < axes; ++i) {
    aa.push_back(a.ndim() - axes + i);
    ba.push_back(i);
  }
  return tensordot(a, b, aa, ba);
}

Variable batch_matmul(const Variable& a, const Variable& b, bool transa, bool transb) {
  constexpr const char* op = "batch_matmul";
  detail::check_floating(op, a, "a");
  detail::check_floating(op, b, "b");
  auto as3 = [](const Variable& v) { return v.ndim() == 2 ? expand_dims(v, 2) : v; };
  RENSA_CHECK((a.ndim() == 2 || a.ndim() == 3) && (b.ndim() == 2 || b.ndim() == 3) && a.shape()[0] == b.shape()[0],
              ShapeError, op, ": a ", a.shape(), " and b ", b.shape(), " must be (B, N, M) / (B, N) with one B");
  return matmul(as3(a), as3(b), transa, transb);
}

// ---- einsum ------------------------------------------------------------------------------------

namespace {

constexpr const char* kEinsum = "einsum";

// A term's labels: letters as their character codes, the ellipsis' axes as 256 + k, k counted so
// that the ellipsis axes of every operand align at the right.
using Labels = std::vector<int>;

struct Parsed {
  std::vector<std::string> inputs;
  std::string output;
  bool explicit_output = false;
};

Parsed split(const std::string& subscripts, std::size_t n_operands) {
  std::string s;
  for (char c : subscripts) {
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  }
  Parsed p;
  const auto arrow = s.find("->");
  std::string lhs = s;
  if (arrow != std::string::npos) {
    lhs = s.substr(0, arrow);
    p.output = s.substr(arrow + 2);
    p.explicit_output = true;
  }
  std::size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    p.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  RENSA_CHECK(p.inputs.size() == n_operands, ValueError, kEinsum, ": '", subscripts, "' has ", p.inputs.size(),
              " input terms for ", n_operands, " operands");
  return p;
}

// The labels of `term` for an operand of rank `ndim`, with `ell` the widest ellipsis.
Labels labels_of(const std::string& term, int64_t ndim, int64_t ell, const std::string& subscripts) {
  Labels out;
  int64_t letters = 0;
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      i += 2;
      continue;
    }
    RENSA_CHECK(std::isalpha(static_cast<unsigned char>(term[i])), ValueError, kEinsum, ": '", subscripts,
                "' has '", term[i], "'; terms hold letters and one '...'");
    ++letters;
  }
  const bool has_ell = term.find("...") != std::string::npos;
  RENSA_CHECK(term.find("...") == term.rfind("..."), ValueError, kEinsum, ": '", subscripts, "' has two '...' in '",
              term, "'");
  const int64_t e = ndim - letters;
  RENSA_CHECK(e == 0 || (has_ell && e > 0), ValueError, kEinsum, ": term '", term, "' of '", subscripts, "' names ",
              letters, " axes of an operand with ", ndim);
  for (std::size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      for (int64_t k = 0; k < e; ++k) out.push_back(256 + static_cast<int>(ell - e + k));
      i += 2;
    } else {
      out.push_back(static_cast<unsigned char>(term[i]));
    }
  }
  return out;
}

int64_t ellipsis_rank(const std::string& term, int64_t ndim) {
  if (term.find("...") == std::string::npos) return 0;
  int64_t letters = 0;
  for (char c : term) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  return std::max<int64_t>(ndim - letters, 0);
}

struct Operand {
  Variable v;
  Labels labels;
};

int64_t index_of(const Labels& l, int label) {
  return static_cast<int64_t>(std::find(l.begin(), l.end(), label) - l.begin());
}

// Takes the diagonal of every label repeated within x (x_ii -> x_i): multiply by the identity on
// those two axes and sum one of them.
Operand diagonals(Operand x) {
  for (std::size_t j = 1; j < x.labels.size(); ++j) {
    const auto first = static_cast<std::size_t>(index_of(x.labels, x.labels[j]));
    if (first == j) continue;
    const int64_t n = x.v.shape()[j];
    Shape eye_shape(x.labels.size(), 1);
    eye_shape[first] = eye_shape[j] = n;
    std::vector<double> eye(static_cast<std::size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[static_cast<std::size_t>(i * n + i)] = 1.0;
    const Variable id(Array::from_vector(eye, eye_shape).astype(x.v.dtype()).to(x.v.device()));
    x.v = sum(mul(x.v, id), Shape{static_cast<int64_t>(j)});
    x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(j));
    return diagonals(std::move(x));
  }
  return x;
}

// Sums the axes whose labels are not in `keep`.
Operand sum_unkept(Operand x, const std::vector<int>& keep) {
  Shape axes;
  Labels kept;
  for (std::size_t i = 0; i < x.labels.size(); ++i) {
    if (std::find(keep.begin(), keep.end(), x.labels[i]) == keep.end()) {
      axes.push_back(static_cast<int64_t>(i));
    } else {
      kept.push_back(x.labels[i]);
    }
  }
  if (!axes.empty()) x.v = sum(x.v, axes);
  x.labels = kept;
  return x;
}

// a and b contracted over their shared labels not in `keep`, batched over those in it.
Operand contract(const Operand& a, const Operand& b, const std::vector<int>& keep,
                 const std::map<int, int64_t>& extent) {
  Labels batch, shared, free_a, free_b;
  for (int l : a.labels) {
    const bool in_b = index_of(b.labels, l) < static_cast<int64_t>(b.labels.size());
    const bool kept = std::find(keep.begin(), keep.end(), l) != keep.end();
    (in_b ? (kept ? batch : shared) : free_a).push_back(l);
  }
  for (int l : b.labels) {
    if (index_of(a.labels, l) == static_cast<int64_t>(a.labels.size())) free_b.push_back(l);
  }
  auto perm = [](const Operand& x, std::initializer_list<const Labels*> groups) {
    Shape p;
    for (const Labels* g : groups) {
      for (int l : *g) p.push_back(index_of(x.labels, l));
    }
    return p;
  };
  auto size = [&](const Labels& g) {
    int64_t s = 1;
    for (int l : g) s *= extent.at(l);
    return s;
  };
  const int64_t nb = size(batch), na = size(free_a), nk = size(shared), nf = size(free_b);
  const Variable at = reshape(transpose(a.v, perm(a, {&batch, &free_a, &shared})), {nb, na, nk});
  const Variable bt = reshape(transpose(b.v, perm(b, {&batch, &shared, &free_b})), {nb, nk, nf});
  Operand out;
  out.labels = batch;
  out.labels.insert(out.labels.end(), free_a.begin(), free_a.end());
  out.labels.insert(out.labels.end(), free_b.begin(), free_b.end());
  Shape shape;
  for (int l : out.labels) shape.push_back(extent.at(l));
  out.v = reshape(matmul(at, bt), shape);
  return out;
}

}  // namespace

Variable einsum(const std::string& subscripts, const std::vector<Variable>& operands) {
  RENSA_CHECK(!operands.empty(), ValueError, kEinsum, ": no operands for '", subscripts, "'");
  for (const auto& v : operands) detail::check_floating(kEinsum, v, "an operand");
  for (const auto& v : operands) detail::check_same_dtype_device(kEinsum, {&operands[0], &v});
  const Parsed p = split(subscripts, operands.size());
  int64_t ell = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) ell = std::max(ell, ellipsis_rank(p.inputs[i], operands[i].ndim()));
  std::vector<Operand> ops;
  std::map<int, int64_t> extent;
  std::map<int, int> count;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    Operand o{operands[i], labels_of(p.inputs[i], operands[i].ndim(), ell, subscripts)};
    for (std::size_t a = 0; a < o.labels.size(); ++a) {
      const int l = o.labels[a];
      const int64_t n = o.v.shape()[a];
      auto [it, fresh] = extent.emplace(l, n);
      // Ellipsis axes broadcast (1 against n); letters must agree.
      if (!fresh && it->second != n) {
        RENSA_CHECK(l >= 256 && (n == 1 || it->second == 1), ShapeError, kEinsum, ": in '", subscripts, "' label ",
                    l < 256 ? std::string(1, static_cast<char>(l)) : std::string("..."), " has extents ",
                    it->second, " and ", n, " (operand ", i, " ", o.v.shape(), ")");
        it->second = std::max(it->second, n);
      }
      ++count[l];
    }
    ops.push_back(std::move(o));
  }
  // Broadcast ellipsis axes of extent 1 up to the label's extent.
  for (auto& o : ops) {
    Shape target;
    for (int l : o.labels) target.push_back(extent[l]);
    if (target != o.v.shape()) o.v = broadcast_to(o.v, target);
  }
  Labels out;
  if (p.explicit_output) {
    RENSA_CHECK(ell == 0 || p.output.find("...") != std::string::npos, ValueError, kEinsum, ": '", subscripts,
                "' has '...' in its inputs but not in its output");
    out = labels_of(p.output, static_cast<int64_t>(p.output.find("...") == std::string::npos ? 0 : ell) +
                                  static_cast<int64_t>(std::count_if(p.output.begin(), p.output.end(),
                                                                     [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })),
                    ell, subscripts);
    for (std::size_t i = 0; i < out.size(); ++i) {
      RENSA_CHECK(extent.count(out[i]) == 1, ValueError, kEinsum, ": output label '", static_cast<char>(out[i]),
                  "' of '", subscripts, "' is in no input term");
      RENSA_CHECK(index_of(out, out[i]) == static_cast<int64_t>(i), ValueError, kEinsum, ": output label '",
                  static_cast<char>(out[i]), "' of '", subscripts, "' is repeated");
    }
  } else {
    for (int64_t k = 0; k < ell; ++k) out.push_back(256 + static_cast<int>(k));
    for (const auto& [l, c] : count) {
      if (l < 256 && c == 1) out.push_back(l);
    }
  }
  // Diagonals first, then labels seen in one operand only (and not in the output) summed away.
  for (auto& o : ops) {
    o = diagonals(std::move(o));
    std::vector<int> keep = out;
    for (const auto& other : ops) {
      if (&other == &o) continue;
      keep.insert(keep.end(), other.labels.begin(), other.labels.end());
    }
    o = sum_unkept(std::move(o), keep);
  }
  Operand acc = ops[0];
  for (std::size_t i = 1; i < ops.size(); ++i) {
    std::vector<int> keep = out;
    for (std::size_t j = i + 1; j < ops.size(); ++j) keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
    acc = contract(acc, ops[i], keep, extent);
  }
  acc = sum_unkept(std::move(acc), out);
  Shape perm;
  for (int l : out) perm.push_back(index_of(acc.labels, l));
  return perm.empty() ? acc.v : transpose(acc.v, perm);
}

}  // namespace rensa::functions
