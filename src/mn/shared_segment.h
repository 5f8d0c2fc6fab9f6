#pragma once
// Memory shared by the ranks of one host: an anonymous memory file of rank 0 that the others open
// through /proc/<pid>/fd/<fd>. It has no name, so nothing is left behind however the job ends, and
// it lives exactly as long as the mappings.
#include <mpi.h>

#include <cstddef>

namespace rensa::mn::detail {

class SharedSegment {
 public:
  SharedSegment() = default;
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  /// Maps `bytes` of zero-filled memory shared by the ranks of `comm` (`name` shows in
  /// /proc/<pid>/maps). Collective over `comm`; returns the same on every rank: false (nothing
  /// mapped) when any rank could not map it, such as a rank on another machine, which a token written
  /// by rank 0 tells apart from a namesake process there. The pages are reserved at once, so memory
  /// that cannot be had fails here instead of raising SIGBUS at first touch.
  bool map(MPI_Comm comm, std::size_t bytes, const char* name);
  /// The caller's bytes (page-aligned), or nullptr before a successful map.
  char* data() const { return data_; }

 private:
  void* base_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  char* data_ = nullptr;
};

}  // namespace rensa::mn::detail
