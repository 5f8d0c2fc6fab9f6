#include "src/mn/host_topology.h"

#include <algorithm>
#include <map>

namespace rensa::mn::detail {

HostTopology HostTopology::gather(MPI_Comm world, std::string host) {
  HostTopology t;
  RENSA_MPI_CHECK(MPI_Comm_rank(world, &t.rank));
  RENSA_MPI_CHECK(MPI_Comm_size(world, &t.size));
  constexpr int kName = 256;
  host.resize(std::min<std::size_t>(host.size(), kName - 1));
  std::vector<char> mine(kName, '\0');
  std::copy(host.begin(), host.end(), mine.begin());
  std::vector<char> names(static_cast<std::size_t>(t.size) * kName, '\0');
  RENSA_MPI_CHECK(MPI_Allgather(mine.data(), kName, MPI_CHAR, names.data(), kName, MPI_CHAR, world));
  std::map<std::string, int> index;
  t.host_of.assign(static_cast<std::size_t>(t.size), 0);
  for (int r = 0; r < t.size; ++r) {
    std::string h(&names[static_cast<std::size_t>(r) * kName]);
    auto [it, inserted] = index.emplace(h, static_cast<int>(index.size()));
    if (inserted) {
      t.host_sizes.push_back(0);
      t.host_names.push_back(h);
    }
    const auto k = static_cast<std::size_t>(it->second);
    t.host_of[static_cast<std::size_t>(r)] = it->second;
    if (r == t.rank) t.intra_rank = t.host_sizes[k];
    ++t.host_sizes[k];
  }
  t.host = std::move(host);
  t.inter_rank = t.host_of[static_cast<std::size_t>(t.rank)];
  t.inter_size = static_cast<int>(t.host_sizes.size());
  t.intra_size = t.host_sizes[static_cast<std::size_t>(t.inter_rank)];
  return t;
}

void HostTopology::split(MPI_Comm world, MpiComm& intra, MpiComm& inter) const {
  MPI_Comm c = MPI_COMM_NULL;
  RENSA_MPI_CHECK(MPI_Comm_split(world, inter_rank, rank, &c));
  intra = MpiComm(c);
  RENSA_MPI_CHECK(MPI_Comm_split(world, intra_rank, inter_rank, &c));
  inter = MpiComm(c);
  RENSA_MPI_CHECK(MPI_Comm_set_errhandler(intra.get(), MPI_ERRORS_RETURN));
  RENSA_MPI_CHECK(MPI_Comm_set_errhandler(inter.get(), MPI_ERRORS_RETURN));
}

std::string HostTopology::describe_sizes() const {
  std::string out = "(";
  for (std::size_t i = 0; i < host_sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(host_sizes[i]);
  return out + ")";
}

}  // namespace rensa::mn::detail
