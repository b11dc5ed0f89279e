// `tracefuse ops --format csv`: one row per (op, scope, matched), for spreadsheets.
#include "report/common/formatting.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/ops.h"

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

template <typename T>
std::string OptionalCell(const std::optional<T>& value) {
  if (!value) return "";
  if constexpr (std::is_floating_point_v<T>) {
    return CsvNumber(*value);
  } else {
    return StrCat(*value);
  }
}

// WorkCells() are a side's flops, bytes, dtype, TFLOP/s, TB/s, percent of peak, its roof and
// the bound.
std::string WorkCells(const OpRow& row, Side side, const std::optional<GpuPeak>& peak) {
  const WorkTotals& work = row.work[side];
  const Achieved a = AchievedOf(work, row.sides[side].time_ns, peak ? &*peak : nullptr);
  const DType dtype = work.dtype();
  return StrCat(OptionalCell(work.flops), ",", OptionalCell(work.bytes), ",",
                dtype == DType::kUnknown ? "" : DTypeName(dtype), ",", OptionalCell(a.tflops_per_s),
                ",", OptionalCell(a.tb_per_s), ",", OptionalCell(a.percent_of_peak), ",",
                a.roof ? CsvField(RoofText(*a.roof, dtype)) : "", ",",
                a.bound ? BoundName(*a.bound) : "");
}

}  // namespace

const std::vector<std::string>& OpsCsvTables() {
  static const std::vector<std::string> tables = {"ops", "fusion_differences", "idle", "launches"};
  return tables;
}

std::string OpsCsv(const OpComparison& ops, const OpsContext& context) {
  if (context.csv_table == "fusion_differences") {
    return FusionDifferencesCsv(ops.fusion_differences);
  }
  if (context.csv_table == "idle") return IdleCsv(context.traces, context.labels);
  if (context.csv_table == "launches") return LaunchesCsv(context.traces, context.labels);
  std::string out =
      "op,scope,matched,instances,trace1_instances,trace1_time_us,trace2_instances,"
      "trace2_time_us,delta_us,ratio,trace1_kernels,trace2_kernels";
  for (const char* side : {"trace1", "trace2"}) {
    for (const char* column : {"flops", "bytes", "dtype", "tflops_per_s", "tb_per_s",
                               "percent_of_peak", "roof", "bound"}) {
      out += StrCat(",", side, "_", column);
    }
  }
  out += "\n";
  for (const OpRow& row : ops.ops) {
    const OpSide& a = row.sides[Side::kTrace1];
    const OpSide& b = row.sides[Side::kTrace2];
    const std::optional<double> r = TimeRatio(row.sides);
    const std::string ratio = r ? CsvNumber(*r) : "";
    out +=
        StrCat(CsvField(row.op), ",", CsvField(row.scope), ",", row.matched ? "true" : "false", ",",
               row.instances, ",", a.instances, ",", CsvNumber(Micros(a.time_ns)), ",", b.instances,
               ",", CsvNumber(Micros(b.time_ns)), ",", CsvNumber(Micros(row.delta_ns())), ",",
               ratio, ",", KernelsCell(a.kernels), ",", KernelsCell(b.kernels), ",",
               WorkCells(row, Side::kTrace1, ops.traces[Side::kTrace1].peak), ",",
               WorkCells(row, Side::kTrace2, ops.traces[Side::kTrace2].peak), "\n");
  }
  return out;
}

}  // namespace tracefuse
