// `tracefuse merge --format csv`: one table (MergeCsvTables()): one row per pair, every pair;
// one row per fusion difference or per op across the pairs compared --by-op.
#include <map>
#include <optional>
#include <string>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/merge/format.h"
#include "tracefuse/report/merge.h"

namespace tracefuse {
namespace {

constexpr char kHeader[] =
    "label,state,exit_code,error,task,trace1,trace2,trace1_platform,trace2_platform,trace1_gpu,"
    "trace2_gpu,trace1_kernels,trace2_kernels,trace1_kernel_time_us,trace2_kernel_time_us,"
    "kernel_time_ratio,matched_groups,rule_set,elapsed_seconds,peak_rss_bytes,host,"
    "trace1_computation_us,trace2_computation_us,trace1_exposed_communication_us,"
    "trace2_exposed_communication_us,trace1_idle_us,trace2_idle_us,trace1_step_us,"
    "trace2_step_us,trace1_wait_us,trace2_wait_us,trace1_cpu_wait_us,trace2_cpu_wait_us,"
    "trace1_launch_latency_us,trace2_launch_latency_us,trace1_unattributed_us,"
    "trace2_unattributed_us,trace1_linked_kernel_share,trace2_linked_kernel_share,"
    "fusion_differences";

template <typename T>
std::string Optional(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : "";
}

// The columns that come from the pair's report: empty where it has none.
std::string ReportColumns(const MergedPair& p) {
  const MergedTrace& a = p.traces[Side::kTrace1];
  const MergedTrace& b = p.traces[Side::kTrace2];
  if (!p.has_report) return ",,,,,,,,,,";
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{}", CsvField(a.platform), CsvField(b.platform),
                     CsvField(a.gpu), CsvField(b.gpu), a.kernels, b.kernels,
                     CsvNumber(a.kernel_time_us), CsvNumber(b.kernel_time_us),
                     CsvNumber(p.KernelTimeRatio()), p.matched_groups, CsvField(p.rule_set));
}

// The columns of the pair's GPU timelines (empty where its status file records none) and its
// waits among the ranks of its side (empty where it is not one of them).
using WaitsByPair = PerSide<std::map<std::string, double>>;

std::string TimelineColumns(const WaitsByPair& waits, const MergedPair& p) {
  PerSide<std::string> computation, exposed, idle, step, wait, cpu_wait, latency, unattributed;
  for (Side s : kSides) {
    const std::optional<RankTimeline>& t = p.traces[s].timeline;
    if (!t) continue;
    computation[s] = CsvNumber(SummedMicros(t->figures.computation_us));
    exposed[s] = CsvNumber(SummedMicros(t->figures.exposed_communication_us));
    idle[s] = CsvNumber(SummedMicros(t->figures.idle_us));
    if (t->figures.step_us) step[s] = CsvNumber(SummedMicros(*t->figures.step_us));
    if (const std::optional<RankIdle>& split = t->figures.idle) {
      cpu_wait[s] = CsvNumber(SummedMicros(split->cpu_wait_us));
      latency[s] = CsvNumber(SummedMicros(split->launch_latency_us));
      unattributed[s] = CsvNumber(SummedMicros(split->unattributed_us));
    }
    const std::map<std::string, double>& side = waits[p.sides_swapped ? Opposite(s) : s];
    if (auto it = side.find(p.label); it != side.end())
      wait[s] = CsvNumber(SummedMicros(it->second));
  }
  std::string out;
  for (const PerSide<std::string>* column :
       {&computation, &exposed, &idle, &step, &wait, &cpu_wait, &latency, &unattributed}) {
    out += StrCat(",", (*column)[Side::kTrace1], ",", (*column)[Side::kTrace2]);
  }
  return out;
}

// The columns of the pair's op comparison (batch --by-op): empty without one.
std::string OpsColumns(const MergedPair& p) {
  if (!p.ops) return ",,,";
  return fmt::format(",{},{},{}", CsvNumber(p.ops->LinkedShare(Side::kTrace1)),
                     CsvNumber(p.ops->LinkedShare(Side::kTrace2)),
                     p.ops->fusion_differences.size());
}

// The top opportunities' columns, empty past the pair's last one.
std::string OpportunityColumns(const MergedPair& p, size_t top) {
  std::string out;
  for (size_t i = 0; i < top; ++i) {
    if (i >= p.opportunities.size()) {
      out += ",,,";
      continue;
    }
    const MergedOpportunity& o = p.opportunities[i];
    out += fmt::format(",{},{},{}", CsvField(o.kernel_type), CsvField(p.traces[o.fused_by].label),
                       CsvNumber(o.ratio));
  }
  return out;
}

std::string PairsCsv(const MergeSummary& summary) {
  std::string out = kHeader;
  for (size_t i = 1; i <= summary.top; ++i) {
    out += fmt::format(",top{0}_kernel_type,top{0}_fused_by,top{0}_ratio", i);
  }
  out += "\n";
  WaitsByPair waits;
  for (Side s : kSides) {
    for (const RankWait& r : summary.ranks[s].ranks) waits[s][r.pair] = r.wait_us;
  }
  for (const MergedPair& p : summary.pairs) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{}{}{}{}\n", CsvField(p.label), PairStateName(p.state),
        Optional(p.exit_code), CsvField(p.error), Optional(p.task),
        CsvField(p.traces[Side::kTrace1].path), CsvField(p.traces[Side::kTrace2].path),
        ReportColumns(p), Optional(p.elapsed_seconds), Optional(p.peak_rss_bytes), CsvField(p.host),
        TimelineColumns(waits, p), OpsColumns(p), OpportunityColumns(p, summary.top));
  }
  return out;
}

