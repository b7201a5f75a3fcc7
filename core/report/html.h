/// \file The report as one self-contained HTML page (no network, no other file; styles inline,
/// graph and charts as inline SVG), readable printed to PDF from a browser.
#pragma once

#include <string>

#include "core/report/report_model.h"

namespace souffle::report {

/// The whole report page.
std::string report_html(const Report& r);

/// The page's style sheet, shared with the walk-through pages.
const std::string& report_css();

/// `cuda` as HTML with spans for comments, preprocessor lines, keywords, types, CUDA built-ins,
/// numbers and strings (classes the style sheet colours); escaped.
std::string highlight_cuda(const std::string& cuda);

}  // namespace souffle::report
