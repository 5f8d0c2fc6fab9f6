#pragma once
/// \file
/// The minimal gated unit links (Chainer's L.StatelessMGU and L.StatefulMGU): children W_f and W_h,
/// each Linear(in_size + H, H) with bias, reading the concatenation [h, x] (h first), so Chainer's
/// .npz files of these links load. f = sigmoid(W_f [h, x]), h~ = tanh(W_h [f h, x]),
/// h' = f h~ + (1 - f) h.
///
/// StatefulMGU keeps h between calls; reset_state() clears it; serialize() saves it under "h" when
/// set (Chainer saves none) and loading adopts it, or clears it when the file has none.

#include <cstdint>
#include <optional>

#include "rensa/links/linear.h"
#include "rensa/links/link.h"
#include "rensa/links/recurrent_state.h"

namespace rensa::links {

/// Options of the MGU links.
struct MGUOptions {
  /// Seed of the children's generators (W_f: seed, W_h: seed + 1); unset: the thread's default
  /// generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// The two Linear children of the MGU links (default initializers, Config dtype at construction).
class MGUBase : public Chain {
 public:
  /// Forget gate: f = sigmoid(W_f [h, x]), Linear(H + in_size, H).
  Linear& W_f() { return W_f_; }
  /// Candidate: h~ = tanh(W_h [f h, x]), Linear(H + in_size, H); then h' = f h~ + (1 - f) h.
  Linear& W_h() { return W_h_; }
  /// Size of each input row.
  int64_t in_size() const { return in_size_; }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }

 protected:
  /// ValueError unless in_size >= 0 and out_size > 0.
  MGUBase(const char* link, int64_t in_size, int64_t out_size, const MGUOptions& options);
  /// One step; ShapeError naming the link unless h is (B, H) and x (B, in_size).
  Variable step(const Variable& h, const Variable& x);

  /// The link's name, used in error messages.
  const char* link_;

 private:
  int64_t in_size_, state_size_;
  Linear W_f_, W_h_;
};

/// An MGU without state: forward(h, x) returns h'.
class StatelessMGU : public MGUBase {
 public:
  /// ValueError unless in_size >= 0 and out_size > 0.
  StatelessMGU(int64_t in_size, int64_t out_size, MGUOptions options = {});
  /// h' for the state h (B, H) and the input x (B, in_size).
  Variable forward(const Variable& h, const Variable& x) { return step(h, x); }
  /// forward(h, x) between the link hooks.
  Variable operator()(const Variable& h, const Variable& x) {
    const Variable args[] = {h, x};
    return call_forward(args, [&] { return forward(h, x); });
  }
  using Link::forward;
};

/// A stateful MGU: forward(x) updates h (zeros of x's dtype at the first call) and returns it.
class StatefulMGU : public detail::WithHiddenState<MGUBase> {
 public:
  /// ValueError unless in_size >= 0 and out_size > 0.
  StatefulMGU(int64_t in_size, int64_t out_size, MGUOptions options = {});
  Variable forward(const Variable& x) override;
  using Link::forward;
  /// Sets h ((B, H); ShapeError otherwise).
  void set_state(const Variable& h) { set_hidden_state(link_, state_size(), h); }
};

}  // namespace rensa::links
