// `tracefuse compare --format csv`: one row per kernel type.
#include <string>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/fusion/view.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/gpu_timeline.h"

namespace tracefuse {
namespace {

constexpr char kHeader[] =
    "kernel_type,trace1_count,trace2_count,trace1_time_ms,trace2_time_ms,count_ratio,time_ratio,"
    "opportunity,fused_by,opportunity_ratio,groups_affected,total_groups\n";

// The type's opportunity columns: "yes" with who fuses it, by how much and where, or "no".
std::string OpportunityColumns(const FusionOpportunity* o, const PerSide<std::string>& labels) {
  if (o == nullptr) return "no,,,,";
  return fmt::format("yes,{},{},{},{}", CsvField(labels[o->fused_by]), CsvNumber(o->ratio),
                     o->groups_affected, o->total_groups);
}

}  // namespace

std::string FusionCsv(const FusionReport& report, const CompareContext& context) {
  if (context.csv_table == "fusion_differences" && context.ops != nullptr) {
    return FusionDifferencesCsv(context.ops->fusion_differences);
  }
  if (context.csv_table == "idle") return IdleCsv(context.traces, context.labels);
  if (context.csv_table == "launches") return LaunchesCsv(context.traces, context.labels);
  std::string out = kHeader;
  for (const FusionTypeRow& row : FusionTypeRows(report, context)) {
    out +=
        fmt::format("{},{},{},{},{},{},{},{}\n", CsvField(row.name), row.kernels[Side::kTrace1],
                    row.kernels[Side::kTrace2], CsvNumber(Millis(row.time_ns[Side::kTrace1])),
                    CsvNumber(Millis(row.time_ns[Side::kTrace2])), CsvNumber(row.count_ratio),
                    CsvNumber(row.time_ratio), OpportunityColumns(row.opportunity, context.labels));
  }
  return out;
}

}  // namespace tracefuse
