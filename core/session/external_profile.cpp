#include "core/session/external_profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "core/support/error.h"
#include "core/support/median.h"

namespace souffle {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

/// One CSV line into fields (double quotes around fields, "" for a quote inside one).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

/// A number as a tool prints it ("1,234.5" with a thousands separator too); false if none.
bool parse_number(std::string s, double* out) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  s = trim(s);
  if (s.empty()) return false;
  try {
    size_t used = 0;
    *out = std::stod(s, &used);
    return used == s.size();
  } catch (const std::invalid_argument&) {
    return false;
  } catch (const std::out_of_range&) {
    return false;
  }
}

/// Microseconds per unit named as Nsight Compute or a header names it; 0 if unknown.
double us_per(const std::string& unit_text) {
  const std::string u = lower(trim(unit_text));
  if (u == "nsecond" || u == "ns" || u == "nanosecond" || u == "nanoseconds") return 1e-3;
  if (u == "usecond" || u == "us" || u == "µs" || u == "microsecond" || u == "microseconds")
    return 1;
  if (u == "msecond" || u == "ms" || u == "millisecond" || u == "milliseconds") return 1e3;
  if (u == "second" || u == "s" || u == "seconds") return 1e6;
  return 0;
}

/// Named times in first-appearance order, each with every call's time.
class Collector {
 public:
  void add(const std::string& name, double us, const std::string& kind) {
    auto it = m_index.find(name);
    if (it == m_index.end()) {
      it = m_index.emplace(name, m_entries.size()).first;
      ExternalEntry e;
      e.name = name;
      e.kind = kind;
      m_entries.push_back(std::move(e));
      m_times.emplace_back();
    }
    m_times[it->second].push_back(us);
  }
  ExternalEntry* entry(const std::string& name) {
    auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_entries[it->second];
  }
  std::vector<ExternalEntry> take() {
    for (size_t i = 0; i < m_entries.size(); ++i) {
      m_entries[i].time_us = median_of(m_times[i]);
      m_entries[i].calls = static_cast<int>(m_times[i].size());
    }
    return std::move(m_entries);
  }

 private:
  std::unordered_map<std::string, size_t> m_index;
  std::vector<ExternalEntry> m_entries;
  std::vector<std::vector<double>> m_times;
};

std::vector<std::string> read_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

int column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

bool read_nsight(const std::string& path, const std::vector<std::string>& lines,
                 ExternalProfile& out) {
  // The long layout may give a launch's duration under two names: one per launch is taken.
  std::set<std::string> seen;
  size_t h = 0;
  std::vector<std::string> header;
  for (; h < lines.size(); ++h) {
    header = csv_fields(lines[h]);
    if (column(header, "Kernel Name") >= 0) break;
  }
  if (h == lines.size()) return false;
  out.format = "nsight-compute";
  out.time_kind = "GPU kernel time";
  const int kname = column(header, "Kernel Name");
  const int id = column(header, "ID");
  Collector c;
  const int mname = column(header, "Metric Name"), munit = column(header, "Metric Unit"),
            mvalue = column(header, "Metric Value");
  if (mname >= 0 && mvalue >= 0) {
    // Long layout: one row per kernel launch and metric.
    for (size_t l = h + 1; l < lines.size(); ++l) {
      if (trim(lines[l]).empty() || lines[l].rfind("==", 0) == 0) continue;
      const std::vector<std::string> f = csv_fields(lines[l]);
      if (f.size() < header.size())
        throw UserError(
            path, "",
            fmt::format("line {}: {} fields, the header has {}", l + 1, f.size(), header.size()));
      const std::string& metric = f[static_cast<size_t>(mname)];
      if (metric != "gpu__time_duration.sum" && metric != "Duration") continue;
      double v = 0;
      if (!parse_number(f[static_cast<size_t>(mvalue)], &v))
        throw UserError(
            path, "",
            fmt::format("line {}: '{}' is not a number", l + 1, f[static_cast<size_t>(mvalue)]));
      const double scale = munit >= 0 ? us_per(f[static_cast<size_t>(munit)]) : 1e-3;
      if (scale == 0)
        throw UserError(
            path, "",
            fmt::format("line {}: unknown time unit '{}'", l + 1, f[static_cast<size_t>(munit)]));
      // Duration and gpu__time_duration.sum are one measurement: take one per launch.
      const std::string launch = (id >= 0 ? f[static_cast<size_t>(id)] : std::to_string(l)) + "|" +
                                 f[static_cast<size_t>(kname)];
      if (!seen.insert(launch).second) continue;
      c.add(f[static_cast<size_t>(kname)], v * scale, "kernel");
    }
  } else {
    // Raw layout: a column per metric, a row of units under the header.
    const int dur = std::max(column(header, "gpu__time_duration.sum"), column(header, "Duration"));
    if (dur < 0)
      throw UserError(path, "",
                      "an Nsight Compute CSV without a duration: export with --metrics "
                      "gpu__time_duration.sum (or the Duration of the SpeedOfLight section)");
    double scale = 1e-3;
    size_t first = h + 1;
    if (first < lines.size()) {
      const std::vector<std::string> units = csv_fields(lines[first]);
      if (static_cast<size_t>(kname) < units.size() && units[static_cast<size_t>(kname)].empty()) {
        if (static_cast<size_t>(dur) < units.size() && us_per(units[static_cast<size_t>(dur)]) > 0)
          scale = us_per(units[static_cast<size_t>(dur)]);
        ++first;
      }
    }
    for (size_t l = first; l < lines.size(); ++l) {
      if (trim(lines[l]).empty() || lines[l].rfind("==", 0) == 0) continue;
      const std::vector<std::string> f = csv_fields(lines[l]);
      if (f.size() <= static_cast<size_t>(std::max(dur, kname)))
        throw UserError(path, "", fmt::format("line {}: too few fields", l + 1));
      double v = 0;
      if (!parse_number(f[static_cast<size_t>(dur)], &v))
        throw UserError(
            path, "",
            fmt::format("line {}: '{}' is not a number", l + 1, f[static_cast<size_t>(dur)]));
      c.add(f[static_cast<size_t>(kname)], v * scale, "kernel");
    }
  }
  out.entries = c.take();
  return true;
}

