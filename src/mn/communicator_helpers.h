#pragma once
// Helpers shared by the files of CommunicatorImpl (communicator.cpp, operation_scopes.cpp,
// array_collectives.cpp, byte_collectives.cpp, training_collectives.cpp): host staging of arrays,
// root checks, chunked byte moves and the structure check of fingerprints.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/error.h"

namespace rensa::mn::detail {

// Arrays are staged on the host: MPI reads and writes host memory.
inline Array host_contiguous(const Array& x) {
  return x.device().is_host() ? x.contiguous() : x.to(Device::cpu());
}
inline Device host_device(Device d) {
  return d.is_host() ? d : Device::cpu();
}
inline Array to_device(const Array& host, Device d) {
  return host.device() == d ? host : host.to(d);
}

inline void check_root(const char* op, int root, int size) {
  RENSA_CHECK(root >= 0 && root < size, ValueError, op, ": root ", root, " is not a rank of a communicator of size ",
              size);
}

// Defined in byte_collectives.cpp (to_ints aside).

// Chunked byte moves: MPI counts are ints.
void bcast_raw(MPI_Comm comm, void* data, int64_t bytes, int root);
// Displacements of consecutive blocks of `counts`; ValueError when the total does not fit an int.
std::vector<int> displacements(const std::vector<int64_t>& counts, const char* op);
inline std::vector<int> to_ints(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}
// Every rank's `text`, on every rank (raw: inside an operation scope).
std::vector<std::string> allgather_strings(MPI_Comm comm, int size, const std::string& text, const char* op);

// Defined in operation_scopes.cpp.

// Checks that every rank describes the same structure (one line per entry, "path: what"); on a
// mismatch throws ValueError on every rank naming the first differing entry and both ranks.
void check_same_structure(MPI_Comm comm, int size, const std::string& desc, const char* op, const char* entries);

}  // namespace rensa::mn::detail
