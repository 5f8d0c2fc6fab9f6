#pragma once
// Drawing a PNG with gnuplot, atomically (PlotReport, VariableStatisticsPlot): the program's
// lookup, the temporary data, script and image files beside the target, and the rename.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace rensa::extensions::detail {

/// Whether `program` (a name looked up on PATH, or a path) is an executable file.
bool gnuplot_found(const std::string& program);
/// A single-quoted gnuplot string ('' stands for ').
std::string gp_quote(const std::string& s);
/// Removes the temporary files a killed run left beside `target`.
void remove_plot_temporaries(const std::filesystem::path& target, const char* owner);
/// Writes `data` to a temporary file beside `path`, runs `program` on the script that
/// `script(data_path, png_path)` returns (it must set the output to png_path), and renames the
/// image over `path` (synced). Returns why it failed when gnuplot could not run or drew nothing
/// (the caller warns); IOError naming `owner` when a file cannot be written or renamed.
std::optional<std::string> draw_png(const std::string& program, const std::string& path, const char* owner,
                                    const std::string& data,
                                    const std::function<std::string(const std::string& data_path,
                                                                    const std::string& png_path)>& script);

}  // namespace rensa::extensions::detail