void read_plain_csv(const std::string& path, const std::vector<std::string>& lines,
                    ExternalProfile& out) {
  out.format = "csv";
  out.time_kind = "as given";
  Collector c;
  int name = 0, time = 1;
  double scale = 1;
  bool header_seen = false;
  for (size_t l = 0; l < lines.size(); ++l) {
    const std::string t = trim(lines[l]);
    if (t.empty() || t[0] == '#') continue;
    const std::vector<std::string> f = csv_fields(lines[l]);
    double v = 0;
    if (!header_seen) {
      header_seen = true;
      if (f.size() < 2)
        throw UserError(path, "",
                        fmt::format("line {}: not a profile CSV (want name,time per line; or "
                                    "Nsight Compute's CSV; or a PyTorch profiler trace)",
                                    l + 1));
      if (!parse_number(f[1], &v)) {  // a header: find the columns and the unit
        name = time = -1;
        for (size_t i = 0; i < f.size(); ++i) {
          const std::string hdr = lower(f[i]);
          if (name < 0 && hdr.find("name") != std::string::npos) name = static_cast<int>(i);
          if (time < 0 &&
              (hdr.find("time") != std::string::npos || hdr.find("dur") != std::string::npos)) {
            time = static_cast<int>(i);
            for (const char* u : {"ns", "us", "µs", "ms", "s"}) {
              const std::string unit = u;
              if (hdr.size() > unit.size() + 1 &&
                  (hdr.compare(hdr.size() - unit.size() - 1, std::string::npos, "_" + unit) == 0 ||
                   hdr.find("(" + unit + ")") != std::string::npos)) {
                scale = us_per(unit);
                break;
              }
            }
          }
        }
        if (name < 0) name = 0;
        if (time < 0) time = name == 0 ? 1 : 0;
        continue;
      }
    }
    if (f.size() <= static_cast<size_t>(std::max(name, time)))
      throw UserError(path, "", fmt::format("line {}: too few fields", l + 1));
    if (!parse_number(f[static_cast<size_t>(time)], &v))
      throw UserError(
          path, "",
          fmt::format("line {}: '{}' is not a time", l + 1, f[static_cast<size_t>(time)]));
    if (v < 0) throw UserError(path, "", fmt::format("line {}: a negative time", l + 1));
    c.add(f[static_cast<size_t>(name)], v * scale, "node");
  }
  out.entries = c.take();
  if (out.entries.empty()) throw UserError(path, "", "no times in the file");
}

