#pragma once
/// \file
/// embed_id (Chainer's F.embed_id): rows of a table selected by integer ids, the function behind
/// links::EmbedID.

#include <cstdint>
#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// y[i..., :] = W[x[i...], :] for integer ids x (any shape, int32/int64) and W (in_size,
/// out_size); y has shape x.shape + (out_size,) and W's dtype. Ids equal to `ignore_label` give
/// zero rows and no gradient. Differentiable in W (the gradient scatter-adds the rows of gy; its
/// own gradient gathers again, so double backprop works). Ids outside [0, in_size) throw
/// IndexError; a non-integer x or non-floating W throws DtypeError; W not 2-d throws ShapeError; x
/// and W on different devices DeviceError. The ids are read on the host to be checked.
Variable embed_id(const Array& x, const Variable& W, std::optional<int64_t> ignore_label = std::nullopt);

}  // namespace rensa::functions
