#pragma once
/// \file
/// The umbrella header of rensa: the core, every function family, and the training stack
/// (rensa/training.h). The multi-node layer, which links MPI, has its own: rensa/mn.h.

#include "rensa/core/array.h"
#include "rensa/core/backend.h"
#include "rensa/core/backward.h"
#include "rensa/core/config.h"
#include "rensa/core/device.h"
#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "rensa/core/random.h"
#include "rensa/core/shape.h"
#include "rensa/core/threading.h"
#include "rensa/core/variable.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/evaluation.h"
#include "rensa/functions/image.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/noise.h"
#include "rensa/functions/normalization.h"
#include "rensa/functions/reduction.h"
#include "rensa/training.h"
