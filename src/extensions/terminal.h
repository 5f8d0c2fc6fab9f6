#pragma once
// Whether an output stream is a terminal (ANSI escapes allowed).

#include <unistd.h>

#include <iostream>
#include <ostream>

namespace rensa::extensions::detail {

/// True when `out` is std::cout or std::cerr and that file descriptor is a terminal.
inline bool is_terminal(const std::ostream& out) {
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  return false;
}

}  // namespace rensa::extensions::detail
