/// \file The report as one self-contained HTML page (no network, no other file; styles inline,
/// graph and charts as inline SVG), readable printed to PDF from a browser.
#pragma once

#include <string>

#include "core/report/report_model.h"

namespace souffle::report {

struct HtmlOptions {
  /// When the CUDA of all launches together is larger than this (bytes), the listings are
  /// packed: compressed (deflate) and base64-encoded into the page, and unpacked by its script
  /// when a listing is opened. The page stays one file with no network use; it loads in a
  /// fraction of the time (full-size BERT under every strategy holds 5 MB of CUDA).
  size_t pack_code_over = size_t{1} << 20;
};

/// The whole report page.
std::string report_html(const Report& r, const HtmlOptions& options = {});

/// The page's style sheet, shared with the walk-through pages.
const std::string& report_css();

/// `cuda` as HTML with spans for comments, preprocessor lines, keywords, types, CUDA built-ins,
/// numbers and strings (classes the style sheet colours); escaped.
std::string highlight_cuda(const std::string& cuda);

}  // namespace souffle::report
