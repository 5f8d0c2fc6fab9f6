#pragma once
// A reader of MATLAB's level-5 MAT-files (internal): the numeric matrices of SVHN's .mat files.

#include <cstddef>
#include <map>
#include <string>

#include "rensa/core/array.h"

namespace rensa::datasets::detail {

/// The numeric arrays of a level-5 MAT-file (compressed or not), by name, converted to float64
/// unless their storage is uint8 (kept as uint8), in MATLAB's dimension order and column-major
/// element order: a (d0, d1, ...) matrix becomes an array of shape (..., d1, d0) in C order, the
/// dimensions reversed. Non-numeric entries (cells, structs, sparse, complex) are skipped. IOError
/// naming `what` and the offset for anything malformed; HDF5-based (-v7.3) files are refused by name.
std::map<std::string, Array> parse_mat(const void* data, std::size_t size, const std::string& what);

}  // namespace rensa::datasets::detail
