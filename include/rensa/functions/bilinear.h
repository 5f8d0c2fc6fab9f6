#pragma once
/// \file
/// Chainer's bilinear function (the bilinear layer of neural tensor networks).

#include "rensa/core/variable.h"

namespace rensa::functions {

/// y[n, l] = sum over j, k of e1[n, j] e2[n, k] W[j, k, l], plus, when given, (e1 V1)[n, l] +
/// (e2 V2)[n, l] + b[l]. e1 (N, J...) and e2 (N, K...) are flattened after their first axis to J and
/// K; W (J, K, L), V1 (J, L), V2 (K, L), b (L,). Made of products and matmul: differentiable to any
/// order. ValueError when some but not all of V1, V2 and b are given (as Chainer); ShapeError naming
/// every shape when e1 or e2 has fewer than 2 axes, their first axes differ, W is not 3-d or does
/// not match J and K, or V1, V2, b do not match; DtypeError / DeviceError as other functions.
Variable bilinear(const Variable& e1, const Variable& e2, const Variable& W, const Variable& V1 = Variable(),
                  const Variable& V2 = Variable(), const Variable& b = Variable());

}  // namespace rensa::functions
