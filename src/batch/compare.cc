#include "tracefuse/batch/compare.h"

#include "tracefuse/base/exit_code.h"

namespace tracefuse {
PerSide<std::string> ComparisonLabels(const TraceProfile& trace1, const TraceProfile& trace2,
                                      const std::string& label1, const std::string& label2) {
  PerSide<std::string> labels = ReferenceLabels();
  if (trace1.platform != trace2.platform && trace1.platform != Platform::kUnknown &&
      trace2.platform != Platform::kUnknown) {
    labels = {
        {std::string(PlatformName(trace1.platform)), std::string(PlatformName(trace2.platform))}};
  }
  if (!label1.empty()) labels[Side::kTrace1] = label1;
  if (!label2.empty()) labels[Side::kTrace2] = label2;
  return labels;
}

absl::StatusOr<std::shared_ptr<const Classifier>> ClassifierCache::Get(const std::string& ruleset) {
  auto it = loaded_.find(ruleset);
  if (it != loaded_.end()) return it->second;
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(ruleset);
  if (!classifier.ok()) return classifier;
  return loaded_.emplace(ruleset, *std::move(classifier)).first->second;
}

absl::StatusOr<Comparison> RunComparison(const std::string& trace1, const std::string& trace2,
                                         const CompareOptions& options,
                                         const PipelineOptions& pipeline, int* exit_code,
                                         ClassifierCache* classifiers) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier =
      classifiers != nullptr ? classifiers->Get(options.ruleset) : LoadClassifier(options.ruleset);
  if (!classifier.ok()) {
    *exit_code = ExitCodeFor(classifier.status(), kExitUsage);
    return classifier.status();
  }
  FusionOptions fusion;
  fusion.min_group_size = options.min_group_size;
  OpCompareOptions by_op;
  by_op.keep_partners = pipeline.keep_placement;
  absl::StatusOr<Comparison> comparison = CompareTraces(trace1, trace2, *classifier, pipeline,
                                                        fusion, options.by_op ? &by_op : nullptr);
  *exit_code = ExitCodeFor(comparison.status());
  return comparison;
}

std::string ReadErrorMessage(const absl::Status& status) {
  std::string message(status.message());
  if (IsTruncatedInput(status)) message += " (--lenient reads the events before the cut)";
  return message;
}

CompareContext ComparisonContext(const Comparison& comparison, const CompareOptions& options) {
  const PerSide<TraceProfile>& traces = comparison.traces;
  CompareContext context;
  context.read_seconds = comparison.read_seconds;
  context.analyze_seconds = comparison.analyze_seconds;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels = ComparisonLabels(traces[Side::kTrace1], traces[Side::kTrace2], options.label1,
                                    options.label2);
  context.min_group_size = options.min_group_size;
  if (comparison.ops) context.ops = &*comparison.ops;
  context.csv_table = options.csv_table;
  context.full_names = options.full_names;
  return context;
}

absl::Status WriteOpComparison(const Comparison& comparison, const CompareOptions& options,
                               const std::string& path, int* exit_code) {
  OpsContext context;
  const PerSide<TraceProfile>& traces = comparison.traces;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels = ComparisonLabels(traces[Side::kTrace1], traces[Side::kTrace2], options.label1,
                                    options.label2);
  context.read_seconds = comparison.read_seconds;
  context.analyze_seconds = comparison.analyze_seconds;
  absl::Status written = WriteOpsReport(*comparison.ops, context, "json", path);
  *exit_code = ExitCodeFor(written, kExitIo);
  return written;
}

const std::vector<std::string>& CompareFormats() {
  static const std::vector<std::string> formats = [] {
    std::vector<std::string> all = FusionFormats();
    all.push_back("perfetto");
    return all;
  }();
  return formats;
}

absl::Status WriteComparison(const Comparison& comparison, const CompareOptions& options,
                             const std::string& format, const std::string& path, int* exit_code) {
  absl::Status written;
  if (format == "perfetto" && comparison.ops) {
    const PerSide<TraceProfile>& traces = comparison.traces;
    PerfettoInput input;
    input.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
    input.trees = {{&comparison.trees[Side::kTrace1], &comparison.trees[Side::kTrace2]}};
    input.labels = ComparisonLabels(traces[Side::kTrace1], traces[Side::kTrace2], options.label1,
                                    options.label2);
    input.align = PerfettoAlignNamed(options.align);
    input.threads = options.threads > 0 ? options.threads : DefaultThreadCount();
    written = WriteOpsPerfetto(*comparison.ops, input, path);
  } else {
    written =
        WriteFusionReport(comparison.report, ComparisonContext(comparison, options), format, path);
  }
  *exit_code = ExitCodeFor(written, kExitIo);
  return written;
}

}  // namespace tracefuse
