#pragma once
// Shared by the MPI test binaries (tests/mn/test_*.cpp, linked with mpi_test_main.cpp).
#include <vector>

#include "rensa/mn/communicator.h"

namespace rensa::mn::testing {

/// The communicator main() created over every rank ("flat", fingerprint checks on, 60 s timeout).
Communicator& world();

/// Options for communicators made by tests: checks on, a timeout that ends a hung test quickly.
CommunicatorOptions test_options();

/// The ranks per host a communicator over every rank has with options.ranks_per_host
/// `ranks_per_host` (0: the world's hosts, by host name), by host.
std::vector<int> host_sizes(int ranks_per_host = 0);

/// The entry of communicator_variants() named `name` (std::invalid_argument when there is none).
const CommunicatorVariant& variant(const std::string& name);

/// Whether `variant` runs over every rank with options.ranks_per_host `ranks_per_host`.
inline bool runs_here(const CommunicatorVariant& variant, int ranks_per_host = 0) {
  return variant.accepts(host_sizes(ranks_per_host));
}

}  // namespace rensa::mn::testing
