#pragma once
// Shared by the MPI test binaries (tests/mn/test_*.cpp, linked with mpi_test_main.cpp).
#include "rensa/mn/communicator.h"

namespace rensa::mn::testing {

/// The communicator main() created over every rank ("flat", fingerprint checks on, 60 s timeout).
Communicator& world();

/// Options for communicators made by tests: checks on, a timeout that ends a hung test quickly.
CommunicatorOptions test_options();

}  // namespace rensa::mn::testing
