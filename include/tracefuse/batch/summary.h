// Library tracefuse_batch: `tracefuse merge`, reading what `tracefuse batch` left in its output
// directory into one summary (tracefuse/report/merge.h lays it out).
//
// For each manifest row with label L the directory holds `L.status.json` and, once the pair is
// complete, `L.json` (compare's JSON report). A status file is
//   {"label", "state": "running"|"complete"|"failed"|"interrupted", "exit_code": int|null,
//    "error": string|null, "trace1", "trace2", "manifest", "task": int, "reports": [string],
//    "elapsed_seconds", "peak_rss_bytes", "bytes_read", "host", "slurm": {...}, "started_at",
//    "tracefuse_version", "gpu_timeline"}
// of which the summary keeps state, exit code, error, traces, manifest, task, elapsed seconds,
// peak RSS, host, start time and each side's GPU timeline (its devices' figures summed, its
// collectives by name). A report is read with simdjson On-Demand after its
// "fusion_mappings" value (up to 100,000 entries, 80 MB) has been skipped while streaming the
// file in 1 MiB pieces, so reading a report costs memory for its other keys only.
#ifndef TRACEFUSE_BATCH_SUMMARY_H_
#define TRACEFUSE_BATCH_SUMMARY_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tracefuse/report/merge.h"

namespace tracefuse {

// kOpsReportSuffix ends the name of a pair's op comparison, `<label>.ops.json` (`batch --by-op`).
inline constexpr std::string_view kOpsReportSuffix = ".ops.json";

// RecordedStatus is what the summary keeps of a status file (`batch` writes them).
struct RecordedStatus {
  PairState state = PairState::kFailed;
  std::optional<int64_t> exit_code;
  std::string error, trace1, trace2, manifest, host, started_at;  // empty for null or absent
  std::optional<int64_t> task;
  std::optional<double> elapsed_seconds;
  std::optional<uint64_t> peak_rss_bytes;
  PerSide<std::optional<RankTimeline>> timelines;  // "gpu_timeline"'s "trace1" and "trace2"
};

// ReadPairStatus() reads a status file. Errors (InvalidArgument for malformed JSON, a state that
// is not one of the four, a field of the wrong type; NotFound and the like for I/O) name the
// file.
absl::StatusOr<RecordedStatus> ReadPairStatus(const std::string& path);

// ReadPairReport() reads a compare JSON report into `pair` (has_report, rule set, matched
// groups, every opportunity, each side's label, platform, GPU, kernels and kernel time per
// category; a side's path only where `pair` has none yet). Errors name the file.
absl::Status ReadPairReport(const std::string& path, MergedPair* pair);

// ReadPairOps() reads a pair's op comparison (`tracefuse ops --format json`: each side's kernel
// time and the time linked to ops, the matched ops and the fusion differences). Errors name the
// file.
absl::StatusOr<MergedOps> ReadPairOps(const std::string& path);

// ReadJsonWithoutKey() is the JSON file at `path` with the value of its top-level key
// `dropped` replaced by null, read in pieces: the dropped value is never held in memory.
absl::StatusOr<std::string> ReadJsonWithoutKey(const std::string& path, std::string_view dropped);

struct SummaryOptions {
  std::string manifest;               // --manifest; empty: the manifest the status files record
  size_t top = 3;                     // opportunities listed per pair
  double straggler_threshold = 0.10;  // --straggler-threshold (AnalyzeRanks())
  // Called once per status or report file that cannot be read (its pair is counted failed),
  // with a one-line message naming the file.
  std::function<void(const std::string& message)> on_bad_file;
};

// SummarizeBatch() reads every `*.status.json` of `dir` (a pair's label is its file's name), the
// report of each complete pair and the manifest (options.manifest, else the first status file by
// name that records one; relative paths from the working directory), and computes the summary.
// A manifest that cannot be read is recorded in the summary, not an error; a missing or
// unreadable directory is (NotFound, FailedPrecondition...), and so is SIGTERM or SIGINT while
// reading (Cancelled, tracefuse/base/interrupt.h).
absl::StatusOr<MergeSummary> SummarizeBatch(const std::string& dir, const SummaryOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_SUMMARY_H_
