#pragma once
// Declarations of the cpu backend's kernels (see rensa::KernelTable for their contracts).
#include <cstring>

#include "rensa/core/backend.h"

namespace rensa::backends::cpu {
void fill(const Array& dst, double value);
void copy(const Array& src, const Array& dst);
void unary(UnaryOp op, const Array& x, const Array& y, double p0, double p1);
void binary(BinaryOp op, const Array& a, const Array& b, const Array& out);
void reduce(ReduceOp op, const Array& x, const Shape& axes, const Array& out);
void matmul(const Array& a, const Array& b, const Array& out);
void random(RandomDist dist, const Array& out, uint64_t seed, uint64_t offset, double p0, double p1);
void select_item(const Array& x, const Array& t, const Array& y);
void scatter_item(const Array& gy, const Array& t, const Array& gx);
void where(const Array& cond, const Array& a, const Array& b, const Array& out);
void optimizer_update(OptimizerKind kind, const Array& param, const Array& grad, const Array* state, int n_state,
                      const double* hp);
}  // namespace rensa::backends::cpu
