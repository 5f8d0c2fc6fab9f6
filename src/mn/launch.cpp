#include "rensa/mn/launch.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>

namespace rensa::mn {
namespace {

std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  const std::string_view s(v);
  int out = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return out;
}

std::optional<LaunchedRank> from(const char* rank_var, const char* size_var) {
  const auto rank = env_int(rank_var);
  const auto size = env_int(size_var);
  if (!rank || !size || *size < 1 || *rank < 0 || *rank >= *size) return std::nullopt;
  return LaunchedRank{*rank, *size};
}

}  // namespace

std::optional<LaunchedRank> launched_rank() {
  if (auto r = from("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")) return r;
  return from("PMI_RANK", "PMI_SIZE");
}

bool refuse_several_processes(std::string_view program, std::string_view flag) {
  const auto launched = launched_rank();
  if (!launched || launched->size < 2) return false;
  print_error_line(program, "this is process " + std::to_string(launched->rank) + " of " +
                                std::to_string(launched->size) + " started by an MPI launcher, but " +
                                std::string(flag) + " is not given; pass " + std::string(flag) +
                                " flat to train data-parallel, or start one process");
  return true;
}

void print_error_line(std::string_view program, std::string_view message) {
  std::string line;
  if (const auto r = launched_rank()) line = "rank " + std::to_string(r->rank) + ": ";
  line.append(program).append(": ").append(message);
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  // One write(2): stderr is unbuffered, so `std::cerr << a << b` would be several.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace rensa::mn
