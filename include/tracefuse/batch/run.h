// Library tracefuse_batch: `tracefuse batch`, the comparisons of a manifest's rows (manifest.h),
// one pair after another, each writing its reports and a status file into an output directory.
//
// Per pair, DIR holds `<label>.json` (exactly what `compare --format json` writes with the same
// options), one more report per other requested format (`<label>.md`, `.txt`, `.csv`) and
// `<label>.status.json`. Every file is written atomically (temporary file, then rename); a pair
// that runs first removes its earlier reports, so the directory never mixes two runs of a pair.
//
// The status file, written when the pair starts (state "running") and again when it ends, even
// after SIGTERM / SIGINT; its keys, in this order:
//   label              string   the manifest's label
//   state              string   "running", "complete", "failed" or "interrupted"
//   exit_code          int      what `compare` would exit with (exit_code.h); null while running
//   error              string   the one-line error (without "tracefuse: error: "), else null
//   trace1, trace2     string   the traces as opened (relative to the manifest's directory)
//   manifest           string   the manifest's path as given
//   task               int      the row's index among the manifest's rows, from 0
//   reports            [string] the file names of the reports written, in DIR
//   elapsed_seconds    number   since the pair started
//   peak_rss_bytes     int      the process's peak resident memory so far (getrusage ru_maxrss)
//   bytes_read         int      both traces' uncompressed bytes; 0 when it failed before
//   host               string   gethostname()
//   slurm              object   {"job_id", "array_job_id", "array_task_id"}: the strings of
//                               $SLURM_JOB_ID, $SLURM_ARRAY_JOB_ID, $SLURM_ARRAY_TASK_ID, or null
//   started_at         string   UTC, ISO 8601 ("2025-01-31T12:34:56Z")
//   tracefuse_version  string
// A pair killed by SIGKILL stays "running" with a null exit_code.
#ifndef TRACEFUSE_BATCH_RUN_H_
#define TRACEFUSE_BATCH_RUN_H_

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/batch/manifest.h"
#include "tracefuse/pipeline.h"

namespace tracefuse {

struct BatchOptions {
  std::string out_dir;
  // Report formats (FusionFormats()); json is always written, first.
  std::vector<std::string> formats = {"json"};
  bool force = false;        // re-run pairs that are complete
  CompareOptions compare;    // the command line's; a row's options override them
  PipelineOptions pipeline;  // threads, --lenient, --max-event-bytes
  std::FILE* log = stderr;   // one progress line per pair
};

// SelectTasks() is the rows a batch runs: every row with `all`, else row `task`, else the row
// that $SLURM_ARRAY_TASK_ID names. A usage error (InvalidArgument) when none is given or the row
// does not exist.
absl::StatusOr<std::vector<size_t>> SelectTasks(const Manifest& manifest, std::optional<int> task,
                                                bool all);

// ApplyRowOptions() applies a row's options column (--ruleset, --min-group-size, --label1,
// --label2; `--name value` or `--name=value`) over `options`. A rule file path is taken from the
// manifest's directory, as trace paths are. Errors name the manifest's line.
absl::Status ApplyRowOptions(const Manifest& manifest, const ManifestRow& row,
                             CompareOptions* options);

// RunBatch() runs the rows `tasks` in order, skipping the pairs already complete unless `force`,
// and returns the batch's exit code: the first non-zero exit code of a pair. A failed pair does
// not stop the others; SIGTERM or SIGINT stops the batch at once (143, 130). An error only when
// the output directory cannot be made.
absl::StatusOr<int> RunBatch(const Manifest& manifest, const std::vector<size_t>& tasks,
                             const BatchOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_RUN_H_
