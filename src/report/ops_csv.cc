// `tracefuse ops --format csv`: one row per (op, scope, matched), for spreadsheets.
#include "report/formatting.h"
#include "report/fusion_differences.h"
#include "tracefuse/report/ops.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

// KernelsCell() lists kernel families as "family x count" joined by "; ".
std::string KernelsCell(const std::vector<OpKernels>& kernels) {
  std::string cell;
  for (const OpKernels& k : kernels) {
    if (!cell.empty()) cell += "; ";
    cell += StrCat(k.family, " x", k.count);
  }
  return CsvField(cell);
}

}  // namespace

const std::vector<std::string>& OpsCsvTables() {
  static const std::vector<std::string> tables = {"ops", "fusion_differences"};
  return tables;
}

std::string OpsCsv(const OpComparison& ops, const OpsContext& context) {
  if (context.csv_table == "fusion_differences") {
    return FusionDifferencesCsv(ops.fusion_differences);
  }
  std::string out =
      "op,scope,matched,instances,trace1_instances,trace1_time_us,trace2_instances,"
      "trace2_time_us,delta_us,ratio,trace1_kernels,trace2_kernels\n";
  for (const OpRow& row : ops.ops) {
    const OpSide& a = row.sides[Side::kTrace1];
    const OpSide& b = row.sides[Side::kTrace2];
    const std::optional<double> r = TimeRatio(row.sides);
    const std::string ratio = r ? CsvNumber(*r) : "";
    out +=
        StrCat(CsvField(row.op), ",", CsvField(row.scope), ",", row.matched ? "true" : "false", ",",
               row.instances, ",", a.instances, ",", CsvNumber(Micros(a.time_ns)), ",", b.instances,
               ",", CsvNumber(Micros(b.time_ns)), ",", CsvNumber(Micros(row.delta_ns())), ",",
               ratio, ",", KernelsCell(a.kernels), ",", KernelsCell(b.kernels), "\n");
  }
  return out;
}

}  // namespace tracefuse
