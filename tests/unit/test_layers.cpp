// The layering of the sources (docs/HACKING.md, "Layers"): a header or source file under
// include/rensa/ or src/ includes rensa headers of its own layer and of the layers below it only.
// Also that the reference backend includes nothing of the cpu backend's code, so that tests
// comparing the two compare independent formulas, and that HACKING's directory map names every
// part of the tree, so it cannot drift. The test reads the files; it links nothing of rensa.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A layer and its parts: a directory name (the same under include/rensa/ and src/) or an umbrella
// header directly under include/rensa/.
struct Layer {
  std::string name;
  std::vector<std::string> parts;
};

// Lowest first. Every directory of include/rensa/ and src/ must be in exactly one layer.
const std::vector<Layer> kLayers = {
    // Array, Variable, autograd, Config, the reporter; the kernels behind the kernel tables.
    {"core", {"core", "backends"}},
    // Function hooks (profilers) see functions through the core's hook interface; distributions are
    // made of functions.
    {"functions", {"functions", "function_hooks", "distributions"}},
    // Gradient checks of functions (library rensa::testing, linked by tests only).
    {"testing", {"testing"}},
    // Serialization, datasets and iterators need only the core; links and optimizers serialize,
    // iterators serialize their position.
    {"data", {"serializers", "datasets", "iterators"}},
    {"links", {"links", "link_hooks"}},
    {"optimizers", {"optimizers"}},
    // rensa.h and training.h gather everything but rensa::mn.
    {"training", {"training", "extensions", "rensa.h", "training.h"}},
    {"mn", {"mn", "mn.h"}},
};

// Includes of a higher layer that are allowed, each with its reason. Keep this list short.
struct Exception {
  std::string file;
  std::string header;
  std::string why;
};
const std::vector<Exception> kExceptions = {
    {"src/core/backward.cpp", "rensa/functions/basic_math.h",
     "the backward engine accumulates fan-out gradients with the differentiable add, so that double "
     "backprop works"},
};

// The part a path belongs to: the first component after `prefix` ("core" for core/array.h, or the
// file name itself for a file directly there).
std::string part_of(std::string_view path, std::string_view prefix) {
  path.remove_prefix(prefix.size());
  return std::string(path.substr(0, path.find('/')));
}

// The header named by an #include line ("x" or <x>, with any blanks around '#'), and whether it
// is quoted; nothing for any other line.
struct Include {
  std::string header;
  bool quoted = false;
};

std::optional<Include> include_of(std::string_view s) {
  auto skip_blanks = [&s] {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  };
  skip_blanks();
  if (!s.starts_with('#')) return std::nullopt;
  s.remove_prefix(1);
  skip_blanks();
  if (!s.starts_with("include")) return std::nullopt;
  s.remove_prefix(7);
  skip_blanks();
  if (s.empty() || (s.front() != '"' && s.front() != '<')) return std::nullopt;
  const char close = s.front() == '"' ? '"' : '>';
  s.remove_prefix(1);
  return Include{std::string(s.substr(0, s.find(close))), close == '"'};
}

struct Findings {
  std::size_t files = 0;
  std::size_t includes = 0;
  std::vector<std::string> violations;    // "file:line includes header (layer a includes layer b)"
  std::vector<std::string> unclassified;  // files and includes no layer holds
  std::vector<std::string> unused_exceptions;
};

