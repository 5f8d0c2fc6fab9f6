#pragma once
/// \file
/// The LSTM links (Chainer's L.LSTM, L.StatelessLSTM, L.StatefulPeepholeLSTM and
/// L.StatefulZoneoutLSTM): fully connected LSTM layers whose children are the Linear links
/// `upward` (input to the 4 H gates) and `lateral` (previous h to the gates, no bias), with
/// Chainer's names and gate layout (functions::lstm: gates interleaved per unit, a, i, f, o), so
/// Chainer's .npz files of these links load.
///
/// States: the stateful links keep h (and c) between calls; reset_state() clears them.
/// serialize() saves them under "h" and "c" beside the children when set (Chainer saves none), and
/// loading adopts the stored states, or clears them when the file has none (a reset link's
/// snapshot, or a Chainer file).

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "rensa/core/random.h"
#include "rensa/links/initializers.h"
#include "rensa/links/linear.h"
#include "rensa/links/link.h"
#include "rensa/links/recurrent_state.h"

namespace rensa::links {

/// Options of LSTM and StatelessLSTM (Chainer's initializer arguments).
struct LSTMOptions {
  /// Initializer of each (H, H) gate block of lateral.W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> lateral_init = nullptr;
  /// Initializer of each (H, in_size) gate block of upward.W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> upward_init = nullptr;
  /// Initializer of the a, i and o gate biases (each (H,)); null means zeros.
  std::shared_ptr<const initializers::Initializer> bias_init = nullptr;
  /// Initializer of the forget gate bias; null means ones.
  std::shared_ptr<const initializers::Initializer> forget_bias_init = nullptr;
  /// Seed of the link's own generator (every block is drawn from it, in Chainer's order: lateral
  /// then upward for each gate); unset: the thread's default generator at the time of drawing.
  std::optional<uint64_t> seed = std::nullopt;
};

/// What LSTM and StatelessLSTM share: children upward = Linear(in_size, 4 H) and lateral =
/// Linear(H, 4 H, nobias), parameters of the Config dtype at construction. With in_size unknown,
/// upward.W (and the drawing of every weight) waits for the first input, which is read as
/// (B, in_size) by flattening the axes after the first.
class LSTMBase : public Chain {
 public:
  /// The child applied to the input x: Linear(in_size, 4 H).
  Linear& upward() { return upward_; }
  /// The child applied to the previous h: Linear(H, 4 H, nobias).
  Linear& lateral() { return lateral_; }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// The input size, or -1 until known.
  int64_t in_size() const { return upward_.in_size(); }

 protected:
  /// `link` names the link in errors; in_size -1: lazy. ValueError for bad sizes, DtypeError for
  /// a non-floating Config dtype.
  LSTMBase(const char* link, int64_t in_size, int64_t out_size, LSTMOptions options);
  /// Checks x against in_size (ShapeError naming the link) and draws the weights at the first call.
  void prepare(const Variable& x);

  /// The link's name, used in error messages.
  const char* link_;

 private:
  void initialize_params();

  int64_t state_size_;
  LSTMOptions options_;
  std::optional<Generator> gen_;
  Linear upward_, lateral_;
};

/// An LSTM layer without state: forward(c, h, x) returns (c_new, h_new) =
/// functions::lstm(c, upward(x) + lateral(h)). c and h are (B, H) and may be null (h null: no
/// lateral term; c null: zeros); x is (B, ...) with in_size elements per row.
class StatelessLSTM : public LSTMBase {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0 (-1: inferred from the first input).
  StatelessLSTM(int64_t in_size, int64_t out_size, LSTMOptions options = {});
  /// in_size inferred from the first input.
  explicit StatelessLSTM(int64_t out_size, LSTMOptions options = {});

  /// ShapeError (naming StatelessLSTM and the shapes) when x does not fit in_size or c, h are not
  /// (B, H).
  std::pair<Variable, Variable> forward(const Variable& c, const Variable& h, const Variable& x);
  /// forward(c, h, x) between the link hooks.
  std::pair<Variable, Variable> operator()(const Variable& c, const Variable& h, const Variable& x) {
    const Variable args[] = {c, h, x};
    return call_forward(args, [&] { return forward(c, h, x); });
  }
  using Link::forward;
};


/// A stateful LSTM layer: forward(x) updates the states c and h and returns h. The first call
/// starts from c = 0 and no lateral term. Batches may shrink from call to call (sequences sorted by
/// decreasing length): only the first B rows of the states are updated, the rest pass through;
/// a larger batch than the states' is a ShapeError.
class LSTM : public detail::WithCellState<LSTMBase> {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0 (-1: inferred from the first input).
  LSTM(int64_t in_size, int64_t out_size, LSTMOptions options = {});
  /// in_size inferred from the first input.
  explicit LSTM(int64_t out_size, LSTMOptions options = {});

