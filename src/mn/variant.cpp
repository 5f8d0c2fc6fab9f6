// The table of communicator variants (filled by the files of src/mn/variants/ at static
// initialization) and what reads it: communicator_variants(), create_communicator's checks.
#include "src/mn/variant.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace rensa::mn {
namespace detail {
namespace {

std::map<std::string, VariantEntry, std::less<>>& table() {
  static auto* t = new std::map<std::string, VariantEntry, std::less<>>();  // leaked: read at exit
  return *t;
}

std::vector<const VariantEntry*> ordered() {
  std::vector<const VariantEntry*> out;
  for (const auto& [name, e] : table()) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(),
                   [](const VariantEntry* a, const VariantEntry* b) { return a->order < b->order; });
  return out;
}

// "a, b or c"
std::string or_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

bool register_variant(const VariantEntry& entry) {
  if (entry.reduce == nullptr || entry.info.name.empty() || !table().emplace(entry.info.name, entry).second) {
    throw std::logic_error("rensa::mn: communicator variant '" + entry.info.name + "' registered twice or incomplete");
  }
  return true;
}

const VariantEntry& find_variant(std::string_view name) {
  auto it = table().find(name);
  if (it != table().end()) return it->second;
  std::string list;
  for (const auto& n : communicator_names()) list += (list.empty() ? "" : ", ") + n;
  RENSA_THROW(ValueError, "create_communicator: unknown communicator '", name, "'; valid names: ", list);
}

void check_hosts(const VariantEntry& entry, const HostTopology& topo) {
  if (entry.info.accepts(topo.host_sizes)) return;
  std::vector<std::string> fit;
  for (const VariantEntry* e : ordered()) {
    if (e->info.communicates && e->info.accepts(topo.host_sizes)) fit.push_back(e->info.name);
  }
  const char* need =
      entry.info.hosts == HostGrouping::one ? "every rank on one host" : "the same number of ranks on every host";
  RENSA_THROW(ValueError, "create_communicator: ", entry.info.name, " needs ", need, ", but the ", topo.size,
              " ranks are on ", topo.inter_size, " hosts ", topo.describe_sizes(), "; use ", or_list(fit));
}

void allreduce_sum(MPI_Comm comm, void* data, int64_t count, Dtype wire) {
  RENSA_MPI_CHECK(
      MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_type(wire), mpi_op(wire, ReduceOp::sum), comm));
}

bool ReduceContext::host_sum(void* data, int64_t count, Dtype wire) {
  ShmAllreduce* shm = ch_.host_reducer(shared_memory_, topo.intra_size);
  if (shm == nullptr) return false;
  shm->allreduce(data, data, count, wire, ReduceOp::sum);
  return true;
}

}  // namespace detail

bool CommunicatorVariant::accepts(const std::vector<int>& host_sizes) const {
  switch (hosts) {
    case HostGrouping::any:
      return true;
    case HostGrouping::one:
      return host_sizes.size() <= 1;
    case HostGrouping::equal:
      return std::all_of(host_sizes.begin(), host_sizes.end(), [&](int s) { return s == host_sizes[0]; });
  }
  return false;
}

const std::vector<CommunicatorVariant>& communicator_variants() {
  static const std::vector<CommunicatorVariant> all = [] {
    std::vector<CommunicatorVariant> out;
    for (const detail::VariantEntry* e : detail::ordered()) out.push_back(e->info);
    return out;
  }();
  return all;
}

const std::vector<std::string>& communicator_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& v : communicator_variants()) out.push_back(v.name);
    return out;
  }();
  return names;
}

}  // namespace rensa::mn
