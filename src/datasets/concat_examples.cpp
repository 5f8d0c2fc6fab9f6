// concat_examples: stacking a batch of examples into one array per column.

#include "rensa/datasets/concat_examples.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "rensa/core/error.h"
#include "src/datasets/common.h"

namespace rensa::datasets {

std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device) {
  RENSA_CHECK(!batch.empty(), ValueError, "concat_examples: the batch is empty");
  const std::size_t n_cols = batch[0].size();
  const auto batch_size = static_cast<int64_t>(batch.size());
  for (std::size_t b = 1; b < batch.size(); ++b) {
    RENSA_CHECK(batch[b].size() == n_cols, ValueError, "concat_examples: example ", b, " has ", batch[b].size(),
                " columns but example 0 has ", n_cols);
  }
  // Stack on the host; arrays for another device are moved there at the end.
  const Device host = device.is_host() ? device : Device::cpu();
  std::vector<Array> out;
  out.reserve(n_cols);
  for (std::size_t c = 0; c < n_cols; ++c) {
    const Array& first = batch[0][c];
    RENSA_CHECK(!first.is_null(), ValueError, "concat_examples: column ", c, " of example 0 is a null array");
    Shape shape = first.shape();
    shape.insert(0, batch_size);
    Array stacked = Array::empty(shape, first.dtype(), host);
    const std::size_t row_bytes = first.nbytes();
    auto* dst = static_cast<unsigned char*>(stacked.raw_data());
    Array moved;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const Array* ex = &batch[b][c];  // no handle copy: this loop is on the training hot path
      RENSA_CHECK(!ex->is_null(), ValueError, "concat_examples: column ", c, " of example ", b, " is a null array");
      RENSA_CHECK(ex->shape() == first.shape(), ShapeError, "concat_examples: column ", c, " of example ", b,
                  " has shape ", ex->shape(), " but example 0 has shape ", first.shape());
      RENSA_CHECK(ex->dtype() == first.dtype(), DtypeError, "concat_examples: column ", c, " of example ", b,
                  " has dtype ", ex->dtype(), " but example 0 has dtype ", first.dtype());
      if (ex->device() != host) {
        moved = ex->to(host);
        ex = &moved;
      }
      // The hot path (rows of a TupleDataset column): one memcpy per example.
      if (ex->is_contiguous()) {
        if (row_bytes != 0) std::memcpy(dst + b * row_bytes, ex->raw_data(), row_bytes);
      } else {
        detail::row_view(stacked, static_cast<int64_t>(b)).assign(*ex);
      }
    }
    out.push_back(host == device ? std::move(stacked) : stacked.to(device));
  }
  return out;
}

std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device,
                                   const std::vector<double>& padding) {
  RENSA_CHECK(!batch.empty(), ValueError, "concat_examples: the batch is empty");
  const std::size_t n_cols = batch[0].size();
  RENSA_CHECK(padding.size() == 1 || padding.size() == n_cols, ValueError, "concat_examples: ", padding.size(),
              " padding values for ", n_cols, " columns (expected 1 or ", n_cols, ")");
  for (std::size_t b = 1; b < batch.size(); ++b) {
    RENSA_CHECK(batch[b].size() == n_cols, ValueError, "concat_examples: example ", b, " has ", batch[b].size(),
                " columns but example 0 has ", n_cols);
  }
  std::vector<Array> out;
  for (std::size_t c = 0; c < n_cols; ++c) {
    const Array& first = batch[0][c];
    RENSA_CHECK(!first.is_null(), ValueError, "concat_examples: column ", c, " of example 0 is a null array");
    Shape shape = first.shape();  // the largest extent of each axis
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const Array& ex = batch[b][c];
      RENSA_CHECK(!ex.is_null(), ValueError, "concat_examples: column ", c, " of example ", b, " is a null array");
      RENSA_CHECK(ex.ndim() == first.ndim(), ShapeError, "concat_examples: column ", c, " of example ", b,
                  " has shape ", ex.shape(), " but example 0 has shape ", first.shape(),
                  " (padding needs the same number of axes)");
      RENSA_CHECK(ex.dtype() == first.dtype(), DtypeError, "concat_examples: column ", c, " of example ", b,
                  " has dtype ", ex.dtype(), " but example 0 has dtype ", first.dtype());
      for (std::size_t d = 0; d < shape.size(); ++d) shape[d] = std::max(shape[d], ex.shape()[d]);
    }
    shape.insert(0, static_cast<int64_t>(batch.size()));
    Array stacked = Array::full(shape, padding.size() == 1 ? padding[0] : padding[c], first.dtype(), device);
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const Array& ex = batch[b][c];
      std::vector<Index> corner{static_cast<int64_t>(b)};
      for (int64_t e : ex.shape()) corner.emplace_back(Slice{0, e, 1});
      stacked.index(corner).assign(ex.to(device));
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device, double padding) {
  return concat_examples(batch, device, std::vector<double>{padding});
}

}  // namespace rensa::datasets
