#include "tracefuse/batch/compare.h"

#include "tracefuse/exit_code.h"

namespace tracefuse {
namespace {

PerSide<std::string> DefaultLabels(const TraceProfile& a, const TraceProfile& b) {
  if (a.platform != b.platform && a.platform != Platform::kUnknown &&
      b.platform != Platform::kUnknown) {
    return {{std::string(PlatformName(a.platform)), std::string(PlatformName(b.platform))}};
  }
  return ReferenceLabels();
}

}  // namespace

absl::StatusOr<Comparison> RunComparison(const std::string& trace1, const std::string& trace2,
                                         const CompareOptions& options,
                                         const PipelineOptions& pipeline, int* exit_code) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(options.ruleset);
  if (!classifier.ok()) {
    *exit_code = ExitCodeFor(classifier.status(), kExitUsage);
    return classifier.status();
  }
  FusionOptions fusion;
  fusion.min_group_size = options.min_group_size;
  absl::StatusOr<Comparison> comparison =
      CompareTraces(trace1, trace2, *classifier, pipeline, fusion);
  *exit_code = ExitCodeFor(comparison.status());
  return comparison;
}

CompareContext ComparisonContext(const Comparison& comparison, const CompareOptions& options) {
  const PerSide<TraceProfile>& traces = comparison.traces;
  CompareContext context;
  context.read_seconds = comparison.read_seconds;
  context.analyze_seconds = comparison.analyze_seconds;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels = DefaultLabels(traces[Side::kTrace1], traces[Side::kTrace2]);
  if (!options.label1.empty()) context.labels[Side::kTrace1] = options.label1;
  if (!options.label2.empty()) context.labels[Side::kTrace2] = options.label2;
  context.min_group_size = options.min_group_size;
  return context;
}

absl::Status WriteComparison(const Comparison& comparison, const CompareOptions& options,
                             const std::string& format, const std::string& path, int* exit_code) {
  absl::Status written =
      WriteFusionReport(comparison.report, ComparisonContext(comparison, options), format, path);
  *exit_code = ExitCodeFor(written, kExitIo);
  return written;
}

}  // namespace tracefuse
