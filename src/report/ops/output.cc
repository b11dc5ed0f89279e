// An ops report in the format asked for, to a file or standard output.
#include <algorithm>

#include "tracefuse/report/ops.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

std::vector<const UnmatchedGroup*> LargestUnmatchedGroups(const OpComparison& ops, size_t top) {
  std::vector<const UnmatchedGroup*> groups;
  for (const UnmatchedGroup& g : ops.unmatched_groups) groups.push_back(&g);
  auto time = [](const UnmatchedGroup* g) {
    return g->sides[Side::kTrace1].time_ns + g->sides[Side::kTrace2].time_ns;
  };
  std::stable_sort(
      groups.begin(), groups.end(),
      [&](const UnmatchedGroup* x, const UnmatchedGroup* y) { return time(x) > time(y); });
  if (groups.size() > top) groups.resize(top);
  return groups;
}

const std::vector<std::string>& OpsFormats() {
  static const std::vector<std::string> formats = {"text",     "json", "csv",
                                                   "markdown", "html", "perfetto"};
  return formats;
}

absl::Status WriteOpsReport(const OpComparison& ops, const OpsContext& context,
                            const std::string& format, const std::string& path) {
  if (format == "json") {
    return WriteStreamedOutput(path,
                               [&](OutputFile* out) { return WriteOpsJson(ops, context, out); });
  }
  if (format == "html") return WriteOutput(path, OpsHtml(ops, context));
  if (format == "perfetto") {
    return WriteOpsPerfetto(ops,
                            PerfettoInput{context.traces, context.trees, context.labels,
                                          context.align, context.threads},
                            path);
  }
  const std::string out =
      format == "csv" ? OpsCsv(ops, context) : OpsText(ops, context, format == "markdown");
  return WriteOutput(path, out);
}

}  // namespace tracefuse
