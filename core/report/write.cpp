#include "core/report/write.h"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "core/report/csv.h"
#include "core/report/dot.h"
#include "core/report/html.h"
#include "core/report/json.h"
#include "core/support/error.h"

namespace souffle::report {

namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  if (!path.parent_path().empty() && !fs::is_directory(path.parent_path()))
    throw UserError(path.string(), "",
                    "the folder " + path.parent_path().string() + " does not exist");
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path.string(), "", "cannot write the report here");
  out << text;
  out.close();
  if (!out) throw UserError(path.string(), "", "writing the report failed");
}

}  // namespace

std::string report_format(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (e == ".html" || e == ".htm") return "html";
  if (e == ".json") return "json";
  if (e == ".csv") return "csv";
  if (e == ".dot" || e == ".gv") return "dot";
  throw UserError(path, "", "the extension names the report's format: .html, .json, .csv or .dot");
}

bool format_has_code(const std::string& format) {
  return format == "html" || format == "json";
}

size_t write_report(const Report& r, const std::string& path) {
  const std::string format = report_format(path);
  std::string text;
  if (format == "html")
    text = report_html(r);
  else if (format == "json")
    text = report_json(r).dump(1) + "\n";
  else if (format == "csv")
    text = report_csv(r);
  else
    text = report_dot(r);
  write_file(path, text);
  return text.size();
}

std::vector<std::string> write_walkthrough(const std::string& model_path,
                                           const StepsOptions& options,
                                           const std::string& index_path) {
  if (report_format(index_path) != "html")
    throw UserError(index_path, "", "the walk-through is HTML pages: name a .html file");
  const fs::path index(index_path);
  if (!index.parent_path().empty() && !fs::is_directory(index.parent_path()))
    throw UserError(index_path, "",
                    "the folder " + index.parent_path().string() + " does not exist");
  std::vector<StepPage> pages = walkthrough(model_path, options, index.stem().string());
  std::vector<std::string> written;
  for (const StepPage& p : pages) {
    fs::path out = index.parent_path() / p.file;
    write_file(out, p.html);
    written.push_back(out.string());
  }
  return written;
}

}  // namespace souffle::report