void read_trace(const std::string& path, const nlohmann::json& j, ExternalProfile& out) {
  out.format = "pytorch-trace";
  const nlohmann::json& events = j.at("traceEvents");
  if (!events.is_array()) throw UserError(path, "", "traceEvents is not an array");
  // Python frames (the module calls among them), GPU kernels and their launches.
  struct Frame {
    double ts = 0, dur = 0;
    long long parent = -1;
    std::string module;  ///< "Linear_0"; empty for other Python frames
  };
  std::unordered_map<long long, Frame> frames;
  std::vector<long long> order;                       ///< module frames by start time
  std::unordered_map<long long, double> launch_ts;    ///< correlation -> launch time
  std::vector<std::pair<long long, double>> kernels;  ///< correlation, duration
  const std::string prefix = "nn.Module: ";
  for (const nlohmann::json& e : events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const nlohmann::json& args = e.contains("args") ? e["args"] : nlohmann::json::object();
    if (cat == "python_function") {
      if (!args.contains("Python id")) continue;
      Frame f;
      f.ts = e.value("ts", 0.0);
      f.dur = e.value("dur", 0.0);
      f.parent = args.value("Python parent id", -1LL);
      const std::string name = e.value("name", "");
      if (name.rfind(prefix, 0) == 0) f.module = name.substr(prefix.size());
      const long long id = args["Python id"].get<long long>();
      frames[id] = f;
      if (!f.module.empty()) order.push_back(id);
    } else if (cat == "kernel" && args.contains("correlation")) {
      kernels.push_back({args["correlation"].get<long long>(), e.value("dur", 0.0)});
    } else if (cat == "cuda_runtime" && args.contains("correlation")) {
      launch_ts[args["correlation"].get<long long>()] = e.value("ts", 0.0);
    }
  }
  if (order.empty())
    throw UserError(path, "",
                    "the trace holds no module calls: record it with "
                    "torch.profiler.profile(with_modules=True, with_stack=True)");
  std::sort(order.begin(), order.end(),
            [&](long long a, long long b) { return frames[a].ts < frames[b].ts; });
  // Each module call's module ancestor, path and position among its parent call's children.
  auto module_parent = [&](long long id) -> long long {
    long long p = frames[id].parent;
    for (int hops = 0; p >= 0 && hops < 10000; ++hops) {
      auto it = frames.find(p);
      if (it == frames.end()) return -1;
      if (!it->second.module.empty()) return p;
      p = it->second.parent;
    }
    return -1;
  };
  std::unordered_map<long long, long long> parent_of;
  std::unordered_map<long long, std::string> path_of;
  std::unordered_map<std::string, std::vector<std::string>> children;  // parent path -> order
  std::unordered_map<long long, double> self_us;
  for (long long id : order) {
    const long long p = module_parent(id);
    parent_of[id] = p;
    const std::string parent_path = p >= 0 ? path_of[p] : std::string();
    const std::string path = (parent_path.empty() ? "" : parent_path + "/") + frames[id].module;
    path_of[id] = path;
    std::vector<std::string>& kids = children[parent_path];
    if (std::find(kids.begin(), kids.end(), path) == kids.end()) kids.push_back(path);
    self_us[id] += frames[id].dur;
    if (p >= 0) self_us[p] -= frames[id].dur;
  }
  const bool gpu = !kernels.empty();
  out.time_kind = gpu ? "GPU kernel time (PyTorch)" : "CPU time (PyTorch eager)";
  std::unordered_map<long long, double> gpu_us;
  if (gpu) {
    // A kernel belongs to the innermost module call its launch falls in.
    for (const auto& [corr, dur] : kernels) {
      auto t = launch_ts.find(corr);
      if (t == launch_ts.end()) continue;
      long long best = -1;
      for (long long id : order) {
        const Frame& f = frames[id];
        if (f.ts > t->second) break;
        if (t->second <= f.ts + f.dur && (best < 0 || f.dur <= frames[best].dur)) best = id;
      }
      if (best >= 0) gpu_us[best] += dur;
    }
  }
  Collector c;
  for (long long id : order)
    c.add(path_of[id], gpu ? gpu_us[id] : std::max(0.0, self_us[id]), "module");
  std::vector<ExternalEntry> entries = c.take();
  for (ExternalEntry& e : entries) {
    // Position at each level among the children of the level above, and the class.
    std::string parent;
    size_t from = 0;
    while (true) {
      const size_t slash = e.name.find('/', from);
      const std::string upto = e.name.substr(0, slash);
      const std::vector<std::string>& kids = children[parent];
      e.order.push_back(static_cast<int>(std::find(kids.begin(), kids.end(), upto) - kids.begin()));
      if (slash == std::string::npos) break;
      parent = upto;
      from = slash + 1;
    }
    std::string leaf =
        e.name.substr(e.name.rfind('/') == std::string::npos ? 0 : e.name.rfind('/') + 1);
    e.cls = leaf.substr(0, leaf.rfind('_'));
  }
  out.entries = std::move(entries);
}

