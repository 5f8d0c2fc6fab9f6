#pragma once
/// \file
/// Link, Chain and ChainList: named parameters and persistent values, nested by name (Chainer's
/// model structure). `namedparams()` gives stable paths like "/l1/W", the order in which
/// data-parallel training packs gradients.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/config.h"
#include "rensa/core/debug_site.h"
#include "rensa/core/variable.h"
#include "rensa/serializers/serializer.h"

namespace rensa {

class Link;
class LinkHook;

/// A link's forward as link hooks see it (Chainer's callback args): `out` is empty in
/// forward_preprocess, and in forward_postprocess too when the forward threw or returned no
/// Variable.
struct LinkForwardCall {
  /// The link whose forward is called.
  Link& link;
  /// Which forward runs ("forward").
  std::string_view forward_name;
  /// The arguments passed to the forward.
  std::span<const Variable> args;
  /// The result (one Variable), empty as said above.
  std::span<const Variable> out;
};

namespace detail {
/// Link hooks installed on all threads (LinkHookScope); the call operator tests it first.
extern std::atomic<int> g_link_observers;

/// Runs the hooks around one hooked link call: pre in the constructor, post in finish() or, when
/// the forward threw, in the destructor.
class LinkCallObserver {
 public:
  LinkCallObserver(Link& link, std::span<const Variable> args);
  ~LinkCallObserver();
  LinkCallObserver(const LinkCallObserver&) = delete;
  LinkCallObserver& operator=(const LinkCallObserver&) = delete;
  void finish(std::span<const Variable> out);

 private:
  Link& link_;
  std::span<const Variable> args_;
  std::vector<LinkHook*> hooks_;
  std::optional<DebugLinkScope> debug_scope_;  // in debug mode: names the link in error sites
  bool finished_ = false;
};

inline std::span<const Variable> hook_outputs(const Variable& v) { return {&v, 1}; }
inline std::span<const Variable> hook_outputs(const std::pair<Variable, Variable>& p) {
  static_assert(sizeof(std::pair<Variable, Variable>) == 2 * sizeof(Variable));
  return {&p.first, 2};
}
template <class T>
std::span<const Variable> hook_outputs(const T&) {
  return {};
}
}  // namespace detail

/// A layer: owns parameters (Variables that require grad) and persistent values (Arrays such as
/// batch-norm statistics), each registered by name. Links are identity objects: not copyable or
/// movable (copy values with copyparams).
class Link {
 public:
  Link() = default;
  virtual ~Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  /// Registers parameter `name`. A null `init` leaves it uninitialized (lazy: the link sets its
  /// array at the first forward). Returns the registered variable (a handle: it aliases the
  /// stored one). ValueError for a duplicate or empty name, or one containing '/'.
  Variable add_param(const std::string& name, Array init = Array());
  /// Registers uninitialized parameter `name` that will hold `dtype` (floating; DtypeError
  /// otherwise): loading it from a file casts to `dtype`, as Chainer's uninitialized Parameter.
  /// add_param(name) without an array declares the config's dtype at registration.
  Variable add_param(const std::string& name, Dtype dtype);
  /// Registers persistent value `name` (saved and loaded, not trained).
  void add_persistent(const std::string& name, Array value);
  /// The persistent value `name` (ValueError if absent). Assigning to the returned reference
  /// replaces it.
  Array& persistent(const std::string& name);
  /// The parameter `name` of this link (not of children); ValueError if absent.
  Variable param(const std::string& name) const;
  /// Unregisters parameter or persistent value `name` (Chainer's delattr; used by link hooks that
  /// registered their own). ValueError if absent. An optimizer set up before keeps its handle.
  void remove_param(const std::string& name);
  /// Unregisters persistent value `name` (Chainer's delattr); ValueError if absent.
  void remove_persistent(const std::string& name);

  /// Makes this link's forward read parameter `name` through `transform` until it is cleared: how
  /// SpectralNormalization and WeightStandardization substitute the normalized weight for one call
  /// (Chainer's hooks setattr it). Transforms set on one parameter compose in the order set (two
  /// hooks on one link normalize in turn, as Chainer's); a null transform clears the latest one.
  /// Honoured by the links that read their weight through param_in_forward (Linear,
  /// Convolution2D, Deconvolution2D, ConvolutionND, DeconvolutionND, EmbedID). ValueError for an
  /// unknown parameter, or for clearing when none is set.
  void set_param_transform(const std::string& name, std::function<Variable(const Variable&)> transform);
  /// Whether a forward read parameter `name` through its transforms since they were set.
  bool param_transform_applied(const std::string& name) const;

