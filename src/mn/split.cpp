// Communicator::split (ChainerMN's split, MPI_Comm_split): a full communicator of the same variant
// and options over the ranks of one color.
#include <mpi.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn {
namespace detail {

std::shared_ptr<CommunicatorImpl> CommunicatorImpl::split(std::optional<int> color, int key) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::split), -1, -1, -1, -1};
  return run_op(fg_, OpCode::split, 0, fp, checking_, [&]() -> std::shared_ptr<CommunicatorImpl> {
    // Every rank's color first, so that one rank's bad color fails every rank alike.
    const int64_t mine[2] = {color ? 1 : 0, color ? *color : 0};
    std::vector<int64_t> all(static_cast<std::size_t>(topo_.size) * 2);
    RENSA_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, fg_.world.get()));
    for (int r = 0; r < topo_.size; ++r) {
      const int64_t has = all[static_cast<std::size_t>(r) * 2], c = all[static_cast<std::size_t>(r) * 2 + 1];
      RENSA_CHECK(!has || c >= 0, ValueError, "split: rank ", r, " passed color ", c,
                  "; colors must be non-negative (std::nullopt: the rank joins no group)");
    }
    MPI_Comm raw = MPI_COMM_NULL;
    RENSA_MPI_CHECK(MPI_Comm_split(fg_.world.get(), color ? *color : MPI_UNDEFINED, key, &raw));
    MpiComm sub(raw);
    // The new communicator is collective over its group only; a group that cannot have one (a variant
    // that does not fit its hosts) must fail every rank here, or the other groups would go on alone.
    std::shared_ptr<CommunicatorImpl> out;
    std::string error;
    if (sub.get() != MPI_COMM_NULL) {
      try {
        out = std::make_shared<CommunicatorImpl>(variant_, sub.get(), options_, topo_.host);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    const int64_t len = static_cast<int64_t>(error.size());
    std::vector<int64_t> lens(static_cast<std::size_t>(topo_.size));
    RENSA_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, fg_.world.get()));
    for (int r = 0; r < topo_.size; ++r) {
      int64_t n = lens[static_cast<std::size_t>(r)];
      if (n == 0) continue;
      out.reset();
      n = std::min<int64_t>(n, 4096);
      std::string text =
          r == topo_.rank ? error.substr(0, static_cast<std::size_t>(n)) : std::string(static_cast<std::size_t>(n), '\0');
      RENSA_MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, r, fg_.world.get()));
      const int64_t c = all[static_cast<std::size_t>(r) * 2 + 1];
      RENSA_THROW(ValueError, "split: the communicator of color ", c, " could not be created (rank ", r, "): ", text);
    }
    return out;
  });
}

}  // namespace detail

Communicator Communicator::split(std::optional<int> color, int key) {
  RENSA_CHECK(impl_ != nullptr, ValueError, "Communicator::split: null communicator (default-constructed)");
  return Communicator(impl_->split(color, key));
}

}  // namespace rensa::mn
