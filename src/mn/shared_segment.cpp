#include "src/mn/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {
constexpr std::size_t kHeaderBytes = 4096;  // the token, then padding to keep data() page-aligned
std::atomic<uint64_t> segment_counter{0};
}  // namespace

SharedSegment::~SharedSegment() {
  if (base_ != nullptr) munmap(base_, mapped_bytes_);
}

bool SharedSegment::map(MPI_Comm comm, std::size_t bytes, const char* name) {
  int rank = 0;
  RENSA_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const std::size_t total = kHeaderBytes + (bytes + 4095) / 4096 * 4096;
  int64_t info[4] = {1, 0, -1, 0};  // ok, pid, fd, token
  int fd = -1;
  void* p = MAP_FAILED;
  if (rank == 0) {
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(total)) != 0 ||
        posix_fallocate(fd, 0, static_cast<off_t>(total)) != 0) {
      info[0] = 0;
    } else {
      p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) info[0] = 0;
    }
    if (info[0]) {
      const uint64_t token = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                             (static_cast<uint64_t>(getpid()) << 32) ^ segment_counter.fetch_add(1);
      *static_cast<uint64_t*>(p) = token;
      info[1] = getpid();
      info[2] = fd;
      info[3] = static_cast<int64_t>(token);
    }
  }
  RENSA_MPI_CHECK(MPI_Bcast(info, 4, MPI_INT64_T, 0, comm));
  int ok = static_cast<int>(info[0]);
  if (ok && rank != 0) {
    const std::string path = "/proc/" + std::to_string(info[1]) + "/fd/" + std::to_string(info[2]);
    fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd < 0 || p == MAP_FAILED) {
      ok = 0;
    } else {
      struct stat st {};
      ok = fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= total &&
           *static_cast<const uint64_t*>(p) == static_cast<uint64_t>(info[3]);
    }
  }
  int all_ok = 0;
  // Also a barrier: rank 0 keeps its descriptor open until every rank has opened the file.
  RENSA_MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (fd >= 0) close(fd);
  if (!all_ok) {
    if (p != MAP_FAILED) munmap(p, total);
    return false;
  }
  base_ = p;
  mapped_bytes_ = total;
  data_ = static_cast<char*>(p) + kHeaderBytes;
  return true;
}

}  // namespace rensa::mn::detail