/// True when `events` holds ONNX Runtime's per-node events (cat "Node", "<node>_kernel_time").
bool has_onnxruntime_nodes(const nlohmann::json& events) {
  if (!events.is_array()) return false;
  const std::string suffix = "_kernel_time";
  for (const nlohmann::json& e : events) {
    if (!e.is_object() || e.value("cat", "") != "Node") continue;
    const std::string name = e.value("name", "");
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

/// ONNX Runtime's profile (SessionOptions.enable_profiling): per run ("model_run" events), each
/// node's "<node>_kernel_time" durations summed; per node the median over the runs it ran in.
void read_onnxruntime(const std::string& path, const nlohmann::json& events, ExternalProfile& out) {
  out.format = "onnxruntime-profile";
  const std::string suffix = "_kernel_time";
  std::vector<std::pair<double, double>> runs;  // start, end
  for (const nlohmann::json& e : events)
    if (e.is_object() && e.value("cat", "") == "Session" && e.value("name", "") == "model_run") {
      const double ts = e.value("ts", 0.0);
      runs.push_back({ts, ts + e.value("dur", 0.0)});
    }
  std::sort(runs.begin(), runs.end());
  std::set<std::string> providers;
  std::vector<std::string> order;                              // node names, first seen first
  std::map<std::string, std::map<size_t, double>> per_run_us;  // node -> run -> summed µs
  for (const nlohmann::json& e : events) {
    if (!e.is_object() || e.value("cat", "") != "Node" || e.value("ph", "X") != "X") continue;
    std::string name = e.value("name", "");
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;  // "_fence_before", "_fence_after"
    name.resize(name.size() - suffix.size());
    const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
    if (!(dur >= 0))
      throw UserError(path, "", fmt::format("event '{}': a negative duration", name));
    size_t run = 0;  // the run whose span holds the event (events outside any run: run 0)
    for (size_t r = 0; r < runs.size(); ++r)
      if (ts >= runs[r].first && ts <= runs[r].second) run = r;
    if (!per_run_us.count(name)) order.push_back(name);
    per_run_us[name][run] += dur;
    if (e.contains("args") && e["args"].is_object())
      if (const std::string p = e["args"].value("provider", ""); !p.empty()) providers.insert(p);
  }
  std::string provider;
  for (const std::string& p : providers) provider += (provider.empty() ? "" : ", ") + p;
  out.time_kind =
      "ONNX Runtime node time (" + (provider.empty() ? "provider not named" : provider) + ")";
  Collector c;
  for (const std::string& name : order)
    for (const auto& [run, us] : per_run_us[name]) c.add(name, us, "node");
  out.entries = c.take();
}

}  // namespace

ExternalProfile read_external_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open the file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_external_profile(buf.str(), path);
}

ExternalProfile parse_external_profile(const std::string& text, const std::string& path) {
  ExternalProfile out;
  out.path = path;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path, "", std::string("not valid JSON: ") + e.what());
    }
    // ONNX Runtime writes its profile as a bare array of Chrome trace events.
    const nlohmann::json* events = j.is_array()                                 ? &j
                                   : j.is_object() && j.contains("traceEvents") ? &j["traceEvents"]
                                                                                : nullptr;
    if (events && has_onnxruntime_nodes(*events)) {
      read_onnxruntime(path, *events, out);
      return out;
    }
    if (!j.is_object() || !j.contains("traceEvents"))
      throw UserError(path, "",
                      "a JSON file that is neither a PyTorch profiler trace (an object with "
                      "traceEvents) nor an ONNX Runtime profile (an array of events with cat "
                      "\"Node\" named \"<node>_kernel_time\", as enable_profiling writes)");
    read_trace(path, j, out);
    return out;
  }
  const std::vector<std::string> lines = read_lines(text);
  if (!read_nsight(path, lines, out)) read_plain_csv(path, lines, out);
  return out;
}

