#pragma once
/// \file
/// The state a stateful recurrent link keeps between calls: h alone (GRU, MGU) or c and h (the
/// LSTMs), as bases over the link's own base. reset_state() clears it; serialize() saves it after
/// the parameters under "h" (and "c") when set, and loading adopts the stored states or clears them
/// when the file has none (a reset link's snapshot, or Chainer's, which saves no states);
/// to_device() moves it.

#include <cstdint>

#include "rensa/core/variable.h"
#include "rensa/serializers/serializer.h"

namespace rensa::links::detail {

void serialize_state(serializers::Serializer& s, const char* key, Variable& state, Device device);
void move_state(Variable& state, Device device);
/// set_state's checks of a link with `units` units: h (B, units) (ShapeError naming the link).
void check_hidden_state(const char* link, int64_t units, const Variable& h);
/// set_state's checks of an LSTM: c and h both (B, units) (ValueError when one is null, ShapeError
/// otherwise).
void check_cell_state(const char* link, int64_t units, const Variable& c, const Variable& h);

/// The state h on top of Base.
template <class Base>
class WithHiddenState : public Base {
 public:
  using Base::Base;
  /// Clears the state (the next call starts afresh).
  void reset_state() { h_ = Variable(); }
  /// The output of the last call (for LSTM, rows past the last batch kept from earlier calls), or
  /// null before the first call and after reset_state().
  const Variable& h() const { return h_; }
  /// Parameters, then the state "h" when set.
  void serialize(serializers::Serializer& s) override {
    Base::serialize(s);
    serialize_state(s, "h", h_, this->device());
  }
  /// Moves the state too.
  void to_device(Device device) override {
    Base::to_device(device);
    move_state(h_, device);
  }

 protected:
  /// set_state of link `link` with `units` units, moved to the link's device.
  void set_hidden_state(const char* link, int64_t units, const Variable& h) {
    check_hidden_state(link, units, h);
    h_ = h;
    move_state(h_, this->device());
  }

  Variable h_;
};

/// The states c and h on top of Base.
template <class Base>
class WithCellState : public WithHiddenState<Base> {
 public:
  using WithHiddenState<Base>::WithHiddenState;
  /// Clears c and h.
  void reset_state() {
    WithHiddenState<Base>::reset_state();
    c_ = Variable();
  }
  /// The cell state, null before the first call or after reset_state().
  const Variable& c() const { return c_; }
  /// Parameters, then the states "c" and "h" when set.
  void serialize(serializers::Serializer& s) override {
    WithHiddenState<Base>::serialize(s);
    serialize_state(s, "c", c_, this->device());
  }
  /// Moves the states too.
  void to_device(Device device) override {
    WithHiddenState<Base>::to_device(device);
    move_state(c_, device);
  }

 protected:
  /// set_state of link `link` with `units` units, both moved to the link's device.
  void set_cell_state(const char* link, int64_t units, const Variable& c, const Variable& h) {
    check_cell_state(link, units, c, h);
    c_ = c;
    this->h_ = h;
    move_state(c_, this->device());
    move_state(this->h_, this->device());
  }

  Variable c_;
};

}  // namespace rensa::links::detail