  /// Parameters of this link and all descendants with their paths ("/W", "/l1/W"), in
  /// registration order, depth first. Uninitialized parameters are included unless
  /// `include_uninit` is false.
  std::vector<std::pair<std::string, Variable>> namedparams(bool include_uninit = true) const;
  /// The parameters of namedparams(), without their paths.
  std::vector<Variable> params(bool include_uninit = true) const;
  /// Persistent values with their paths.
  std::vector<std::pair<std::string, Array*>> namedpersistents();
  /// Direct children with their names (empty for a plain Link).
  virtual std::vector<std::pair<std::string, Link*>> children() const { return {}; }
  /// All links below this one with their paths ("/", "/l1", ...), this one first unless
  /// `skipself` (Chainer's namedlinks).
  std::vector<std::pair<std::string, Link*>> namedlinks(bool skipself = false);

  /// Sets every parameter's gradient to null.
  void cleargrads();
  /// Sets every parameter's gradient to zeros (initialized parameters only).
  void zerograds();
  /// Copies parameter values (and, with `copy_persistent`, persistent values) from `other` into
  /// this link's arrays in place, converting dtype and device. The structures must match: ValueError
  /// naming the first differing path, ShapeError naming the path and both shapes. An uninitialized
  /// parameter here adopts a copy of the initialized one; both uninitialized is fine; only `other`'s
  /// uninitialized is a ValueError.
  void copyparams(const Link& other, bool copy_persistent = true);
  /// Adds `other`'s gradients to this link's gradients (same structure, as copyparams). Parameters
  /// of `other` without a gradient are skipped; a parameter here without one gets a copy.
  void addgrads(const Link& other);
  /// Moves parameters, gradients and persistent values of this link and its descendants to
  /// `device`. The parameter (and gradient) Variable objects stay the same, so handles held
  /// elsewhere (optimizers, members) keep aliasing them.
  virtual void to_device(Device device);
  /// The device of the parameters (cpu when none is initialized).
  Device device() const { return device_; }
  /// Number of parameter elements (initialized parameters).
  int64_t count_params() const;

  /// Saves/loads parameters (by name), persistent values and children (through s.child(name)).
  /// Uninitialized parameters are skipped when saving and adopt the stored array (cast to their
  /// declared dtype and moved to this link's device, as Chainer) when loading.
  virtual void serialize(serializers::Serializer& s);

  /// The forward of a single-input link; NotImplementedError unless overridden.
  virtual Variable forward(const Variable& x);
  /// The forward of a link taking several inputs (Classifier takes x and t). By default calls the
  /// single-input forward when given one input.
  virtual Variable forward(const std::vector<Variable>& inputs);
  /// Calls forward(x) between the link hooks installed on this thread and on this link.
  Variable operator()(const Variable& x) {
    return call_forward({&x, 1}, [&] { return forward(x); });
  }
  /// Calls forward(inputs) between the link hooks installed on this thread and on this link.
  Variable operator()(const std::vector<Variable>& inputs) {
    return call_forward(inputs, [&] { return forward(inputs); });
  }

  /// Chainer's Link.add_hook: installs `hook` on this link only (it sees this link's calls, not its
  /// children's), under `name` (empty: hook->name()). Calls hook->added(this). KeyError for a name
  /// already used on this link, ValueError for a null hook.
  Link& add_hook(std::shared_ptr<LinkHook> hook, std::string name = "");
  /// Removes the hook installed under `name` and calls its deleted(this); KeyError if absent.
  void delete_hook(const std::string& name);
  /// The hooks installed on this link, by name, in installation order.
  const std::vector<std::pair<std::string, std::shared_ptr<LinkHook>>>& local_link_hooks() const {
    return local_hooks_;
  }

  /// Optional name used in reports (set by the optimizer/updater: "main").
  const std::string& name() const { return name_; }
  /// Sets the name used in reports.
  void set_name(std::string name) { name_ = std::move(name); }