namespace {

/// The graph's modules from its node names ("/layers.0/query/MatMul" is in layers.0 → query):
/// per module path (components joined by '/'), its children in first-use order and its nodes.
struct ModuleTree {
  std::map<std::string, std::vector<std::string>> children;
  std::map<std::string, std::vector<std::string>> nodes;  ///< directly in the module
  std::map<std::string, std::string> dotted;              ///< "layers.0/query" -> "layers.0.query"
};

ModuleTree module_tree(const std::vector<std::string>& names) {
  ModuleTree t;
  t.children[""];
  for (const std::string& n : names) {
    if (n.empty() || n[0] != '/') continue;
    std::vector<std::string> parts;
    for (size_t a = 1, b; a <= n.size(); a = b + 1) {
      b = n.find('/', a);
      if (b == std::string::npos) b = n.size();
      parts.push_back(n.substr(a, b - a));
    }
    parts.pop_back();  // the op's own name
    std::string path, dotted;
    for (const std::string& p : parts) {
      const std::string child = path.empty() ? p : path + "/" + p;
      std::vector<std::string>& kids = t.children[path];
      if (std::find(kids.begin(), kids.end(), child) == kids.end()) kids.push_back(child);
      // PyTorch's exporter repeats the parent in a child's scope ("features/features.1"):
      // the module path is the last such component.
      dotted = !dotted.empty() && p.rfind(dotted + ".", 0) == 0 ? p
               : dotted.empty()                                 ? p
                                                                : dotted + "." + p;
      t.dotted[child] = dotted;
      path = child;
    }
    t.nodes[path].push_back(n);
  }
  return t;
}

/// Classes that run no operator in inference: the exporter leaves nothing of them.
bool no_op_module(const std::string& cls) {
  static const std::set<std::string> none = {"Dropout",   "Dropout1d", "Dropout2d",
                                             "Dropout3d", "Identity",  "AlphaDropout"};
  return none.count(cls) > 0;
}

int kernel_id_of(const std::string& name) {
  // kernel12, kernel12.0, kernel12_0 (a launch of a split partition)
  const std::string prefix = "kernel";
  if (name.rfind(prefix, 0) != 0) return -1;
  size_t i = prefix.size();
  int id = 0, digits = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    id = id * 10 + (name[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0) return -1;
  if (i == name.size()) return id;
  if (name[i] != '.' && name[i] != '_') return -1;
  for (++i; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  return id;
}

/// The model node an ONNX Runtime node stands for: the longest node name that the name starts
/// with, followed by '/' or '_' (its optimizer names a fused node "<first node>/<Fusion>" and
/// an inserted one "<node>_new_reshape"); "" if none.
std::string onnxruntime_origin(const std::string& name, const std::set<std::string>& nodes) {
  for (size_t p = name.size(); p-- > 1;)
    if ((name[p] == '/' || name[p] == '_') && nodes.count(name.substr(0, p)))
      return name.substr(0, p);
  return "";
}

}  // namespace

ExternalMatch match_external_profile(const ExternalProfile& profile,
                                     const std::vector<std::string>& nodes,
                                     const plan::FusionPlan* plan) {
  ExternalMatch out;
  const std::set<std::string> node_set(nodes.begin(), nodes.end());
  const ModuleTree tree = module_tree(nodes);
  std::map<std::string, std::string> by_dotted;  // "layers.0.query" -> "layers.0/query"
  for (const auto& [path, dotted] : tree.dotted) by_dotted.emplace(dotted, path);
  std::set<int> kernels;
  if (plan)
    for (const plan::Partition& p : plan->partitions) kernels.insert(p.id);
  auto subtree_nodes = [&](const std::string& path) {
    std::vector<std::string> all;
    std::vector<std::string> stack = {path};
    while (!stack.empty()) {
      const std::string p = stack.back();
      stack.pop_back();
      if (auto n = tree.nodes.find(p); n != tree.nodes.end())
        all.insert(all.end(), n->second.begin(), n->second.end());
      if (auto c = tree.children.find(p); c != tree.children.end())
        stack.insert(stack.end(), c->second.rbegin(), c->second.rend());
    }
    return all;
  };
  // PyTorch modules: trace path -> graph path, level by level in call order.
  std::map<std::string, std::string> graph_path;  // trace path -> graph path ("" = the model)
  if (profile.format == "pytorch-trace") {
    std::map<std::string, std::vector<const ExternalEntry*>> kids;  // trace parent -> children
    for (const ExternalEntry& e : profile.entries) {
      const size_t slash = e.name.rfind('/');
      kids[slash == std::string::npos ? "" : e.name.substr(0, slash)].push_back(&e);
    }
    // The outermost module called first is the exported model.
    std::vector<std::pair<std::string, std::string>> todo;  // trace path, graph path
    if (!kids[""].empty()) todo.push_back({kids[""].front()->name, ""});
    while (!todo.empty()) {
      auto [tpath, gpath] = todo.back();
      todo.pop_back();
      graph_path[tpath] = gpath;
      std::vector<const ExternalEntry*> called = kids[tpath];
      std::sort(called.begin(), called.end(), [](const ExternalEntry* a, const ExternalEntry* b) {
        return a->order.back() < b->order.back();
      });
      const std::vector<std::string>& sub =
          tree.children.count(gpath) ? tree.children.at(gpath) : std::vector<std::string>();
      size_t next = 0;
      for (const ExternalEntry* c : called) {
        if (no_op_module(c->cls)) continue;
        if (next < sub.size()) todo.push_back({c->name, sub[next++]});
      }
    }
  }
  for (const ExternalEntry& e : profile.entries) {
    MatchedEntry m;
    m.entry = &e;
    if (e.kind == "module") {
      auto g = graph_path.find(e.name);
      if (g == graph_path.end()) {
        m.why = no_op_module(e.cls) ? "runs no operator in inference (the graph has none of it)"
                                    : "no module of the graph at its place (more modules "
                                      "called than the graph's names show)";
      } else {
        m.module_path = g->second.empty() ? "(the model)" : tree.dotted.at(g->second);
        auto n = tree.nodes.find(g->second);
        if (n != tree.nodes.end()) m.nodes = n->second;
        if (m.nodes.empty() && subtree_nodes(g->second).empty())
          m.why = "its module path has no nodes in the graph";
      }
    } else {
      const int k = kernel_id_of(e.name);
      if (k >= 0 && kernels.count(k)) {
        m.kernel = k;
      } else if (node_set.count(e.name)) {
        m.nodes = {e.name};
      } else if (const std::string origin = profile.format == "onnxruntime-profile"
                                                ? onnxruntime_origin(e.name, node_set)
                                                : std::string();
                 !origin.empty()) {
        m.nodes = {origin};
      } else if (auto d = by_dotted.find(e.name); d != by_dotted.end()) {
        m.module_path = e.name;
        m.nodes = subtree_nodes(d->second);
      } else if (k >= 0) {
        m.why = plan ? fmt::format("the plan has no kernel {}", k) : "no plan to match kernels";
      } else {
        m.why = e.kind == "kernel" ? "not a kernel of this plan (another program's kernel?)"
                : profile.format == "onnxruntime-profile"
                    ? "not a node of this model: ONNX Runtime's optimizer made it (record the "
                      "profile with graph_optimization_level ORT_DISABLE_ALL to keep the model's "
                      "nodes)"
                    : "no ONNX node, module path or kernel of that name";
      }
    }
    if (m.why.empty() && (m.kernel >= 0 || !m.nodes.empty() || e.kind == "module")) {
      ++out.matched;
      if (m.kernel >= 0) out.kernel_us[m.kernel] += e.time_us * 1.0;
      // ONNX Runtime may run a node as several (a fused node and the reshapes it inserted).
      const bool sum = profile.format == "onnxruntime-profile";
      for (const std::string& n : m.nodes) out.node_us[n] = (sum ? out.node_us[n] : 0) + e.time_us;
    } else {
      if (m.why.empty()) m.why = "matches no node";
      ++out.unmatched;
    }
    out.entries.push_back(std::move(m));
  }
  return out;
}

}  // namespace souffle
