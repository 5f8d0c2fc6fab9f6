#pragma once
/// \file
/// Parameter: a link holding one array as its parameter "W" (Chainer's L.Parameter).

#include "rensa/links/link.h"

namespace rensa::links {

/// Registers `array` (floating; DtypeError otherwise) as parameter "W". forward() returns it, so
/// a bare array can be trained and saved like any link's parameters.
class Parameter : public Link {
 public:
  /// DtypeError for a non-floating `array`.
  explicit Parameter(Array array);
  /// The parameter W; the argument must be null (ValueError otherwise), as Chainer's forward
  /// takes no input.
  Variable forward(const Variable& x = Variable()) override;
  using Link::forward;
  using Link::operator();
  /// forward() between the link hooks.
  Variable operator()() {
    return call_forward({}, [&] { return forward(Variable()); });
  }
  /// The parameter W.
  const Variable& W() const { return W_; }

 private:
  Variable W_;
};

}  // namespace rensa::links