 protected:
  /// Throws ValueError (naming `op`) unless `name` is non-empty, has no '/', and is not yet used by
  /// a parameter, persistent value or child of this link.
  void check_new_name(const char* op, const std::string& name) const;

  /// Device new parameters should be created on.
  Device device_ = Device::cpu();

  /// Parameter `p` as this forward should use it: p, or the transform a link hook set for it.
  Variable param_in_forward(const Variable& p) const {
    if (param_transforms_.empty()) [[likely]] return p;
    return apply_param_transform(p);
  }

  /// Runs `f` (the forward on `args`) between the link hooks' forward_preprocess and
  /// forward_postprocess; a link with its own call operator calls its forward through it.
  template <class F>
  auto call_forward(std::span<const Variable> args, F&& f) -> decltype(f()) {
    if (!observed()) [[likely]] return f();
    detail::LinkCallObserver observer(*this, args);
    auto out = f();
    observer.finish(detail::hook_outputs(out));
    return out;
  }

 private:
  void collect_params(const std::string& prefix, bool include_uninit,
                      std::vector<std::pair<std::string, Variable>>& out) const;
  void collect_persistents(const std::string& prefix, std::vector<std::pair<std::string, Array*>>& out) const;

  std::vector<std::pair<std::string, Variable>> params_;
  /// The dtype each parameter registered without an array was declared with.
  std::vector<std::pair<std::string, Dtype>> lazy_dtypes_;
  bool observed() const {
    return detail::g_link_observers.load(std::memory_order_relaxed) != 0 || !local_hooks_.empty() || config().debug;
  }

  std::vector<std::pair<std::string, Array>> persistents_;
  Variable apply_param_transform(const Variable& p) const;
  struct ParamTransform {
    std::string name;
    std::function<Variable(const Variable&)> fn;
    mutable bool applied = false;
  };
  std::vector<ParamTransform> param_transforms_;
  std::vector<std::pair<std::string, std::shared_ptr<LinkHook>>> local_hooks_;
  std::string name_;
};

/// A link whose children are named links.
class Chain : public Link {
 public:
  /// Registers `link` (owned elsewhere, e.g. a member) as child `name`. ValueError for a bad or
  /// used name (see add_param), for a link that is already a child of this chain, or for the chain
  /// itself.
  void add_link(const std::string& name, Link& link);
  /// Registers and owns `link` (ValueError for a null pointer).
  void add_link(const std::string& name, std::shared_ptr<Link> link);
  std::vector<std::pair<std::string, Link*>> children() const override;
  /// The child `name`; ValueError if absent.
  Link& child(const std::string& name) const;

 private:
  std::vector<std::pair<std::string, Link*>> children_;
  std::vector<std::shared_ptr<Link>> owned_;
};

/// A link whose children are numbered "0", "1", ...
class ChainList : public Link {
 public:
  /// Appends `link` (owned elsewhere) as child "<size()>"; ValueError when it is already a child.
  void append(Link& link);
  /// Appends and owns `link`.
  void append(std::shared_ptr<Link> link);
  /// Number of children.
  std::size_t size() const { return children_.size(); }
  /// Child i; IndexError when out of range.
  Link& operator[](std::size_t i) const;
  std::vector<std::pair<std::string, Link*>> children() const override;

 private:
  std::vector<Link*> children_;
  std::vector<std::shared_ptr<Link>> owned_;
};

/// A ChainList applied in order; entries are links or plain functions (activations). Only the
/// links are children (numbered "0", "1", ... in the order they were added); links appended with
/// ChainList::append are children but not steps.
class Sequential : public ChainList {
 public:
  Sequential() = default;
  /// Appends a link step (owned).
  Sequential& add(std::shared_ptr<Link> link);
  /// Appends a link step owned elsewhere.
  Sequential& add(Link& link);
  /// Appends a function step; ValueError for an empty function.
  Sequential& add(std::function<Variable(const Variable&)> fn);
  /// Applies the steps in order (the identity when there are none).
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  // Each step is either a child link (index into the ChainList) or a function.
  std::vector<std::pair<int, std::function<Variable(const Variable&)>>> steps_;
};

}  // namespace rensa
