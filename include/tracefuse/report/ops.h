// Stage 7, report: `tracefuse ops`, the op-level comparison of two traces for people (text,
// markdown, HTML) and programs (JSON, CSV). The JSON schema is in docs/reports.md,
// "ops: which operator is slower?".
#ifndef TRACEFUSE_REPORT_OPS_H_
#define TRACEFUSE_REPORT_OPS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/reduce/trace_profile.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/perfetto.h"

namespace tracefuse {

// OpsContext is what an ops report shows besides the comparison: the traces, their labels, how
// many rows the people-facing formats list, and the timings.
struct OpsContext {
  PerSide<const TraceProfile*> traces{};
  PerSide<std::string> labels;
  // perfetto: the traces' op trees (read with PipelineOptions::keep_placement) and the alignment.
  PerSide<const OpTree*> trees{};
  PerfettoAlign align = PerfettoAlign::kSteps;
  int threads = 1;
  size_t top = 20;                // rows per table in text, markdown and HTML
  std::string csv_table = "ops";  // OpsCsvTables()
  bool full_names = false;        // text, markdown: each kernel family by its example's full name
  double read_seconds = 0;
  double analyze_seconds = 0;
};

// WriteOpsJson() streams the whole comparison (every row and group; the top instances) to `out`,
// schema "tracefuse.ops/1", as Python's json.dumps(indent=2) would write it.
absl::Status WriteOpsJson(const OpComparison& ops, const OpsContext& context, OutputFile* out);
// OpsJson() is WriteOpsJson()'s document as a string (what the Python module parses).
std::string OpsJson(const OpComparison& ops, const OpsContext& context);

// OpsText() is the report for people: the traces and how much of their kernel time is linked to
// an op, the ops that differ most, the instances that differ most with their kernels, the ops
// found on one side only and the largest unmatched stretches. `markdown`: the same as Markdown.
std::string OpsText(const OpComparison& ops, const OpsContext& context, bool markdown);

// OpsHtml() is the report as one self-contained page (no script, nothing fetched): the text
// report's sections, the ops as bars on one scale, and each fusion difference's example instance
// with both sides' kernels aligned as `compare --format html` aligns matched groups.
std::string OpsHtml(const OpComparison& ops, const OpsContext& context);

// OpsCsv() has one row per (op, scope, matched) with both sides' instances, times and kernels;
// with `csv_table` fusion_differences, one row per fusion difference instead.
std::string OpsCsv(const OpComparison& ops, const OpsContext& context);

// OpsCsvTables() are the tables `--format csv` can write: ops, fusion_differences, idle
// (IdleCsv()), launches (LaunchesCsv()).
const std::vector<std::string>& OpsCsvTables();

// LargestUnmatchedGroups() are the first `top` unmatched stretches by both sides' kernel time
// (stable: step order breaks ties), as the people-facing formats list them.
std::vector<const UnmatchedGroup*> LargestUnmatchedGroups(const OpComparison& ops, size_t top);

// OpsFormats() are text, json, csv, markdown, html and perfetto (WriteOpsPerfetto()).
const std::vector<std::string>& OpsFormats();

// WriteOpsReport() writes the report in `format` to `path` ("-": standard output) through an
// OutputFile.
absl::Status WriteOpsReport(const OpComparison& ops, const OpsContext& context,
                            const std::string& format, const std::string& path);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_OPS_H_
