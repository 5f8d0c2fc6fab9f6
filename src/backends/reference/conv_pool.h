#pragma once
// The reference backend's convolution and pooling kernels (see rensa::KernelTable for their contracts).
#include "rensa/core/backend.h"

namespace rensa::backends::reference {
void conv2d_forward(const Array& x, const Array& w, const Array& b, const Array& y, const Conv2dParams& p);
void conv2d_backward_data(const Array& gy, const Array& w, const Array& gx, const Conv2dParams& p);
void conv2d_backward_weights(const Array& x, const Array& gy, const Array& gw, const Conv2dParams& p);
void max_pool2d_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p);
void max_pool2d_backward(const Array& gy, const Array& indices, const Array& gx);
void max_pool2d_gather(const Array& x, const Array& indices, const Array& y);
void avg_pool2d_forward(const Array& x, const Array& y, const Pool2dParams& p);
void avg_pool2d_backward(const Array& gy, const Array& gx, const Pool2dParams& p);
}  // namespace rensa::backends::reference
