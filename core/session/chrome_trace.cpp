#include "core/session/chrome_trace.h"

#include <nlohmann/json.hpp>

namespace souffle {

std::string chrome_trace_json(const std::vector<ProfileReport>& reports) {
  using nlohmann::json;
  json events = json::array();
  int pid = 1;
  for (const ProfileReport& r : reports) {
    std::string label =
        r.strategy + " on " + r.device +
        (r.gpu_time() ? " (" + r.timer + ")" : " (emulator: CPU wall time, not GPU time)");
    events.push_back(
        {{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", label}}}});
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"tid", 1},
                      {"name", "thread_name"},
                      {"args", {{"name", "kernels (median run)"}}}});
    double t = 0;
    for (const KernelMeasurement& k : r.kernels) {
      t += k.gap_us.median;
      json e = {{"ph", "X"},
                {"pid", pid},
                {"tid", 1},
                {"name", k.name},
                {"cat", r.gpu_time() ? "kernel" : "emulated kernel"},
                {"ts", t},
                {"dur", k.time_us.median},
                {"args",
                 {{"partition", k.partition},
                  {"median_us", k.time_us.median},
                  {"min_us", k.time_us.min},
                  {"max_us", k.time_us.max},
                  {"estimated_us", k.est_us},
                  {"grid", k.grid},
                  {"block", k.block},
                  {"cooperative", k.cooperative},
                  {"registers", k.registers}}}};
      // The hardware counters of the counted run, where they were read.
      if (k.dram_read_bytes >= 0) e["args"]["dram_read_bytes"] = k.dram_read_bytes;
      if (k.dram_write_bytes >= 0) e["args"]["dram_write_bytes"] = k.dram_write_bytes;
      if (k.achieved_occupancy >= 0) e["args"]["achieved_occupancy"] = k.achieved_occupancy;
      if (k.has_counters()) e["args"]["estimated_dram_bytes"] = k.est_dram_bytes;
      events.push_back(std::move(e));
      t += k.time_us.median;
    }
    ++pid;
  }
  json meta = json::array();
  for (const ProfileReport& r : reports)
    meta.push_back({{"strategy", r.strategy},
                    {"backend", r.backend},
                    {"timer", r.timer},
                    {"device", r.device},
                    {"driver_version", r.driver_version},
                    {"date", r.date},
                    {"runs", r.runs},
                    {"gpu_time", r.gpu_time()}});
  json j = {{"traceEvents", events},
            {"displayTimeUnit", "ns"},
            {"otherData",
             {{"producer", "souffle-cli profile"},
              {"layout", "one representative run per strategy from per-kernel medians"},
              {"runs", meta}}}};
  return j.dump(1) + "\n";
}

}  // namespace souffle
