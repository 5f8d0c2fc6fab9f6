#pragma once
/// \file
/// The MPI side of rensa::mn for programs that use MPI themselves: a communicator over an existing
/// MPI_Comm, and the MPI_Comm behind a communicator. Includes <mpi.h>.
#include <mpi.h>

#include <string_view>

#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// Creates a communicator over the ranks of `comm` (duplicated: rensa's traffic never mixes with the
/// program's). MPI must be initialized (ValueError otherwise) and is not finalized by rensa. Below
/// MPI_THREAD_MULTIPLE, start_mean_grad runs at once on the calling thread. Collective over `comm`.
Communicator create_communicator(std::string_view name, MPI_Comm comm, const CommunicatorOptions& options = {});

/// The MPI communicator the blocking collectives of `comm` use (a duplicate of the one it was
/// created from; owned by `comm`: do not free it).
MPI_Comm mpi_comm(const Communicator& comm);

}  // namespace rensa::mn
