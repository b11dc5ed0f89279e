// Stage 7, report: `tracefuse compare`, the fusion comparison of two traces for people (text,
// markdown) and programs (JSON, CSV).
#ifndef TRACEFUSE_REPORT_FUSION_H_
#define TRACEFUSE_REPORT_FUSION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/reduce/trace_profile.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

// CompareContext is what a fusion report shows besides the analysis itself: the traces it was
// made from and how the user named them.
struct CompareContext {
  PerSide<const TraceProfile*> traces{};
  PerSide<std::string> labels;  // names for the two sides in text, markdown and CSV
  uint32_t min_group_size = kDefaultMinGroupSize;
  // `--by-op`: the op-level comparison, whose fusion differences every format adds; null
  // without.
  const OpComparison* ops = nullptr;
  std::string csv_table = "types";  // types, or fusion_differences (with `ops`)
  bool full_names = false;     // text, markdown: fusion differences' kernels by their full names
  double read_seconds = 0;     // both traces streamed and reduced (concurrently)
  double analyze_seconds = 0;  // the merge stage
};

// WriteFusionJson() streams the report to `out` in the reference's schema, byte for byte as
// Python's json.dumps(indent=2) writes it: its values exactly, "Trace 1" and "Trace 2" in
// platform fields and evidence whatever the labels, infinities as null. It adds one key,
// "tracefuse", with what the reference does not report (labels, paths, timings).
// `infinity` says how infinite ratios are written (null by default, as the reference does).
absl::Status WriteFusionJson(const FusionReport& report, const CompareContext& context,
                             OutputFile* out, JsonInfinity infinity = JsonInfinity::kNull);

// FusionJson() is WriteFusionJson()'s document as a string (what the Python module parses).
std::string FusionJson(const FusionReport& report, const CompareContext& context,
                       JsonInfinity infinity);

// FusionText() is the report for people: the traces, kernel types side by side, the top fusion
// opportunities and the fusion mappings with equal evidence folded together. `markdown` gives
// the same layout as a Markdown document (tables, headings, lists).
std::string FusionText(const FusionReport& report, const CompareContext& context, bool markdown);

// FusionCsv() has one row per kernel type with both sides' counts and times, their ratios and
// the type's fusion opportunity, if any, for spreadsheets; with `csv_table` fusion_differences,
// one row per fusion difference instead.
std::string FusionCsv(const FusionReport& report, const CompareContext& context);

// FusionHtml() is the report as one self-contained HTML page (no script, no request): both
// traces, kernel time per category as paired bars, the opportunities by impact, the folded
// mappings, for the top mappings one matched group of each side aligned like a diff, and each
// category's top kernels. Every list is capped, so the page stays small for any pair.
std::string FusionHtml(const FusionReport& report, const CompareContext& context);

// FusionCsvTables() are the tables `--format csv` can write: types, fusion_differences, idle
// (IdleCsv()), launches (LaunchesCsv()).
const std::vector<std::string>& FusionCsvTables();

// HasCpuSide() says whether a trace recorded CPU operators (cpu_op events), which `--by-op` and
// `ops` align.
bool HasCpuSide(const TraceProfile& profile);

// FusionFormats() are the formats of a fusion report: text, json, csv, markdown, html.
const std::vector<std::string>& FusionFormats();

// FusionFormatExtension() is the file extension of a format of FusionFormats(): txt, json, csv,
// md, html.
std::string FusionFormatExtension(const std::string& format);

// WriteFusionReport() writes the report in `format` (one of FusionFormats()) to `path` ("-" for
// standard output) through an OutputFile: `tracefuse compare --format FORMAT -o PATH`.
absl::Status WriteFusionReport(const FusionReport& report, const CompareContext& context,
                               const std::string& format, const std::string& path);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_FUSION_H_
