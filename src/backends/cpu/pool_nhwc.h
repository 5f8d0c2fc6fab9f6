#pragma once
// Pooling kernels for channels-last arrays (all arguments channels-last; any floating dtype).
// Same contracts as the KernelTable's pooling kernels; `indices` hold positions h*W + w within the
// (H, W) plane, as in NCHW.
#include "rensa/core/backend.h"

namespace rensa::backends::cpu::nhwc {

template <class T>
void max_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p);
template <class T>
void max_backward(const Array& gy, const Array& indices, const Array& gx);
template <class T>
void max_gather(const Array& x, const Array& indices, const Array& y);
template <class T>
void avg_forward(const Array& x, const Array& y, const Pool2dParams& p);
template <class T>
void avg_backward(const Array& gy, const Array& gx, const Pool2dParams& p);

}  // namespace rensa::backends::cpu::nhwc