// Checks every C++ file under root/include/rensa and root/src against kLayers and kExceptions.
Findings check_tree(const fs::path& root) {
  std::map<std::string, std::size_t> level;  // part -> index in kLayers
  for (std::size_t i = 0; i < kLayers.size(); ++i) {
    for (const auto& part : kLayers[i].parts) level[part] = i;
  }
  std::set<std::size_t> used_exceptions;
  Findings out;
  std::vector<fs::path> files;
  for (const char* dir : {"include/rensa", "src"}) {
    if (!fs::is_directory(root / dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      static const std::set<std::string> kExtensions = {".h", ".hpp", ".cpp", ".cc", ".inl"};
      if (entry.is_regular_file() && kExtensions.count(entry.path().extension().string())) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const std::string rel = fs::relative(path, root).generic_string();
    const std::string file_part = rel.starts_with("src/") ? part_of(rel, "src/") : part_of(rel, "include/rensa/");
    ++out.files;
    auto file_level = level.find(file_part);
    if (file_level == level.end()) {
      out.unclassified.push_back(rel + ": '" + file_part + "' is in no layer of the table");
      continue;
    }
    std::ifstream in(path);
    std::string line;
    for (int lineno = 1; std::getline(in, line); ++lineno) {
      const std::optional<Include> include = include_of(line);
      if (!include) continue;
      const std::string& header = include->header;
      const bool quoted = include->quoted;
      const std::string where = rel + ":" + std::to_string(lineno) + " includes " + header;
      std::optional<std::string> header_part;
      if (header.starts_with("rensa/")) {
        header_part = part_of(header, "rensa/");
      } else if (header.starts_with("src/")) {
        header_part = part_of(header, "src/");
      } else if (quoted) {
        out.unclassified.push_back(where + ": quoted includes name rensa/... or src/...");
        continue;
      } else {
        continue;  // the standard library or a third-party header
      }
      ++out.includes;
      auto header_level = level.find(*header_part);
      if (header_level == level.end()) {
        out.unclassified.push_back(where + ": '" + *header_part + "' is in no layer of the table");
        continue;
      }
      if (header_level->second <= file_level->second) continue;
      bool excepted = false;
      for (std::size_t i = 0; i < kExceptions.size(); ++i) {
        if (kExceptions[i].file == rel && kExceptions[i].header == header) {
          excepted = true;
          used_exceptions.insert(i);
        }
      }
      if (!excepted) {
        out.violations.push_back(where + " (layer " + kLayers[file_level->second].name + " includes layer " +
                                 kLayers[header_level->second].name + ")");
      }
    }
  }
  for (std::size_t i = 0; i < kExceptions.size(); ++i) {
    if (!used_exceptions.count(i)) {
      out.unused_exceptions.push_back(kExceptions[i].file + " includes " + kExceptions[i].header);
    }
  }
  return out;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "  " + x + "\n";
  return s;
}

const Findings& source_tree() {
  static const Findings findings = check_tree(RENSA_SOURCE_DIR);
  return findings;
}

}  // namespace

TEST(Layers, TableNamesEachPartOnce) {
  std::set<std::string> seen;
  for (const auto& layer : kLayers) {
    for (const auto& part : layer.parts) EXPECT_TRUE(seen.insert(part).second) << part << " is in two layers";
  }
}

TEST(Layers, NoIncludeOfAHigherLayer) {
  const Findings& f = source_tree();
  ASSERT_GT(f.files, 100u) << "test_layers: no sources under " << RENSA_SOURCE_DIR;
  EXPECT_TRUE(f.violations.empty()) << "test_layers: " << f.violations.size()
                                    << " include(s) of a higher layer; move code rather than add an exception "
                                       "(docs/HACKING.md, Layers):\n"
                                    << lines(f.violations);
}

TEST(Layers, EveryFileAndIncludeIsClassified) {
  const Findings& f = source_tree();
  EXPECT_TRUE(f.unclassified.empty()) << "test_layers: add these to the table kLayers in tests/unit/test_layers.cpp "
                                         "and docs/HACKING.md:\n"
                                      << lines(f.unclassified);
}

TEST(Layers, EveryExceptionIsStillNeeded) {
  const Findings& f = source_tree();
  EXPECT_TRUE(f.unused_exceptions.empty()) << "test_layers: exceptions no file needs any more (remove them):\n"
                                           << lines(f.unused_exceptions);
}

// The checker itself, on a small tree with one of each kind of finding.
TEST(Layers, CheckerFindsEachKindOfProblem) {
  const fs::path root = fs::path(::testing::TempDir()) / ("rensa_test_layers." + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [&root](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("include/rensa/links/a.h",
        "#pragma once\n#include \"rensa/core/array.h\"\n#include <vector>\n"
        "  #  include \"rensa/training/trainer.h\"\n");
  write("src/core/backward.cpp", "#include \"rensa/functions/basic_math.h\"\n");
  write("src/core/b.cpp",
        "// #include \"rensa/mn/mpi.h\"\n#include <rensa/links/link.h>\n#include \"src/mn/x.h\"\n"
        "#include \"rensa/newpart/q.h\"\n#include \"helper.h\"\n");
  write("src/newpart/c.cpp", "#include \"rensa/core/array.h\"\n");
  write("include/rensa/new.h", "#pragma once\n");
  const Findings f = check_tree(root);
  fs::remove_all(root);
  EXPECT_EQ(f.files, 5u);
  EXPECT_EQ(f.violations, (std::vector<std::string>{
                              "include/rensa/links/a.h:4 includes rensa/training/trainer.h (layer links includes "
                              "layer training)",
                              "src/core/b.cpp:2 includes rensa/links/link.h (layer core includes layer links)",
                              "src/core/b.cpp:3 includes src/mn/x.h (layer core includes layer mn)",
                          }));
  EXPECT_EQ(f.unclassified, (std::vector<std::string>{
                                "include/rensa/new.h: 'new.h' is in no layer of the table",
                                "src/core/b.cpp:4 includes rensa/newpart/q.h: 'newpart' is in no layer of the table",
                                "src/core/b.cpp:5 includes helper.h: quoted includes name rensa/... or src/...",
                                "src/newpart/c.cpp: 'newpart' is in no layer of the table",
                            }));
  EXPECT_TRUE(f.unused_exceptions.empty());  // src/core/backward.cpp's include is the listed exception
}

// ---- backends that share no code (docs/HACKING.md, "Adding a kernel" and "Adding a backend") ----

namespace {

// A folder whose files include nothing from the listed folders, and why.
struct Apart {
  std::string dir;
  std::vector<std::string> forbidden;
  std::string why;
};

const std::vector<Apart> kApart = {
    {"src/backends/reference/",
     {"src/backends/common/", "src/backends/cpu/"},
     "the reference backend is the tests' ground truth: its math is written from the definitions and shares "
     "nothing with the cpu backend's, so that comparing the two can catch a wrong formula in either"},
};

// Each include in root of a header that its folder in kApart forbids, as "file:line includes header".
std::vector<std::string> shared_includes(const fs::path& root) {
  std::vector<std::string> found;
  for (const Apart& apart : kApart) {
    if (!fs::is_directory(root / apart.dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / apart.dir)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& path : files) {
      const std::string rel = fs::relative(path, root).generic_string();
      std::ifstream in(path);
      std::string line;
      for (int lineno = 1; std::getline(in, line); ++lineno) {
        const std::optional<Include> include = include_of(line);
        if (!include) continue;
        for (const std::string& forbidden : apart.forbidden) {
          if (include->header.starts_with(forbidden)) {
            found.push_back(rel + ":" + std::to_string(lineno) + " includes " + include->header);
          }
        }
      }
    }
  }
  return found;
}

}  // namespace

TEST(Layers, ReferenceBackendIncludesNothingOfTheCpuBackend) {
  ASSERT_TRUE(fs::is_directory(fs::path(RENSA_SOURCE_DIR) / kApart[0].dir)) << kApart[0].dir;
  const std::vector<std::string> found = shared_includes(RENSA_SOURCE_DIR);
  EXPECT_TRUE(found.empty()) << "test_layers: " << kApart[0].why << "; write the reference's own version:\n"
                             << lines(found);
}

TEST(Layers, CheckerFindsIncludesSharedBetweenBackends) {
  const fs::path root = fs::path(::testing::TempDir()) / ("rensa_test_apart." + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [&root](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  write("src/backends/reference/a.cpp",
        "#include \"src/backends/reference/formulas.h\"\n#include \"src/core/convert.h\"\n"
        "  # include \"src/backends/common/scalar_ops.h\"\n// #include \"src/backends/cpu/loops.h\"\n");
  write("src/backends/reference/sub/b.h", "#pragma once\n#include <src/backends/cpu/kernels.h>\n");
  write("src/backends/cpu/c.cpp", "#include \"src/backends/common/scalar_ops.h\"\n");
  const std::vector<std::string> found = shared_includes(root);
  fs::remove_all(root);
  EXPECT_EQ(found, (std::vector<std::string>{
                       "src/backends/reference/a.cpp:3 includes src/backends/common/scalar_ops.h",
                       "src/backends/reference/sub/b.h:2 includes src/backends/cpu/kernels.h",
                   }));
}

// ---- the directory map (docs/HACKING.md, "Directory map") ----

namespace {

// The map: the code block after the "## Directory map" heading.
std::string directory_map(const fs::path& root) {
  std::ifstream in(root / "docs" / "HACKING.md");
  std::string line, block;
  bool heading = false, inside = false;
  while (std::getline(in, line)) {
    if (line == "## Directory map") heading = true;
    if (heading && line.rfind("```", 0) == 0) {
      if (inside) break;
      inside = true;
      continue;
    }
    if (inside) block += line + "\n";
  }
  return block;
}

// What the map must name, found in the tree: the top-level folders, the folders under
// include/rensa/, src/ (two levels), tests/, bench/ and docs/, each docs/*.md page and each script.
// A folder counts as named when "name/" (or "name," / "name}" inside a {a,b} list) appears.
std::vector<std::string> missing_from_map(const fs::path& root) {
  const std::string map = directory_map(root);
  std::vector<std::string> missing;
  auto named = [&](const std::string& token) { return map.find(token) != std::string::npos; };
  auto folder = [&](const fs::path& dir) {
    const std::string n = dir.filename().string();
    if (!named(n + "/") && !named(n + ",") && !named(n + "}")) missing.push_back(fs::relative(dir, root).string() + "/");
  };
  auto folders_in = [&](const fs::path& dir, int depth, auto&& self) -> void {
    if (!fs::is_directory(dir)) return;
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && e.path().filename().string()[0] != '.') subs.push_back(e.path());
    }
    std::sort(subs.begin(), subs.end());
    for (const fs::path& sub : subs) {
      folder(sub);
      if (depth > 1) self(sub, depth - 1, self);
    }
  };
  if (map.empty()) return {"docs/HACKING.md has no code block after '## Directory map'"};
  for (const char* top : {"bench", "cmake", "docs", "examples", "fuzz", "include", "scripts", "src", "tests"}) {
    if (fs::is_directory(root / top)) folder(root / top);
  }
  folders_in(root / "include" / "rensa", 1, folders_in);
  folders_in(root / "src", 2, folders_in);
  folders_in(root / "tests", 1, folders_in);
  folders_in(root / "bench", 1, folders_in);
  folders_in(root / "docs", 1, folders_in);
  std::vector<std::string> files;
  for (const char* dir : {"docs", "scripts"}) {
    if (!fs::is_directory(root / dir)) continue;
    for (const auto& e : fs::directory_iterator(root / dir)) {
      const std::string n = e.path().filename().string();
      if (!e.is_regular_file() || n[0] == '.') continue;
      if (std::string(dir) == "docs" && e.path().extension() != ".md") continue;
      files.push_back(std::string(dir) == "docs" ? n : "scripts/" + n);
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    if (!named(f)) missing.push_back(f);
  }
  return missing;
}

}  // namespace

TEST(DirectoryMap, NamesEveryPartOfTheTree) {
  const auto missing = missing_from_map(RENSA_SOURCE_DIR);
  EXPECT_TRUE(missing.empty()) << "docs/HACKING.md's directory map does not name (add a line for each):\n"
                               << lines(missing);
}

TEST(DirectoryMap, CheckerFindsWhatIsMissing) {
  const fs::path root = fs::path(::testing::TempDir()) / ("rensa_test_map." + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* d : {"src/core", "src/backends/cpu", "src/backends/gpu", "include/rensa/core", "docs", "scripts"}) {
    fs::create_directories(root / d);
  }
  std::ofstream(root / "docs" / "a.md") << "x";
  std::ofstream(root / "docs" / "b.md") << "x";
  std::ofstream(root / "scripts" / "run") << "x";
  std::ofstream(root / "docs" / "HACKING.md")
      << "# x\n\n## Directory map\n\n```\ninclude/rensa/\n  core/\nsrc/\n  backends/{cpu,reference}\ndocs/ "
         "a.md HACKING.md\n```\n\nscripts/run b.md gpu/\n";
  const auto missing = missing_from_map(root);
  fs::remove_all(root);
  EXPECT_EQ(missing, (std::vector<std::string>{"scripts/", "src/backends/gpu/", "b.md", "scripts/run"}));
}
