#include "rensa/extensions/snapshot.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {

std::string format_filename(const std::string& pattern, const training::Trainer& trainer) {
  const training::Updater& updater = trainer.updater();
  std::string out;
  std::size_t i = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    // "{{" and "}}" are literal braces, as in str.format.
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      out += c;
      i += 2;
      continue;
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    RENSA_CHECK(close != std::string::npos, ValueError, "format_filename: unclosed '{' in '", pattern, "'");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    if (field == ".updater.iteration" || field == "iteration") {
      out += std::to_string(updater.iteration());
    } else if (field == ".updater.epoch" || field == "epoch") {
      out += std::to_string(updater.epoch());
    } else if (field == ".updater.epoch_detail" || field == "epoch_detail") {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", updater.epoch_detail());
      out += buf;
    } else {
      RENSA_THROW(ValueError, "format_filename: unknown field '{", field, "}' in '", pattern,
                  "'; known: {.updater.iteration}, {.updater.epoch}, {.updater.epoch_detail}, {iteration}, {epoch}");
    }
    i = close + 1;
  }
  return out;
}

bool filename_matches(std::string_view pattern, std::string_view name) {
  // Literal text must match; each "{field}" matches one or more characters other than '/'.
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < pattern.size()) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {
      if (j >= name.size() || name[j] != c) return false;
      i += 2;
      ++j;
      continue;
    }
    if (c != '{') {
      if (j >= name.size() || name[j] != c) return false;
      ++i;
      ++j;
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    if (close == std::string_view::npos) return false;
    const std::string_view rest = pattern.substr(close + 1);
    for (std::size_t k = j + 1; k <= name.size() && name[k - 1] != '/'; ++k) {
      if (filename_matches(rest, name.substr(k))) return true;
    }
    return false;
  }
  return j == name.size();
}

Snapshot::Snapshot(std::function<void(serializers::Serializer&)> target, std::string filename,
                   training::Trigger trigger, SnapshotOptions options, std::string default_name)
    : target_(std::move(target)),
      filename_(std::move(filename)),
      trigger_(std::move(trigger)),
      options_(std::move(options)),
      default_name_(std::move(default_name)) {
  RENSA_CHECK(!filename_.empty(), ValueError, "snapshot: empty file name");
  RENSA_CHECK(options_.n_retains == -1 || options_.n_retains > 0, ValueError,
              "snapshot: n_retains must be -1 or positive, got ", options_.n_retains);
  if (options_.writer == nullptr) options_.writer = std::make_shared<SimpleWriter>();
}

Snapshot::Snapshot(std::function<void(serializers::Serializer&)> target, std::string filename,
                   training::Trigger trigger, int n_retains, std::string default_name)
    : Snapshot(std::move(target), std::move(filename), std::move(trigger), SnapshotOptions{.n_retains = n_retains},
               std::move(default_name)) {}

std::string Snapshot::path_for(const training::Trainer& trainer) const {
  return (std::filesystem::path(trainer.out()) / format_filename(filename_, trainer)).string();
}

void Snapshot::initialize(training::Trainer& trainer) {
  armed_ = true;
  // Files of this snapshot's pattern only; a pattern with fields in its directory part is left alone.
  const std::filesystem::path pattern(filename_);
  const std::string dir_part = pattern.parent_path().string();
  if (dir_part.find('{') != std::string::npos) return;
  const std::string file_part = pattern.filename().string();
  serializers::remove_stale_temporaries((std::filesystem::path(trainer.out()) / dir_part).string(),
                                        [&](std::string_view f) { return filename_matches(file_part, f); });
}

void Snapshot::operator()(training::Trainer& trainer) {
  if (options_.condition && !options_.condition()) return;
  save(trainer);
}

void Snapshot::save(training::Trainer& trainer) { take(trainer, *options_.writer); }

