#pragma once
/// \file
/// The GRU links (Chainer's L.StatelessGRU, L.StatefulGRU and its alias L.GRU): children W_r, U_r,
/// W_z, U_z, W, U, each a Linear with bias (W_* take x: (H, in_size); U_* take h: (H, H)), so
/// Chainer's .npz files of these links load. With r = sigmoid(W_r x + U_r h),
/// z = sigmoid(W_z x + U_z h), h~ = tanh(W x + U (r h)): h' = z h~ + (1 - z) h.
///
/// StatefulGRU keeps h between calls; reset_state() clears it; serialize() saves it under "h" when
/// set (Chainer saves none) and loading adopts it, or clears it when the file has none.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/links/initializers.h"
#include "rensa/links/linear.h"
#include "rensa/links/link.h"
#include "rensa/links/recurrent_state.h"

namespace rensa::links {

/// Options of the GRU links (Chainer's init, inner_init, bias_init).
struct GRUOptions {
  /// Initializer of W_r, W_z, W (the input weights); null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> init = nullptr;
  /// Initializer of U_r, U_z, U (the recurrent weights); null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> inner_init = nullptr;
  /// Initializer of every bias; null means zeros.
  std::shared_ptr<const initializers::Initializer> bias_init = nullptr;
  /// Seed of the children's generators (child k, in the order W_r, U_r, W_z, U_z, W, U, draws with
  /// seed + k); unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// The six Linear children of the GRU links, parameters of the Config dtype at construction; with
/// in_size unknown (-1), W_r, W_z and W wait for their first input.
class GRUBase : public Chain {
 public:
  /// Reset gate on the input: r = sigmoid(W_r x + U_r h).
  Linear& W_r() { return W_r_; }
  /// Reset gate on the state.
  Linear& U_r() { return U_r_; }
  /// Update gate on the input: z = sigmoid(W_z x + U_z h).
  Linear& W_z() { return W_z_; }
  /// Update gate on the state.
  Linear& U_z() { return U_z_; }
  /// Candidate on the input: h~ = tanh(W x + U (r * h)); then h' = z h~ + (1 - z) h.
  Linear& W() { return W_; }
  /// Candidate on the reset state.
  Linear& U() { return U_; }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// The input size, or -1 until known.
  int64_t in_size() const { return W_.in_size(); }

 protected:
  /// `link` names the link in errors. ValueError unless out_size > 0 and in_size >= -1.
  GRUBase(const char* link, int64_t in_size, int64_t out_size, const GRUOptions& options);

  /// The link's name, used in error messages.
  const char* link_;
  /// H, the number of units.
  int64_t state_size_;

 private:
  Linear W_r_, U_r_, W_z_, U_z_, W_, U_;
};

/// A GRU without state: forward(h, x) returns h' for h (B, H) and x (B, ...) with in_size
/// elements per row. ShapeError naming StatelessGRU and the shapes when they do not fit.
class StatelessGRU : public GRUBase {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0.
  StatelessGRU(int64_t in_size, int64_t out_size, const GRUOptions& options = {});
  /// in_size inferred from the first input.
  explicit StatelessGRU(int64_t out_size, const GRUOptions& options = {});

  /// h' for the state h (B, H) and the input x (B, ...).
  Variable forward(const Variable& h, const Variable& x);
  /// forward(h, x) between the link hooks.
  Variable operator()(const Variable& h, const Variable& x) {
    const Variable args[] = {h, x};
    return call_forward(args, [&] { return forward(h, x); });
  }
  using Link::forward;
};

/// A stateful GRU: forward(x) updates h and returns it. The first call (h unset) is
/// h' = sigmoid(W_z x) tanh(W x), as Chainer's (no U terms); later calls' batch must equal h's.
class StatefulGRU : public detail::WithHiddenState<GRUBase> {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0.
  StatefulGRU(int64_t in_size, int64_t out_size, const GRUOptions& options = {});
  /// in_size inferred from the first input.
  explicit StatefulGRU(int64_t out_size, const GRUOptions& options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;
  /// Sets h ((B, H); ShapeError otherwise).
  void set_state(const Variable& h) { set_hidden_state(link_, state_size(), h); }
};

/// Chainer's L.GRU is StatefulGRU.
using GRU = StatefulGRU;

}  // namespace rensa::links
