#include "core/report/csv.h"

#include <fmt/format.h>

namespace souffle::report {

namespace {

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string report_csv(const Report& r) {
  std::string out =
      "model,plan,strategy,gpu,precision,kernel,kind,first_op,ops,tes,stages,grid_syncs,"
      "launches,blocks,threads,cooperative,flops,dram_bytes,intensity,est_time_us,est_bound,"
      "measured_us\n";
  for (const ReportPlan& p : r.plans)
    for (const ReportKernel& k : p.kernels) {
      out += fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4g},{:.4f},{},{}\n",
          field(r.model.name), field(p.label), plan::strategy_name(p.strategy), field(p.gpu),
          gpu::precision_name(p.precision), k.id, k.kind,
          field(k.ops.empty() ? std::string() : k.ops.front()), k.ops.size(), k.tes.size(),
          k.stages.size(), k.grid_syncs, k.launches.size(), k.blocks, k.threads,
          k.cooperative ? "yes" : "no", k.flops, k.dram_bytes, k.intensity, k.est_time_us,
          k.cost.bound, k.measured ? fmt::format("{:.4f}", k.measured->time_us) : "");
    }
  return out;
}

}  // namespace souffle::report
