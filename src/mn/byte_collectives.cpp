// CommunicatorImpl's collectives on bytes (bcast_bytes, gather_bytes, allgather_bytes,
// scatter_bytes) and the chunked byte moves the other collectives share.
#include <mpi.h>

#include <algorithm>
#include <climits>

#include "src/mn/communicator_helpers.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {

int checked_int(int64_t v, const char* op, const char* what) {
  RENSA_CHECK(v <= INT_MAX, ValueError, op, ": ", what, " of ", v, " bytes exceed what one MPI call moves (", INT_MAX,
              " bytes)");
  return static_cast<int>(v);
}

}  // namespace

// Chunked byte moves: MPI counts are ints.
void bcast_raw(MPI_Comm comm, void* data, int64_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  for (int64_t off = 0; off < bytes; off += kMaxCount) {
    const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
    RENSA_MPI_CHECK(MPI_Bcast(p + off, n, MPI_BYTE, root, comm));
  }
}

// Displacements of consecutive blocks of `counts`; ValueError when the total does not fit an int.
std::vector<int> displacements(const std::vector<int64_t>& counts, const char* op) {
  std::vector<int> displs(counts.size());
  int64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = checked_int(total, op, "the data");
    total += counts[i];
  }
  checked_int(total, op, "the data");
  return displs;
}

// Every rank's `text`, on every rank (raw: inside an operation scope).
std::vector<std::string> allgather_strings(MPI_Comm comm, int size, const std::string& text, const char* op) {
  const int64_t mine = static_cast<int64_t>(text.size());
  std::vector<int64_t> lens(static_cast<std::size_t>(size));
  RENSA_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, comm));
  const std::vector<int> displs = displacements(lens, op);
  std::string all(static_cast<std::size_t>(displs.back() + lens.back()), '\0');
  RENSA_MPI_CHECK(MPI_Allgatherv(text.data(), static_cast<int>(mine), MPI_BYTE, all.data(), to_ints(lens).data(),
                                 displs.data(), MPI_BYTE, comm));
  std::vector<std::string> out(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out[static_cast<std::size_t>(r)] = all.substr(displs[r], lens[r]);
  return out;
}

// ---- collectives on bytes ----------------------------------------------------------------------------

std::string CommunicatorImpl::bcast_bytes(const std::string& bytes, int root) {
  const bool is_root = topo_.rank == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::bcast_bytes), -1, is_root ? static_cast<int64_t>(bytes.size()) : -1,
                       root, -1};
  return run_op(fg_, OpCode::bcast_bytes, is_root ? bytes.size() : 0, fp, checking_, [&] {
    check_root("bcast_bytes", root, topo_.size);
    int64_t len = static_cast<int64_t>(bytes.size());
    RENSA_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT64_T, root, fg_.world.get()));
    std::string out = is_root ? bytes : std::string(static_cast<std::size_t>(len), '\0');
    bcast_raw(fg_.world.get(), out.data(), len, root);
    return out;
  });
}

std::vector<std::string> CommunicatorImpl::gather_bytes(const std::string& bytes, int root) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::gather_bytes), -1, -1, root, -1};
  return run_op(fg_, OpCode::gather_bytes, bytes.size(), fp, checking_, [&] {
    check_root("gather_bytes", root, topo_.size);
    const int64_t mine = static_cast<int64_t>(bytes.size());
    std::vector<int64_t> lens(static_cast<std::size_t>(topo_.size));
    RENSA_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, fg_.world.get()));
    const std::vector<int> displs = displacements(lens, "gather_bytes");
    const bool is_root = topo_.rank == root;
    std::string all(is_root ? static_cast<std::size_t>(displs.back() + lens.back()) : 0, '\0');
    RENSA_MPI_CHECK(MPI_Gatherv(bytes.data(), static_cast<int>(mine), MPI_BYTE, is_root ? all.data() : nullptr,
                                to_ints(lens).data(), displs.data(), MPI_BYTE, root, fg_.world.get()));
    std::vector<std::string> out;
    if (is_root) {
      for (int r = 0; r < topo_.size; ++r) out.push_back(all.substr(displs[r], lens[r]));
    }
    return out;
  });
}

std::vector<std::string> CommunicatorImpl::allgather_bytes(const std::string& bytes) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allgather_bytes), -1, -1, -1, -1};
  return run_op(fg_, OpCode::allgather_bytes, bytes.size(), fp, checking_,
                [&] { return allgather_strings(fg_.world.get(), topo_.size, bytes, "allgather_bytes"); });
}

std::string CommunicatorImpl::scatter_bytes(const std::vector<std::string>& parts, int root) {
  const bool is_root = topo_.rank == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::scatter_bytes), -1, -1, root,
                       is_root ? static_cast<int64_t>(parts.size()) : -1};
  std::size_t nbytes = 0;
  if (is_root) {
    for (const auto& p : parts) nbytes += p.size();
  }
  return run_op(fg_, OpCode::scatter_bytes, nbytes, fp, checking_, [&] {
    check_root("scatter_bytes", root, topo_.size);
    std::vector<int64_t> lens(1 + static_cast<std::size_t>(topo_.size), 0);  // count, then lengths
    if (is_root) {
      lens[0] = static_cast<int64_t>(parts.size());
      if (parts.size() == static_cast<std::size_t>(topo_.size)) {
        for (int r = 0; r < topo_.size; ++r) lens[1 + static_cast<std::size_t>(r)] = static_cast<int64_t>(parts[r].size());
      }
    }
    RENSA_MPI_CHECK(MPI_Bcast(lens.data(), static_cast<int>(lens.size()), MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(lens[0] == topo_.size, ValueError, "scatter_bytes: the root (rank ", root, ") passed ", lens[0],
                " parts for ", topo_.size, " ranks");
    const std::vector<int64_t> counts(lens.begin() + 1, lens.end());
    const std::vector<int> displs = displacements(counts, "scatter_bytes");
    std::string send;
    if (is_root) {
      for (const auto& p : parts) send += p;
    }
    std::string out(static_cast<std::size_t>(counts[static_cast<std::size_t>(topo_.rank)]), '\0');
    RENSA_MPI_CHECK(MPI_Scatterv(is_root ? send.data() : nullptr, to_ints(counts).data(), displs.data(), MPI_BYTE,
                                 out.data(), static_cast<int>(out.size()), MPI_BYTE, root, fg_.world.get()));
    return out;
  });
}

}  // namespace rensa::mn::detail