std::string FusionDifferencesCsv(const MergeSummary& s) {
  std::string out =
      "kind,scope,op,relation,fused_by,fused_kernel,extra_kernels,instances,extra_time_us,"
      "saving_us,side1_time_us,side2_time_us,pairs,pair_labels\n";
  for (const OpFusionDifference& d : s.fusion_differences) {
    std::string extra, labels;
    for (const auto& [name, count] : d.extra_kernels) {
      extra += StrCat(extra.empty() ? "" : " ", name, " x", count);
    }
    for (const std::string& label : d.pairs) labels += StrCat(labels.empty() ? "" : " ", label);
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(d.kind), CsvField(d.scope),
        CsvField(d.op), CsvField(d.relation), CsvField(d.fused_by ? s.side_names[*d.fused_by] : ""),
        CsvField(d.fused_kernel), CsvField(extra), d.instances,
        CsvNumber(SummedMicros(d.extra_time_us)), CsvNumber(SummedMicros(d.saving_us)),
        CsvNumber(SummedMicros(d.time_us[Side::kTrace1])),
        CsvNumber(SummedMicros(d.time_us[Side::kTrace2])), d.pairs.size(), CsvField(labels));
  }
  return out;
}

std::string OpsCsv(const MergeSummary& s) {
  std::string out = "op,scope,pairs,instances,side1_time_us,side2_time_us,delta_us\n";
  for (const OpTimes& o : s.ops) {
    out += fmt::format("{},{},{},{},{},{},{}\n", CsvField(o.op), CsvField(o.scope), o.pairs,
                       o.instances, CsvNumber(SummedMicros(o.time_us[Side::kTrace1])),
                       CsvNumber(SummedMicros(o.time_us[Side::kTrace2])),
                       CsvNumber(SummedMicros(o.DeltaUs())));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& MergeCsvTables() {
  static const std::vector<std::string> tables = {"pairs", "fusion_differences", "ops"};
  return tables;
}

std::string MergeCsv(const MergeSummary& summary, const std::string& table) {
  if (table == "fusion_differences") return FusionDifferencesCsv(summary);
  if (table == "ops") return OpsCsv(summary);
  return PairsCsv(summary);
}

}  // namespace tracefuse
