// Link, Chain, ChainList and Sequential: registration by name, path enumeration, and the
// structure-wide operations (gradients, copies, devices, serialization).
#include "rensa/links/link.h"

#include <algorithm>
#include <string>
#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/basic_math.h"

namespace rensa {
namespace {

// "/l1" + "/" + "W", with the root prefix being "".
std::string join(const std::string& prefix, const std::string& name) { return prefix + "/" + name; }

template <class Vec>
auto find_name(Vec& v, const std::string& name) {
  return std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == name; });
}

// Moves `a` to `device` and converts it to `dtype` (no copy when it already matches).
Array convert(const Array& a, Dtype dtype, Device device) {
  Array out = a.device() == device ? a : a.to(device);
  return out.dtype() == dtype ? out : out.astype(dtype);
}

// Pairs the parameters of two links path by path; ValueError naming the first difference.
std::vector<std::pair<std::pair<std::string, Variable>, Variable>> match_params(const char* op, const Link& self,
                                                                                const Link& other) {
  auto mine = self.namedparams();
  auto theirs = other.namedparams();
  std::vector<std::pair<std::pair<std::string, Variable>, Variable>> out;
  const std::size_t n = std::min(mine.size(), theirs.size());
  for (std::size_t i = 0; i < n; ++i) {
    RENSA_CHECK(mine[i].first == theirs[i].first, ValueError, op, ": the links differ in structure: parameter ", i,
                " is '", mine[i].first, "' here and '", theirs[i].first, "' in the other link");
    out.push_back({std::move(mine[i]), std::move(theirs[i].second)});
  }
  RENSA_CHECK(mine.size() == theirs.size(), ValueError, op, ": the links differ in structure: ",
              mine.size() > n ? "this link has parameter '" : "the other link has parameter '",
              mine.size() > n ? mine[n].first : theirs[n].first, "' that the other lacks (", mine.size(), " vs ",
              theirs.size(), " parameters)");
  return out;
}

}  // namespace

// ---- Link ----------------------------------------------------------------------------------------

void Link::check_new_name(const char* op, const std::string& name) const {
  RENSA_CHECK(!name.empty(), ValueError, op, ": empty name");
  RENSA_CHECK(name.find('/') == std::string::npos, ValueError, op, ": name '", name, "' contains '/'");
  RENSA_CHECK(find_name(params_, name) == params_.end(), ValueError, op, ": '", name,
              "' is already a parameter of this link");
  RENSA_CHECK(find_name(persistents_, name) == persistents_.end(), ValueError, op, ": '", name,
              "' is already a persistent value of this link");
  const auto kids = children();
  RENSA_CHECK(find_name(kids, name) == kids.end(), ValueError, op, ": '", name, "' is already a child of this link");
}

Variable Link::add_param(const std::string& name, Array init) {
  check_new_name("Link::add_param", name);
  RENSA_CHECK(init.is_null() || is_floating(init.dtype()), DtypeError, "Link::add_param: parameter '", name,
              "' must have a floating dtype, got ", init.dtype());
  if (init.is_null()) return add_param(name, get_dtype());
  Variable v(std::move(init), true);
  v.set_name(name);
  params_.emplace_back(name, v);
  return v;
}

Variable Link::add_param(const std::string& name, Dtype dtype) {
  check_new_name("Link::add_param", name);
  RENSA_CHECK(is_floating(dtype), DtypeError, "Link::add_param: parameter '", name,
              "' must have a floating dtype, got ", dtype);
  Variable v(Array(), true);
  v.set_name(name);
  params_.emplace_back(name, v);
  lazy_dtypes_.emplace_back(name, dtype);
  return v;
}

void Link::add_persistent(const std::string& name, Array value) {
  check_new_name("Link::add_persistent", name);
  persistents_.emplace_back(name, std::move(value));
}

Array& Link::persistent(const std::string& name) {
  auto it = find_name(persistents_, name);
  RENSA_CHECK(it != persistents_.end(), ValueError, "Link::persistent: no persistent value '", name, "'");
  return it->second;
}

Variable Link::param(const std::string& name) const {
  auto it = find_name(params_, name);
  RENSA_CHECK(it != params_.end(), ValueError, "Link::param: no parameter '", name, "'");
  return it->second;
}