void Snapshot::take(training::Trainer& trainer, SnapshotWriter& writer) {
  const std::string path = path_for(trainer);
  serializers::DictionarySerializer s;
  if (target_ != nullptr) {
    target_(s);
  } else {
    trainer.serialize(s);
  }
  SnapshotWriter::Values values = s.target();
  // The serializer holds the live arrays; a write that finishes later gets copies.
  if (writer.deferred()) {
    for (auto& [key, value] : values) value = value.copy();
  }
  std::function<void()> done;
  if (options_.n_retains > 0) {
    done = [pattern = filename_, out = trainer.out(), path, n = static_cast<std::size_t>(options_.n_retains)] {
      // As Chainer: every file of the pattern in the directory counts, those of an earlier run too.
      std::vector<std::string> files = find_snapshots(pattern, out);
      for (std::size_t i = 0; i + n < files.size(); ++i) {
        if (files[i] == path) continue;
        std::error_code ec;
        std::filesystem::remove(files[i], ec);
        if (ec) std::cerr << "snapshot: cannot remove old snapshot '" << files[i] << "': " << ec.message() << "\n";
      }
    };
  }
  writer(path, std::move(values), std::move(done));
}

void Snapshot::restore(training::Trainer& trainer) {
  if (!options_.autoload) return;
  // A pattern with fields in its directory part is a ValueError here, not a silent "nothing found".
  if (const auto latest = find_latest_snapshot(filename_, trainer.out())) load(trainer, *latest);
}

void Snapshot::load(training::Trainer& trainer, const std::string& file) const {
  if (target_ == nullptr) {
    serializers::load_npz(file, trainer);
    return;
  }
  serializers::DictionaryDeserializer d(serializers::read_npz(file), file);
  target_(d);
}

void Snapshot::finalize(training::Trainer& trainer) {
  (void)trainer;
  options_.writer->finalize();
}

void Snapshot::on_error(training::Trainer& trainer, const std::exception_ptr& error) {
  (void)error;
  if (!options_.snapshot_on_error || !armed_) return;
  SimpleWriter now;
  take(trainer, now);
}

std::string Snapshot::resume(training::Trainer& trainer, const std::string& path) const {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const auto latest = find_latest_snapshot(filename_, path);
    RENSA_CHECK(latest.has_value(), IOError, "snapshot: no snapshot in '", path, "' (files named like '", filename_,
                "')");
    file = *latest;
  }
  load(trainer, file);
  return file;
}

namespace {

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      const std::string_view x = std::string_view(a).substr(i, ie - i), y = std::string_view(b).substr(j, je - j);
      const auto xs = x.find_first_not_of('0'), ys = y.find_first_not_of('0');
      const std::string_view xv = xs == std::string_view::npos ? "" : x.substr(xs);
      const std::string_view yv = ys == std::string_view::npos ? "" : y.substr(ys);
      if (xv.size() != yv.size()) return xv.size() < yv.size();
      if (xv != yv) return xv < yv;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> find_snapshots(const std::string& pattern, const std::string& directory) {
  const std::filesystem::path p(pattern);
  const std::string dir_part = p.parent_path().string();
  RENSA_CHECK(dir_part.find('{') == std::string::npos, ValueError, "find_snapshots: the pattern '", pattern,
              "' has fields in its directory part");
  const std::string file_part = p.filename().string();
  const std::filesystem::path dir = std::filesystem::path(directory) / dir_part;
  std::vector<std::pair<std::filesystem::file_time_type, std::string>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!filename_matches(file_part, name)) continue;
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    const auto mtime = it->last_write_time(fec);
    if (!fec) found.emplace_back(mtime, it->path().string());
  }
  // File times tick coarsely (a few milliseconds): among equal times, snapshot_iter_10 comes after
  // snapshot_iter_9 (digit runs compare as numbers).
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : natural_less(a.second, b.second);
  });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::optional<std::string> find_latest_snapshot(const std::string& pattern, const std::string& directory) {
  std::vector<std::string> files = find_snapshots(pattern, directory);
  if (files.empty()) return std::nullopt;
  return files.back();
}

std::shared_ptr<StopOnSignal> stop_on_signal(std::shared_ptr<Snapshot> snapshot) {
  return std::make_shared<StopOnSignal>([snapshot = std::move(snapshot)](training::Trainer& trainer) {
    snapshot->save(trainer);
    return snapshot->path_for(trainer);
  });
}

Snapshot snapshot(std::string filename, training::Trigger trigger, int n_retains) {
  return Snapshot(nullptr, std::move(filename), std::move(trigger), n_retains, "snapshot");
}

Snapshot snapshot(std::string filename, training::Trigger trigger, SnapshotOptions options) {
  return Snapshot(nullptr, std::move(filename), std::move(trigger), std::move(options), "snapshot");
}

}  // namespace rensa::extensions
