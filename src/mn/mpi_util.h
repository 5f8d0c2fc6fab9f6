#pragma once
// MPI status checks, MPI datatypes and reduction ops for rensa's dtypes (custom ones for float16 and
// bfloat16), and the packing of gradients into the dtype they travel in.
#include <mpi.h>

#include <cstdint>

#include "rensa/core/array.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn::detail {

/// Throws CommunicationError naming the call, file:line and MPI's message unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* call, const char* file, int line);
#define RENSA_MPI_CHECK(call) ::rensa::mn::detail::mpi_check((call), #call, __FILE__, __LINE__)

/// An owned MPI communicator (freed unless MPI is already finalized).
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm c) : comm_(c) {}
  ~MpiComm() { reset(); }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = o.comm_;
      o.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  MPI_Comm get() const { return comm_; }
  void reset();
  /// Gives up ownership: the communicator is left to MPI_Finalize.
  MPI_Comm release() {
    MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// Most elements (or bytes) one MPI call moves: counts are ints.
inline constexpr int64_t kMaxCount = int64_t{1} << 30;

/// The MPI datatype of `dtype` (float16 and bfloat16: rensa's own 2-byte types).
MPI_Datatype mpi_type(Dtype dtype);
/// The MPI op of `op` on `dtype` (`mean` reduces as `sum`; bool: sum and max are MPI_LOR, min
/// MPI_LAND; float16 and bfloat16: rensa's own ops, computed in float and rounded once per step).
MPI_Op mpi_op(Dtype dtype, ReduceOp op);

/// Writes `src` (host, contiguous, floating) times `scale` into `dst` as `count` elements of `wire`.
void pack(const Array& src, void* dst, Dtype wire, double scale);
/// Reads `src.size()` elements of `wire` from `src_data` into `dst` (host, contiguous), converting.
void unpack(const void* src_data, Dtype wire, const Array& dst);
/// pack and unpack of the `count` elements of `src` (or `dst`) from element `begin` on.
void pack_range(const Array& src, int64_t begin, int64_t count, void* dst, Dtype wire, double scale);
void unpack_range(const void* src_data, Dtype wire, const Array& dst, int64_t begin, int64_t count);

/// "7.2 MB", "512 B", ...
std::string format_bytes(std::size_t bytes);

/// This host's name, as the communicators group ranks into hosts ("unknown" if gethostname fails).
std::string host_name();

}  // namespace rensa::mn::detail
