#pragma once
// Whether an output stream is a terminal the user sees (ANSI escapes allowed).

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <ostream>

#include "rensa/core/error.h"

namespace rensa::extensions::detail {

/// RENSA_TERMINAL=1 or 0 says whether standard output and error are a terminal, for every process;
/// unset, a process started by mpirun assumes not (Open MPI hands every rank a pseudo-terminal
/// whatever mpirun's own output is: a file or a pipe would fill with escape codes; scripts/mpirun
/// sets RENSA_TERMINAL from its own standard output), any other process asks isatty.
inline bool is_terminal(const std::ostream& out) {
  const bool std_out = &out == &std::cout;
  const bool std_err = &out == &std::cerr || &out == &std::clog;
  if (!std_out && !std_err) return false;
  if (const char* env = std::getenv("RENSA_TERMINAL"); env != nullptr && *env != '\0') {
    RENSA_CHECK(std::strcmp(env, "0") == 0 || std::strcmp(env, "1") == 0, ValueError, "RENSA_TERMINAL: '", env,
                "' is neither 1 (a terminal: progress redrawn in place) nor 0 (plain lines)");
    return env[0] == '1';
  }
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(launcher) != nullptr) return false;
  }
  return ::isatty(std_out ? STDOUT_FILENO : STDERR_FILENO) == 1;
}

}  // namespace rensa::extensions::detail
