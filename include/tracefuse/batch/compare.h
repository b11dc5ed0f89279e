// Library tracefuse_batch: one comparison as `tracefuse compare` makes it, shared by the
// `compare` command and by batches, so that a batch's reports are byte for byte what `compare`
// writes with the same options.
#ifndef TRACEFUSE_BATCH_COMPARE_H_
#define TRACEFUSE_BATCH_COMPARE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/ops.h"
#include "tracefuse/report/perfetto.h"

namespace tracefuse {

// CompareOptions are compare's options that shape a report.
struct CompareOptions {
  std::string ruleset = "tracefuse";
  uint32_t min_group_size = kDefaultMinGroupSize;
  std::string label1, label2;       // empty: the platform's name (or the reference's "Trace 1/2")
  bool by_op = false;               // also align the operators for their fusion differences
  std::string csv_table = "types";  // FusionCsvTables()
  bool full_names = false;          // CompareContext::full_names
  std::string align = "steps";      // --format perfetto: PerfettoAligns()
  int threads = 0;                  // --format perfetto's writers (0: DefaultThreadCount())
};

// CompareFormats() are the formats `compare` writes: FusionFormats(), and perfetto with --by-op
// (WriteOpsPerfetto()).
const std::vector<std::string>& CompareFormats();

// ComparisonLabels() names the two sides in reports: `label1` and `label2` where given, else the
// platforms' names when they are known and differ, else the reference's "Trace 1" and "Trace 2".
PerSide<std::string> ComparisonLabels(const TraceProfile& trace1, const TraceProfile& trace2,
                                      const std::string& label1, const std::string& label2);

// ClassifierCache holds the rule sets one process has loaded, by name or path, so that a batch
// of many small pairs loads each once (about 1 ms per load, with its Hyperscan database and each
// thread's scratch) rather than once per pair. A rule set that fails to load is not kept.
class ClassifierCache {
 public:
  absl::StatusOr<std::shared_ptr<const Classifier>> Get(const std::string& ruleset);

 private:
  std::map<std::string, std::shared_ptr<const Classifier>> loaded_;
};

// RunComparison() loads the rule set (from `classifiers` when given) and compares the two traces.
// On failure `exit_code` is the exit code it ends `compare` with (exit_code.h): a rule set that
// does not load is a usage error.
absl::StatusOr<Comparison> RunComparison(const std::string& trace1, const std::string& trace2,
                                         const CompareOptions& options,
                                         const PipelineOptions& pipeline, int* exit_code,
                                         ClassifierCache* classifiers = nullptr);

// ReadErrorMessage() is the message of an error met reading traces as `tracefuse` prints it: a
// truncated trace's suggests --lenient, which reads it up to the cut.
std::string ReadErrorMessage(const absl::Status& status);

// ComparisonContext() is what the reports of `comparison` show besides the analysis: its traces,
// their labels, the options and the timings. It points into `comparison`.
CompareContext ComparisonContext(const Comparison& comparison, const CompareOptions& options);

// WriteComparison() writes the comparison's report in `format` to `path` (WriteFusionReport);
// on failure `exit_code` is an I/O error's, or the signal's when interrupted.
absl::Status WriteComparison(const Comparison& comparison, const CompareOptions& options,
                             const std::string& format, const std::string& path, int* exit_code);

// WriteOpComparison() writes the op comparison of a comparison made with `by_op` as `tracefuse
// ops --format json` writes it with the same rule set and labels (its other options at their
// defaults; its kernels classified as the comparison's: by launching op too, unless
// PipelineOptions say name only), to `path`; errors as WriteComparison()'s.
absl::Status WriteOpComparison(const Comparison& comparison, const CompareOptions& options,
                               const std::string& path, int* exit_code);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_COMPARE_H_
