/// \file Writing a report or a walk-through to files, the format chosen by the file's extension;
/// what the command line and the explorer's File > Export share.
#pragma once

#include <string>
#include <vector>

#include "core/report/report_model.h"
#include "core/report/steps.h"

namespace souffle::report {

/// "html", "json", "csv" or "dot" from `path`'s extension (any case); UserError naming the file
/// otherwise.
std::string report_format(const std::string& path);

/// Whether a report in `format` carries each kernel's CUDA (HTML and JSON do).
bool format_has_code(const std::string& format);

/// Renders `r` in the format `path` names and writes it. Returns the bytes written; UserError
/// naming the file when it cannot be written.
size_t write_report(const Report& r, const std::string& path);

/// Writes the walk-through's pages: `index_path` (a .html file) is the first page, the others sit
/// beside it ("<stem>-N-<step>.html"). Returns the paths written.
std::vector<std::string> write_walkthrough(const std::string& model_path,
                                           const StepsOptions& options,
                                           const std::string& index_path);

}  // namespace souffle::report