  /// Returns h_new (B, H) for x (B, ...).
  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Sets the states (both (B, H); ShapeError otherwise; moved to the link's device).
  void set_state(const Variable& c, const Variable& h) { set_cell_state("LSTM", state_size(), c, h); }
};

/// Options of StatefulPeepholeLSTM.
struct PeepholeLSTMOptions {
  /// Seed of the children's generators (child k, in the order upward, lateral, peep_i, peep_f,
  /// peep_o, draws with seed + k); unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// A stateful LSTM with peephole connections (Chainer's StatefulPeepholeLSTM): children upward =
/// Linear(in_size, 4 H), lateral, peep_i, peep_f, peep_o = Linear(H, ., nobias), default
/// initializers. i = sigmoid(i~ + peep_i(c)), f = sigmoid(f~ + peep_f(c)), c' = tanh(a~) i + f c,
/// o = sigmoid(o~ + peep_o(c')), h' = o tanh(c'), with the gate pre-activations interleaved as in
/// lstm. The first call starts from c = 0 and no lateral term; every call's batch must equal the
/// states' (ShapeError).
class StatefulPeepholeLSTM : public detail::WithCellState<Chain> {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0 (-1: inferred from the first input).
  StatefulPeepholeLSTM(int64_t in_size, int64_t out_size, PeepholeLSTMOptions options = {});
  /// in_size inferred from the first input.
  explicit StatefulPeepholeLSTM(int64_t out_size, PeepholeLSTMOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// The child applied to the input x: Linear(in_size, 4 H).
  Linear& upward() { return upward_; }
  /// The child applied to the previous h: Linear(H, 4 H, nobias).
  Linear& lateral() { return lateral_; }
  /// Peephole from c to the input gate: Linear(H, H, nobias).
  Linear& peep_i() { return peep_i_; }
  /// Peephole from c to the forget gate: Linear(H, H, nobias).
  Linear& peep_f() { return peep_f_; }
  /// Peephole from the new c to the output gate: Linear(H, H, nobias).
  Linear& peep_o() { return peep_o_; }

 private:
  int64_t state_size_;
  Linear upward_, lateral_, peep_i_, peep_f_, peep_o_;
};

/// Options of StatefulZoneoutLSTM.
struct ZoneoutLSTMOptions {
  /// Probabilities of keeping each element of the previous c and h (in [0, 1]; ValueError).
  double c_ratio = 0.5;
  /// Probability of keeping each element of the previous h (in [0, 1]; ValueError).
  double h_ratio = 0.5;
  /// Seed of the children's generators (upward: seed, lateral: seed + 1); unset: the thread's
  /// default generator.
  std::optional<uint64_t> seed = std::nullopt;
  /// Generator of the zoneout masks (it must outlive the link); null: the thread's default
  /// generator.
  Generator* mask_generator = nullptr;
};

/// A stateful LSTM with zoneout (Chainer's StatefulZoneoutLSTM): children upward = Linear(in_size,
/// 4 H), lateral = Linear(H, 4 H, nobias). c~ = tanh(a) sigmoid(i) + sigmoid(f) c, then
/// c' = zoneout(c, c~, c_ratio) and h' = zoneout(h, sigmoid(o) tanh(c~), h_ratio)
/// (functions::zoneout: in training mode each element keeps its previous value with probability
/// ratio; in test mode the new value). The first call starts from c = h = 0 and no lateral term;
/// every call's batch must equal the states'.
class StatefulZoneoutLSTM : public detail::WithCellState<Chain> {
 public:
  /// ValueError unless out_size > 0, in_size >= 0 (-1: inferred) and both ratios are in [0, 1].
  StatefulZoneoutLSTM(int64_t in_size, int64_t out_size, ZoneoutLSTMOptions options = {});
  /// in_size inferred from the first input.
  explicit StatefulZoneoutLSTM(int64_t out_size, ZoneoutLSTMOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;
  /// Sets the states (both (B, H); ShapeError otherwise; moved to the link's device).
  void set_state(const Variable& c, const Variable& h) { set_cell_state("StatefulZoneoutLSTM", state_size_, c, h); }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// Probability of keeping each element of the previous c.
  double c_ratio() const { return c_ratio_; }
  /// Probability of keeping each element of the previous h.
  double h_ratio() const { return h_ratio_; }
  /// The child applied to the input x: Linear(in_size, 4 H).
  Linear& upward() { return upward_; }
  /// The child applied to the previous h: Linear(H, 4 H, nobias).
  Linear& lateral() { return lateral_; }

 private:
  int64_t state_size_;
  double c_ratio_, h_ratio_;
  Generator* mask_gen_;
  Linear upward_, lateral_;
};

}  // namespace rensa::links