void Link::remove_param(const std::string& name) {
  auto it = find_name(params_, name);
  RENSA_CHECK(it != params_.end(), ValueError, "Link::remove_param: no parameter '", name, "'");
  params_.erase(it);
  std::erase_if(lazy_dtypes_, [&](const auto& e) { return e.first == name; });
}

void Link::remove_persistent(const std::string& name) {
  auto it = find_name(persistents_, name);
  RENSA_CHECK(it != persistents_.end(), ValueError, "Link::remove_persistent: no persistent value '", name, "'");
  persistents_.erase(it);
}

void Link::set_param_transform(const std::string& name, std::function<Variable(const Variable&)> transform) {
  RENSA_CHECK(find_name(params_, name) != params_.end(), ValueError, "Link::set_param_transform: no parameter '",
              name, "'");
  if (transform) {
    param_transforms_.push_back({name, std::move(transform)});
    return;
  }
  auto latest = std::find_if(param_transforms_.rbegin(), param_transforms_.rend(),
                             [&](const auto& t) { return t.name == name; });
  RENSA_CHECK(latest != param_transforms_.rend(), ValueError, "Link::set_param_transform: parameter '", name,
              "' has no transform to clear");
  param_transforms_.erase(std::next(latest).base());
}

bool Link::param_transform_applied(const std::string& name) const {
  return std::any_of(param_transforms_.begin(), param_transforms_.end(),
                     [&](const auto& t) { return t.name == name && t.applied; });
}

Variable Link::apply_param_transform(const Variable& p) const {
  Variable v = p;
  for (const auto& t : param_transforms_) {
    auto it = find_name(params_, t.name);
    if (it != params_.end() && it->second.is(p)) {
      t.applied = true;
      v = t.fn(v);
    }
  }
  return v;
}

void Link::collect_params(const std::string& prefix, bool include_uninit,
                         std::vector<std::pair<std::string, Variable>>& out) const {
  for (const auto& [name, v] : params_) {
    if (include_uninit || !v.array().is_null()) out.emplace_back(join(prefix, name), v);
  }
  for (const auto& [name, child] : children()) child->collect_params(join(prefix, name), include_uninit, out);
}

void Link::collect_persistents(const std::string& prefix, std::vector<std::pair<std::string, Array*>>& out) const {
  // Persistent values are stored by value; the pointers handed out are mutable views of them.
  for (const auto& [name, a] : persistents_) out.emplace_back(join(prefix, name), const_cast<Array*>(&a));
  for (const auto& [name, child] : children()) child->collect_persistents(join(prefix, name), out);
}

std::vector<std::pair<std::string, Variable>> Link::namedparams(bool include_uninit) const {
  std::vector<std::pair<std::string, Variable>> out;
  collect_params("", include_uninit, out);
  return out;
}

std::vector<Variable> Link::params(bool include_uninit) const {
  std::vector<Variable> out;
  for (auto& [path, v] : namedparams(include_uninit)) out.push_back(std::move(v));
  return out;
}

std::vector<std::pair<std::string, Array*>> Link::namedpersistents() {
  std::vector<std::pair<std::string, Array*>> out;
  collect_persistents("", out);
  return out;
}

std::vector<std::pair<std::string, Link*>> Link::namedlinks(bool skipself) {
  std::vector<std::pair<std::string, Link*>> out;
  if (!skipself) out.emplace_back("/", this);
  for (const auto& [name, child] : children()) {
    const std::string prefix = "/" + name;
    out.emplace_back(prefix, child);
    for (const auto& [path, link] : child->namedlinks(true)) out.emplace_back(prefix + path, link);
  }
  return out;
}

void Link::cleargrads() {
  for (const auto& v : params()) v.cleargrad();
}

void Link::zerograds() {
  for (const auto& v : params(false)) {
    const Array& a = v.array();
    v.set_grad(Variable(Array::zeros(a.shape(), a.dtype(), a.device())));
  }
}

