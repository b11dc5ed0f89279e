// A fusion report in the format asked for, to a file or standard output.
#include "tracefuse/report/fusion.h"

namespace tracefuse {

const std::vector<std::string>& FusionFormats() {
  static const std::vector<std::string> formats = {"text", "json", "csv", "markdown", "html"};
  return formats;
}

const std::vector<std::string>& FusionCsvTables() {
  static const std::vector<std::string> tables = {"types", "fusion_differences", "idle",
                                                  "launches"};
  return tables;
}

bool HasCpuSide(const TraceProfile& profile) {
  for (const auto& [category, count] : profile.event_categories) {
    if (category == "cpu_op" || category == "Operator") return true;
  }
  return false;
}

std::string FusionFormatExtension(const std::string& format) {
  if (format == "text") return "txt";
  if (format == "markdown") return "md";
  return format;
}

absl::Status WriteFusionReport(const FusionReport& report, const CompareContext& context,
                               const std::string& format, const std::string& path) {
  if (format == "json") {
    return WriteStreamedOutput(
        path, [&](OutputFile* out) { return WriteFusionJson(report, context, out); });
  }
  const std::string out = format == "csv"    ? FusionCsv(report, context)
                          : format == "html" ? FusionHtml(report, context)
                                             : FusionText(report, context, format == "markdown");
  return WriteOutput(path, out);
}

}  // namespace tracefuse
