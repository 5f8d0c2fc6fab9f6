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
void conv2d_forward(const Array& x, const Array& w, const Array& b, const Array& y, const Conv2dParams& p);
void conv2d_backward_data(const Array& gy, const Array& w, const Array& gx, const Conv2dParams& p);
void conv2d_backward_weights(const Array& x, const Array& gy, const Array& gw, const Conv2dParams& p);
MemoryFormat conv2d_memory_format(Dtype dtype);
void max_pool2d_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p);
void max_pool2d_backward(const Array& gy, const Array& indices, const Array& gx);
void max_pool2d_gather(const Array& x, const Array& indices, const Array& y);
void avg_pool2d_forward(const Array& x, const Array& y, const Pool2dParams& p);
void avg_pool2d_backward(const Array& gy, const Array& gx, const Pool2dParams& p);
}  // namespace rensa::backends::cpu