void Link::copyparams(const Link& other, bool copy_persistent) {
  for (auto& [mine, src] : match_params("Link::copyparams", *this, other)) {
    const auto& [path, dst] = mine;
    if (src.array().is_null()) {
      RENSA_CHECK(dst.array().is_null(), ValueError, "Link::copyparams: parameter '", path,
                  "' is uninitialized in the other link");
      continue;
    }
    if (dst.array().is_null()) {
      // Adopt a copy on the device of the link that owns the parameter.
      Array init = src.array().copy();
      dst.set_array(src.array().device() == device_ ? init : init.to(device_));
      continue;
    }
    RENSA_CHECK(dst.shape() == src.shape(), ShapeError, "Link::copyparams: parameter '", path, "' has shape ",
                dst.shape(), " here and ", src.shape(), " in the other link");
    dst.array().assign(convert(src.array(), dst.dtype(), dst.device()));
  }
  if (!copy_persistent) return;
  auto mine = namedpersistents();
  std::vector<std::pair<std::string, Array*>> theirs;
  other.collect_persistents("", theirs);
  RENSA_CHECK(mine.size() == theirs.size(), ValueError,
              "Link::copyparams: the links differ in structure: ", mine.size(), " vs ", theirs.size(),
              " persistent values");
  for (std::size_t i = 0; i < mine.size(); ++i) {
    RENSA_CHECK(mine[i].first == theirs[i].first, ValueError, "Link::copyparams: the links differ in structure: ",
                "persistent value ", i, " is '", mine[i].first, "' here and '", theirs[i].first,
                "' in the other link");
    Array& dst = *mine[i].second;
    const Array& src = *theirs[i].second;
    if (src.is_null()) continue;
    if (dst.is_null()) {
      dst = src.device() == device_ ? src.copy() : src.to(device_);
      continue;
    }
    RENSA_CHECK(dst.shape() == src.shape(), ShapeError, "Link::copyparams: persistent value '", mine[i].first,
                "' has shape ", dst.shape(), " here and ", src.shape(), " in the other link");
    dst.assign(convert(src, dst.dtype(), dst.device()));
  }
}

void Link::addgrads(const Link& other) {
  auto guard = no_backprop_mode();
  for (auto& [mine, src] : match_params("Link::addgrads", *this, other)) {
    const auto& [path, dst] = mine;
    const Variable g = src.array().is_null() ? Variable() : src.grad();
    if (g.is_null()) continue;
    RENSA_CHECK(!dst.array().is_null(), ValueError, "Link::addgrads: parameter '", path,
                "' is uninitialized here but has a gradient in the other link");
    RENSA_CHECK(dst.shape() == src.shape(), ShapeError, "Link::addgrads: parameter '", path, "' has shape ",
                dst.shape(), " here and ", src.shape(), " in the other link");
    Array ga = convert(g.array(), dst.dtype(), dst.device());
    const Variable mine_grad = dst.grad();
    if (mine_grad.is_null()) {
      dst.set_grad(Variable(ga.shares_storage(g.array()) ? ga.copy() : ga));
    } else {
      dst.set_grad(functions::add(mine_grad, Variable(ga)));
    }
  }
}

void Link::to_device(Device device) {
  for (const auto& [name, v] : params_) {
    if (!v.array().is_null()) v.set_array(v.array().to(device));
    const Variable g = v.grad();
    if (!g.is_null()) g.set_array(g.array().to(device));
  }
  for (auto& [name, a] : persistents_) {
    if (!a.is_null()) a = a.to(device);
  }
  for (const auto& [name, child] : children()) child->to_device(device);
  device_ = device;
}

int64_t Link::count_params() const {
  int64_t n = 0;
  for (const auto& v : params(false)) n += v.size();
  return n;
}

void Link::serialize(serializers::Serializer& s) {
  for (const auto& [name, v] : params_) {
    Array a = v.array();
    if (!s.is_loading()) {
      if (!a.is_null()) s.array(name, a);
      continue;
    }
    // Loading into an initialized parameter copies into its memory (aliases stay valid); an
    // uninitialized one adopts a copy of the stored array (the deserializer's may be shared), in
    // its declared dtype.
    const bool was_null = a.is_null();
    s.array(name, a);
    if (was_null && !a.is_null()) {
      const auto declared = std::find_if(lazy_dtypes_.begin(), lazy_dtypes_.end(),
                                         [&n = name](const auto& e) { return e.first == n; });
      if (declared != lazy_dtypes_.end() && a.dtype() != declared->second) a = a.astype(declared->second);
      v.set_array(a.device() == device_ ? a.copy() : a.to(device_));
    }
  }
  for (auto& [name, a] : persistents_) {
    const bool was_null = a.is_null();
    s.array(name, a);
    if (was_null && !a.is_null() && s.is_loading()) a = a.device() == device_ ? a.copy() : a.to(device_);
  }
  for (const auto& [name, child] : children()) child->serialize(s.child(name));
}

