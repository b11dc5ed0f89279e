// An ops report in the format asked for, to a file or standard output.
#include "tracefuse/report/ops.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

const std::vector<std::string>& OpsFormats() {
  static const std::vector<std::string> formats = {"text", "json", "csv", "markdown"};
  return formats;
}

absl::Status WriteOpsReport(const OpComparison& ops, const OpsContext& context,
                            const std::string& format, const std::string& path) {
  if (format == "json") {
    return WriteStreamedOutput(path,
                               [&](OutputFile* out) { return WriteOpsJson(ops, context, out); });
  }
  const std::string out =
      format == "csv" ? OpsCsv(ops, context) : OpsText(ops, context, format == "markdown");
  return WriteOutput(path, out);
}

}  // namespace tracefuse
