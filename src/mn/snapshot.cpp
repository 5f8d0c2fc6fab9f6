// Per-rank snapshots and resuming from the newest iteration every rank has complete.
#include "rensa/mn/snapshot.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>

#include "rensa/core/error.h"
#include "rensa/mn/object.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"

namespace rensa::mn {
namespace {

std::string encode(const std::vector<int64_t>& v) {
  std::string out(v.size() * sizeof(int64_t), '\0');
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<int64_t> decode(const std::string& s) {
  RENSA_CHECK(s.size() % sizeof(int64_t) == 0, ValueError, "multi_node_snapshot: malformed list of iterations");
  std::vector<int64_t> v(s.size() / sizeof(int64_t));
  if (!v.empty()) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

}  // namespace

MultiNodeSnapshot::MultiNodeSnapshot(Communicator comm, MultiNodeSnapshotOptions options)
    : comm_(std::move(comm)), options_(std::move(options)) {
  RENSA_CHECK(!options_.name.empty() && options_.name.find('/') == std::string::npos, ValueError,
              "multi_node_snapshot: the name must be non-empty and contain no '/', got '", options_.name, "'");
  RENSA_CHECK(options_.n_retains == -1 || options_.n_retains > 0, ValueError,
              "multi_node_snapshot: n_retains must be -1 or positive, got ", options_.n_retains);
  // Each rank's set: a named one, or the rest together; with none named, every rank alone.
  std::vector<int> set_of(static_cast<std::size_t>(comm_.size()), -1);
  for (std::size_t s = 0; s < options_.replica_sets.size(); ++s) {
    for (const int r : options_.replica_sets[s]) {
      RENSA_CHECK(r >= 0 && r < comm_.size(), ValueError, "multi_node_snapshot: replica set ", s, " names rank ", r,
                  ", which is not in [0, ", comm_.size(), ")");
      RENSA_CHECK(set_of[static_cast<std::size_t>(r)] < 0, ValueError, "multi_node_snapshot: rank ", r,
                  " is in replica sets ", set_of[static_cast<std::size_t>(r)], " and ", s);
      set_of[static_cast<std::size_t>(r)] = static_cast<int>(s);
    }
  }
  const int rest = static_cast<int>(options_.replica_sets.size());
  for (int& s : set_of) {
    if (s < 0) s = options_.replica_sets.empty() ? -1 : rest;
  }
  const int mine = set_of[static_cast<std::size_t>(comm_.rank())];
  master_ = comm_.rank();
  if (mine >= 0) {
    for (int r = 0; r < comm_.size(); ++r) {
      if (set_of[static_cast<std::size_t>(r)] != mine) continue;
      master_ = std::min(master_, r);
      if (r != comm_.rank()) members_.push_back(r);
    }
    if (!writes()) members_.clear();
  }
}

std::string MultiNodeSnapshot::directory_of(const training::Trainer& trainer, const std::string& directory) const {
  if (!directory.empty()) return directory;
  return options_.directory.empty() ? trainer.out() : options_.directory;
}

std::string MultiNodeSnapshot::path_for(const training::Trainer& trainer, int64_t iteration,
                                        const std::string& directory) const {
  const std::string file = options_.name + "_iter_" + std::to_string(iteration) + "_rank_" +
                           std::to_string(master_) + "_of_" + std::to_string(comm_.size()) + ".npz";
  return (std::filesystem::path(directory_of(trainer, directory)) / file).string();
}

std::optional<int64_t> MultiNodeSnapshot::iteration_of(std::string_view file) const {
  const std::string prefix = options_.name + "_iter_";
  const std::string suffix = "_rank_" + std::to_string(master_) + "_of_" + std::to_string(comm_.size()) + ".npz";
  if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string_view digits = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(std::string(digits));
}

std::vector<int64_t> MultiNodeSnapshot::local_iterations(const training::Trainer& trainer,
                                                         const std::string& directory) const {
  std::vector<int64_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory_of(trainer, directory), ec)) {
    const auto it = iteration_of(entry.path().filename().string());
    if (!it || !entry.is_regular_file(ec)) continue;
    out.push_back(*it);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void MultiNodeSnapshot::restore(training::Trainer& trainer) {
  if (options_.autoload) maybe_load(trainer);
}

void MultiNodeSnapshot::initialize(training::Trainer& trainer) {
  if (!writes()) return;
  // Only this rank's own file names: other ranks may be writing theirs into the same directory.
  serializers::remove_stale_temporaries(directory_of(trainer, ""),
                                        [this](std::string_view f) { return iteration_of(f).has_value(); });
}

void MultiNodeSnapshot::operator()(training::Trainer& trainer) {
  if (!writes()) return;  // the set's first rank writes the state the set shares
  const int64_t iteration = trainer.updater().iteration();
  std::filesystem::create_directories(directory_of(trainer, ""));
  serializers::save_npz(path_for(trainer, iteration), trainer);
  if (options_.n_retains <= 0) return;
  std::vector<int64_t> its = local_iterations(trainer);
  const std::size_t keep = static_cast<std::size_t>(options_.n_retains);
  for (std::size_t i = 0; i + keep < its.size(); ++i) {
    std::error_code ec;
    const std::string path = path_for(trainer, its[i]);
    std::filesystem::remove(path, ec);
    if (ec) std::cerr << "multi_node_snapshot: cannot remove old snapshot '" << path << "': " << ec.message() << "\n";
  }
}

std::optional<int64_t> MultiNodeSnapshot::iteration_of_any_rank(std::string_view file) const {
  const std::size_t at = file.rfind("_rank_");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string tail = "_of_" + std::to_string(comm_.size()) + ".npz";
  const std::size_t digits_from = at + 6;
  if (file.size() <= digits_from + tail.size() || file.compare(file.size() - tail.size(), tail.size(), tail) != 0) {
    return std::nullopt;
  }
  const std::string_view rank = file.substr(digits_from, file.size() - tail.size() - digits_from);
  if (rank.empty() || rank.size() > 9 ||
      !std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  if (std::stoll(std::string(rank)) >= comm_.size()) return std::nullopt;
  // The same name with the number of the rank whose files hold this rank's state.
  return iteration_of(std::string(file.substr(0, at)) + "_rank_" + std::to_string(master_) + tail);
}

int64_t MultiNodeSnapshot::resume(training::Trainer& trainer, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto loaded = maybe_load(trainer, path);
    RENSA_CHECK(loaded.has_value(), IOError, "multi_node_snapshot: no snapshot in '", path, "' that all ", comm_.size(),
                " ranks have (files ", options_.name, "_iter_<n>_rank_<r>_of_", comm_.size(), ".npz)");
    return *loaded;
  }
  const std::filesystem::path file(path);
  const auto iteration = iteration_of_any_rank(file.filename().string());
  RENSA_CHECK(iteration.has_value(), ValueError, "multi_node_snapshot: '", path,
              "' is neither a directory nor a snapshot file of ", comm_.size(), " ranks (", options_.name,
              "_iter_<n>_rank_<r>_of_", comm_.size(), ".npz)");
  const std::string directory = file.has_parent_path() ? file.parent_path().string() : ".";
  const auto loaded = maybe_load(trainer, directory, *iteration);
  RENSA_CHECK(loaded.has_value(), IOError, "multi_node_snapshot: iteration ", *iteration, " of '", path,
              "': not every one of the ", comm_.size(), " ranks has a readable file of it in '", directory, "'");
  return *loaded;
}

std::optional<int64_t> MultiNodeSnapshot::maybe_load(training::Trainer& trainer, const std::string& directory) {
  return maybe_load(trainer, directory, -1);
}

std::optional<int64_t> MultiNodeSnapshot::maybe_load(training::Trainer& trainer, const std::string& directory,
                                                     int64_t iteration) {
  std::vector<int64_t> mine = local_iterations(trainer, directory);
  if (iteration >= 0) std::erase_if(mine, [iteration](int64_t it) { return it != iteration; });
  // Ranks that write nothing (not first in their replica set) put no condition.
  const std::string any = "any";
  const std::vector<std::string> lists = comm_.allgather_bytes(writes() ? encode(mine) : any);
  std::set<int64_t> common;
  bool first = true;
  for (std::size_t r = 0; r < lists.size(); ++r) {
    if (lists[r] == any) continue;
    const std::vector<int64_t> its = decode(lists[r]);
    if (first) {
      common.insert(its.begin(), its.end());
      first = false;
      continue;
    }
    std::set<int64_t> next;
    for (int64_t it : its) {
      if (common.count(it) != 0) next.insert(it);
    }
    common = std::move(next);
  }
  // Newest first; a file that cannot be read on some rank (damaged after it was written) moves every
  // rank on to the next older iteration.
  for (auto it = common.rbegin(); it != common.rend(); ++it) {
    const std::string path = path_for(trainer, *it, directory);
    std::map<std::string, Array> values;
    int32_t ok = 1;
    if (writes()) {
      try {
        values = serializers::read_npz(path);
      } catch (const Error& e) {
        std::cerr << "multi_node_snapshot: rank " << comm_.rank() << " cannot read '" << path << "': " << e.what()
                  << "\n";
        ok = 0;
      }
    }
    const Array all_ok = comm_.allreduce(Array::from_vector(std::vector<int32_t>{ok}), ReduceOp::min);
    if (all_ok.to_vector<int32_t>()[0] == 0) continue;
    // The others of a replica set get their first rank's file, as ChainerMN sends it.
    constexpr int kTag = 0x534e;
    if (writes()) {
      if (!members_.empty()) {
        const std::string bytes = serializers::encode_npz(values);
        for (const int r : members_) send_obj(comm_, bytes, r, kTag);
      }
    } else {
      const std::string bytes = recv_obj<std::string>(comm_, master_, kTag);
      values = serializers::read_npz_bytes(bytes.data(), bytes.size(), path + " (from rank " + std::to_string(master_) + ")");
    }
    serializers::DictionaryDeserializer d(std::move(values), path);
    trainer.serialize(d);
    return *it;
  }
  return std::nullopt;
}

std::shared_ptr<extensions::StopOnSignal> stop_on_signal(Communicator comm,
                                                         std::shared_ptr<MultiNodeSnapshot> snapshot) {
  auto save = [snapshot = std::move(snapshot)](training::Trainer& trainer) -> std::string {
    if (snapshot == nullptr) return "";
    (*snapshot)(trainer);
    return snapshot->path_for(trainer, trainer.updater().iteration());
  };
  auto any_rank = [comm](int sig) mutable {
    return comm.allreduce(Array::from_vector(std::vector<int32_t>{sig}), ReduceOp::max).to_vector<int32_t>()[0];
  };
  return std::make_shared<extensions::StopOnSignal>(save, any_rank);
}

std::shared_ptr<MultiNodeSnapshot> multi_node_snapshot(Communicator comm, MultiNodeSnapshotOptions options) {
  return std::make_shared<MultiNodeSnapshot>(std::move(comm), std::move(options));
}

}  // namespace rensa::mn