Variable Link::forward(const Variable&) {
  RENSA_THROW(NotImplementedError, "Link::forward: this link", name_.empty() ? "" : " '", name_,
              name_.empty() ? "" : "'", " does not implement a single-input forward");
}

Variable Link::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 1, NotImplementedError, "Link::forward: this link takes one input, got ",
              inputs.size(), " (override forward(const std::vector<Variable>&) for several)");
  return forward(inputs[0]);
}

// ---- Chain ---------------------------------------------------------------------------------------

void Chain::add_link(const std::string& name, Link& link) {
  check_new_name("Chain::add_link", name);
  RENSA_CHECK(&link != this, ValueError, "Chain::add_link: a chain cannot be its own child ('", name, "')");
  auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.second == &link; });
  RENSA_CHECK(it == children_.end(), ValueError, "Chain::add_link: the link given as '", name,
              "' is already registered as '", it == children_.end() ? std::string() : it->first, "'");
  children_.emplace_back(name, &link);
}

void Chain::add_link(const std::string& name, std::shared_ptr<Link> link) {
  RENSA_CHECK(link != nullptr, ValueError, "Chain::add_link: null link for '", name, "'");
  add_link(name, *link);
  owned_.push_back(std::move(link));
}

std::vector<std::pair<std::string, Link*>> Chain::children() const { return children_; }

Link& Chain::child(const std::string& name) const {
  auto it = find_name(children_, name);
  RENSA_CHECK(it != children_.end(), ValueError, "Chain::child: no child '", name, "'");
  return *it->second;
}

// ---- ChainList -----------------------------------------------------------------------------------

void ChainList::append(Link& link) {
  RENSA_CHECK(&link != this, ValueError, "ChainList::append: a chain list cannot be its own child");
  auto it = std::find(children_.begin(), children_.end(), &link);
  RENSA_CHECK(it == children_.end(), ValueError, "ChainList::append: the link is already child ",
              it - children_.begin());
  children_.push_back(&link);
}

void ChainList::append(std::shared_ptr<Link> link) {
  RENSA_CHECK(link != nullptr, ValueError, "ChainList::append: null link");
  append(*link);
  owned_.push_back(std::move(link));
}

Link& ChainList::operator[](std::size_t i) const {
  RENSA_CHECK(i < children_.size(), IndexError, "ChainList::operator[]: index ", i, " is out of range for ",
              children_.size(), " children");
  return *children_[i];
}

std::vector<std::pair<std::string, Link*>> ChainList::children() const {
  std::vector<std::pair<std::string, Link*>> out;
  out.reserve(children_.size());
  for (std::size_t i = 0; i < children_.size(); ++i) out.emplace_back(std::to_string(i), children_[i]);
  return out;
}

// ---- Sequential ----------------------------------------------------------------------------------

Sequential& Sequential::add(std::shared_ptr<Link> link) {
  RENSA_CHECK(link != nullptr, ValueError, "Sequential::add: null link");
  append(std::move(link));
  steps_.emplace_back(static_cast<int>(size()) - 1, nullptr);
  return *this;
}

Sequential& Sequential::add(Link& link) {
  append(link);
  steps_.emplace_back(static_cast<int>(size()) - 1, nullptr);
  return *this;
}

Sequential& Sequential::add(std::function<Variable(const Variable&)> fn) {
  RENSA_CHECK(static_cast<bool>(fn), ValueError, "Sequential::add: empty function");
  steps_.emplace_back(-1, std::move(fn));
  return *this;
}

Variable Sequential::forward(const Variable& x) {
  Variable h = x;
  for (const auto& [index, fn] : steps_) h = index >= 0 ? (*this)[static_cast<std::size_t>(index)](h) : fn(h);
  return h;
}

}  // namespace rensa
