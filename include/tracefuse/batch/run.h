// Library tracefuse_batch: `tracefuse batch`, the comparisons of a manifest's rows (manifest.h),
// one pair after another, each writing its reports and a status file into an output directory.
//
// Per pair, DIR holds `<label>.json` (exactly what `compare --format json` writes with the same
// options), one more report per other requested format (`<label>.md`, `.txt`, `.csv`),
// `<label>.status.json` and, for a pair compared --by-op, `<label>.ops.json` (what `tracefuse ops
// --format json` writes with the same rule set and labels; but kernels that no rule names take
// the category of their launching op, as in compare, unless --name-only). Every file is written
// atomically (temporary file, then rename); a pair that runs first removes its earlier reports, so
// the directory never mixes two runs of a pair.
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
//   gpu_timeline       object   {"trace1", "trace2"}: each side's GpuTimelineJson() with its
//                               "collectives" (CollectivesJson(), report/timeline.h); null
//                               until compared
//   host               string   gethostname()
//   pid                int      the process's id: the rows of one array task (--rows-per-task)
//                               run in one process, one after another, and share it
//   slurm              object   {"job_id", "array_job_id", "array_task_id"}: the strings of
//                               $SLURM_JOB_ID, $SLURM_ARRAY_JOB_ID, $SLURM_ARRAY_TASK_ID, or null
//   started_at         string   UTC, ISO 8601 ("2025-01-31T12:34:56Z")
//   tracefuse_version  string
// A pair killed by SIGKILL stays "running" with a null exit_code.
#ifndef TRACEFUSE_BATCH_RUN_H_
#define TRACEFUSE_BATCH_RUN_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/batch/manifest.h"
#include "tracefuse/pipeline/flow_graph.h"

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

// TaskSpec is the value of `batch --task`: an array task's index (`N`), or an inclusive range of
// rows (`FIRST-LAST`, as sbatch's --array writes one).
struct TaskSpec {
  uint32_t first = 0;
  uint32_t last = 0;  // first, for an index
  bool range = false;
};

// ParseTaskSpec() reads `N` or `FIRST-LAST` (decimal, no sign nor spaces, FIRST <= LAST);
// nullopt when `text` is neither.
std::optional<TaskSpec> ParseTaskSpec(std::string_view text);

// TaskSelection is what picks a batch's rows.
struct TaskSelection {
  bool all = false;              // every row
  std::optional<TaskSpec> task;  // else --task; without it, $SLURM_ARRAY_TASK_ID's index
  // Array task i runs rows [i * rows_per_task, min((i + 1) * rows_per_task, rows)): an array of
  // ceil(rows / rows_per_task) tasks covers the manifest. Not with a range (a usage error).
  uint32_t rows_per_task = 1;
};

// SelectTasks() is the rows a batch runs, in order: every row with `all`, else those of the
// range, or of the array task, that `task` or $SLURM_ARRAY_TASK_ID names. A usage error
// (InvalidArgument) when none is given, when a range comes with rows_per_task above 1, or when the
// task's first row (a range's last) is past the manifest's rows.
absl::StatusOr<std::vector<size_t>> SelectTasks(const Manifest& manifest,
                                                const TaskSelection& selection);

// ApplyRowOptions() applies a row's options column (--ruleset, --min-group-size, --label1,
// --label2: `--name value` or `--name=value`; --by-op) over `options`. A rule file path is taken
// from the manifest's directory, as trace paths are. Errors name the manifest's line.
absl::Status ApplyRowOptions(const Manifest& manifest, const ManifestRow& row,
                             CompareOptions* options);

// RunBatch() runs the rows `tasks` in order, in this process, skipping the pairs already complete
// unless `force`, and returns the batch's exit code: the first non-zero exit code of a pair. Each
// rule set is loaded once, for the first pair that uses it (ClassifierCache). A failed pair does
// not stop the others; SIGTERM or SIGINT stops the batch at once (143, 130): the running pair's
// status says "interrupted", and the rows after it are left without a status. An error only when
// the output directory cannot be made.
absl::StatusOr<int> RunBatch(const Manifest& manifest, const std::vector<size_t>& tasks,
                             const BatchOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_RUN_H_
