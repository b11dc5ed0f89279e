// Stage 7: rendering results for people (text, markdown) and programs (JSON, CSV), and writing
// them out atomically.
#ifndef TRACEFUSE_REPORT_H_
#define TRACEFUSE_REPORT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tracefuse/analyze.h"
#include "tracefuse/reduce.h"

namespace tracefuse {

using Json = nlohmann::ordered_json;

// `tracefuse stats`: one trace's shape. `elapsed_seconds` is the command's wall time.
Json StatsJson(const TraceProfile& profile, double elapsed_seconds);
std::string StatsText(const TraceProfile& profile, double elapsed_seconds);

// `tracefuse breakdown`: kernel time per category with the top kernels of each, and the top
// unclassified kernels (the rule set's default category), so a user sees what a rule file
// should add.
std::string BreakdownJson(const TraceProfile& profile, size_t top);
std::string BreakdownText(const TraceProfile& profile, size_t top);
std::string BreakdownCsv(const TraceProfile& profile, size_t top);

// `tracefuse rules`: a rule set as text, one rule per line with its predicate.
std::string RulesText(const RuleSet& rules);

// What a fusion report shows besides the analysis itself.
struct CompareContext {
  std::array<const TraceProfile*, 2> traces{};
  PerSide<std::string> labels;  // names for the two sides in text, markdown and CSV
  uint32_t min_group_size = kDefaultMinGroupSize;
  double read_seconds = 0;     // both traces streamed and reduced (concurrently)
  double analyze_seconds = 0;  // the merge stage
};

// `tracefuse compare`. The JSON keeps the reference's schema and values exactly ("Trace 1" and
// "Trace 2" in platform fields and evidence, infinities as null) and adds one key, "tracefuse".
class OutputFile;
absl::Status WriteFusionJson(const FusionReport& report, const CompareContext& context,
                             OutputFile* out);
std::string FusionText(const FusionReport& report, const CompareContext& context, bool markdown);
std::string FusionCsv(const FusionReport& report, const CompareContext& context);

// Serialises with UTF-8 kept as is (invalid bytes replaced), `indent` < 0 for one line.
std::string DumpJson(const Json& json, int indent = 2);

// An output written through a temporary file in the same directory and renamed into place by
// Commit(), so a failed or killed run never leaves a partial file; dropping it uncommitted
// removes the temporary. "-" is standard output.
class OutputFile {
 public:
  static absl::StatusOr<OutputFile> Open(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();
  absl::Status Append(std::string_view data);
  absl::Status Commit();

 private:
  OutputFile() = default;
  std::string path_;
  std::string tmp_;  // empty for standard output and once committed
  int fd_ = -1;
  bool failed_ = false;
};

// Writes `content` to `path` as one OutputFile.
absl::Status WriteOutput(const std::string& path, std::string_view content);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_H_
