#include "tracefuse/batch/run.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "tracefuse/base/exit_code.h"
#include "tracefuse/base/host.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/batch/summary.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {
namespace {

constexpr char kTaskEnv[] = "SLURM_ARRAY_TASK_ID";

std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Json OptionalJson(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }

uint64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

// ParseNumber() reads a decimal number without sign or spaces.
std::optional<uint32_t> ParseNumber(std::string_view s) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

bool IsBuiltinRuleSet(const std::string& name) {
  const std::vector<std::string> builtin = RuleSet::BuiltinNames();
  return std::find(builtin.begin(), builtin.end(), name) != builtin.end();
}

std::string PathIn(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

std::string ReportName(const std::string& label, const std::string& format) {
  return StrCat(label, ".", FusionFormatExtension(format));
}

std::string StatusName(const std::string& label) { return StrCat(label, ".status.json"); }

// OpsReportName() is where a pair compared --by-op keeps its op comparison.
std::string OpsReportName(const std::string& label) { return StrCat(label, kOpsReportSuffix); }

// json first, then the other formats in the order given, each once.
std::vector<std::string> ReportFormats(const std::vector<std::string>& requested) {
  std::vector<std::string> formats = {"json"};
  for (const std::string& f : requested) {
    if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  }
  return formats;
}

// What the status file says about one pair (run.h documents the schema).
struct PairStatus {
  std::string label;
  PairState state = PairState::kRunning;
  std::optional<int> exit_code;
  absl::Status error;
  std::string trace1, trace2, manifest;
  size_t task = 0;
  std::vector<std::string> reports;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  uint64_t bytes_read = 0;
  // Each side's GPU timeline and collectives, once compared: what `merge` compares across ranks.
  Json gpu_timeline;
  std::string host = HostName();
  int64_t pid = getpid();
  std::string started_at = UtcNow();
};

Json StatusJson(const PairStatus& s) {
  Json j;
  j["label"] = s.label;
  j["state"] = std::string(PairStateName(s.state));
  j["exit_code"] = s.exit_code ? Json(*s.exit_code) : Json(nullptr);
  j["error"] = s.error.ok() ? Json(nullptr) : Json(std::string(s.error.message()));
  j["trace1"] = s.trace1;
  j["trace2"] = s.trace2;
  j["manifest"] = s.manifest;
  j["task"] = s.task;
  j["reports"] = s.reports;
  j["elapsed_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  j["peak_rss_bytes"] = PeakRssBytes();
  j["bytes_read"] = s.bytes_read;
  j["gpu_timeline"] = s.gpu_timeline;
  j["host"] = s.host;
  j["pid"] = s.pid;
  j["slurm"] = Json{{"job_id", OptionalJson(Env("SLURM_JOB_ID"))},
                    {"array_job_id", OptionalJson(Env("SLURM_ARRAY_JOB_ID"))},
                    {"array_task_id", OptionalJson(Env(kTaskEnv))}};
  j["started_at"] = s.started_at;
  j["tracefuse_version"] = TRACEFUSE_VERSION;
  return j;
}

// The status is finished even once SIGTERM has arrived: it records the interruption. It is on the
// disk before the next pair starts, since a later run trusts it to skip the pair.
absl::Status WriteStatus(const std::string& dir, const PairStatus& s) {
  return WriteOutput(PathIn(dir, StatusName(s.label)), DumpJson(StatusJson(s)) + "\n",
                     OutputFile::OnInterrupt::kFinish, OutputFile::Durability::kMachine);
}

// IsComplete() says whether the pair's status says complete and each of its reports exists
// (its op comparison too, `by_op`).
bool IsComplete(const std::string& dir, const std::string& label,
                const std::vector<std::string>& formats, bool by_op) {
  absl::StatusOr<RecordedStatus> status = ReadPairStatus(PathIn(dir, StatusName(label)));
  if (!status.ok() || status->state != PairState::kComplete) return false;
  if (by_op && !std::filesystem::exists(PathIn(dir, OpsReportName(label)))) return false;
  return std::all_of(formats.begin(), formats.end(), [&](const std::string& f) {
    return std::filesystem::exists(PathIn(dir, ReportName(label, f)));
  });
}

void RemoveReports(const std::string& dir, const std::string& label) {
  std::vector<std::string> names = {OpsReportName(label)};
  for (const std::string& format : FusionFormats()) names.push_back(ReportName(label, format));
  for (const std::string& name : names) {
    std::error_code ignored;
    std::filesystem::remove(PathIn(dir, name), ignored);
  }
}

// ComparePair() compares the pair and writes its reports, recording them in `status`.
absl::Status ComparePair(const Manifest& manifest, const ManifestRow& row,
                         const BatchOptions& options, const std::vector<std::string>& formats,
                         ClassifierCache* classifiers, PairStatus* status, int* exit_code) {
  CompareOptions compare = options.compare;
  absl::Status st = ApplyRowOptions(manifest, row, &compare);
  if (!st.ok()) {
    *exit_code = kExitUsage;
    return st;
  }
  absl::StatusOr<Comparison> comparison = RunComparison(status->trace1, status->trace2, compare,
                                                        options.pipeline, exit_code, classifiers);
  if (!comparison.ok()) return comparison.status();
  status->gpu_timeline = Json::object();
  for (Side s : kSides) {
    const TraceProfile& trace = comparison->traces[static_cast<size_t>(s)];
    Json side = GpuTimelineJson(trace);
    side["collectives"] = CollectivesJson(trace);
    status->gpu_timeline[s == Side::kTrace1 ? "trace1" : "trace2"] = std::move(side);
  }
  for (const TraceProfile& trace : comparison->traces) {
    status->bytes_read += trace.input_bytes;
    if (trace.truncated) {
      std::fprintf(options.log, "tracefuse: batch: %s: warning: %s: %s\n", row.label.c_str(),
                   trace.path.c_str(), TruncationText(trace).c_str());
    }
  }
  for (const std::string& format : formats) {
    const std::string name = ReportName(row.label, format);
    const std::string path = PathIn(options.out_dir, name);
    st = WriteComparison(*comparison, compare, format, path, exit_code);
    // On the disk before the status that says the pair is complete.
    if (st.ok()) st = SyncToDisk(path);
    if (!st.ok()) return st;
    status->reports.push_back(name);
  }
  if (compare.by_op) {
    const std::string name = OpsReportName(row.label);
    const std::string path = PathIn(options.out_dir, name);
    st = WriteOpComparison(*comparison, compare, path, exit_code);
    if (st.ok()) st = SyncToDisk(path);
    if (!st.ok()) return st;
    status->reports.push_back(name);
  }
  return absl::OkStatus();
}

void Finish(const absl::Status& st, int exit_code, PairStatus* status) {
  status->exit_code = exit_code;
  status->error = st;
  if (exit_code == kExitOk) {
    status->state = PairState::kComplete;
  } else {
    status->state =
        st.code() == absl::StatusCode::kCancelled ? PairState::kInterrupted : PairState::kFailed;
  }
}

void LogPair(std::FILE* log, const PairStatus& s) {
  if (s.exit_code == kExitOk) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
    std::fprintf(log, "tracefuse: batch: %s: complete in %.2f s\n", s.label.c_str(), seconds);
  } else {
    std::fprintf(log, "tracefuse: batch: %s: %s (exit %d): %s\n", s.label.c_str(),
                 std::string(PairStateName(s.state)).c_str(), s.exit_code.value_or(kExitIo),
                 ReadErrorMessage(s.error).c_str());
  }
}

// RunPair() runs one row: its status as running, the comparison and reports, the final status.
int RunPair(const Manifest& manifest, size_t task, const BatchOptions& options,
            const std::vector<std::string>& formats, ClassifierCache* classifiers) {
  const ManifestRow& row = manifest.rows[task];
  CompareOptions compare = options.compare;
  const bool by_op = ApplyRowOptions(manifest, row, &compare).ok() && compare.by_op;
  if (!options.force && IsComplete(options.out_dir, row.label, formats, by_op)) {
    std::fprintf(options.log, "tracefuse: batch: %s: complete, skipped (--force re-runs it)\n",
                 row.label.c_str());
    return kExitOk;
  }
  PairStatus status;
  status.label = row.label;
  status.trace1 = ResolveTracePath(manifest, row.trace1);
  status.trace2 = ResolveTracePath(manifest, row.trace2);
  status.manifest = manifest.path;
  status.task = task;
  RemoveReports(options.out_dir, row.label);
  absl::Status st = WriteStatus(options.out_dir, status);
  int exit_code = ExitCodeFor(st, kExitIo);
  if (st.ok()) st = ComparePair(manifest, row, options, formats, classifiers, &status, &exit_code);
  Finish(st, exit_code, &status);
  absl::Status written = WriteStatus(options.out_dir, status);
  if (st.ok() && !written.ok()) Finish(written, ExitCodeFor(written, kExitIo), &status);
  LogPair(options.log, status);
  return *status.exit_code;
}

}  // namespace

std::optional<TaskSpec> ParseTaskSpec(std::string_view text) {
  const size_t dash = text.find('-');
  std::optional<uint32_t> first = ParseNumber(text.substr(0, dash));
  if (!first) return std::nullopt;
  if (dash == std::string_view::npos) return TaskSpec{*first, *first, false};
  std::optional<uint32_t> last = ParseNumber(text.substr(dash + 1));
  if (!last || *last < *first) return std::nullopt;
  return TaskSpec{*first, *last, true};
}

absl::StatusOr<std::vector<size_t>> SelectTasks(const Manifest& manifest,
                                                const TaskSelection& selection) {
  const size_t rows = manifest.rows.size();
  std::vector<size_t> tasks;
  if (selection.all) {
    for (size_t i = 0; i < rows; ++i) tasks.push_back(i);
    return tasks;
  }
  const uint64_t per_task = std::max<uint32_t>(selection.rows_per_task, 1);
  std::optional<TaskSpec> task = selection.task;
  std::string source;
  if (!task) {
    std::optional<std::string> env = Env(kTaskEnv);
    if (!env) {
      return absl::InvalidArgumentError(
          StrCat("no pair selected: give --task N or --all (or set ", kTaskEnv, ")"));
    }
    std::optional<uint32_t> n = ParseNumber(*env);
    if (!n || *n > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
      return absl::InvalidArgumentError(
          StrCat(kTaskEnv, "='", *env, "' is not a task index (0, 1, ...)"));
    }
    task = TaskSpec{*n, *n, false};
    source = StrCat(" (from ", kTaskEnv, ")");
  }
  const std::string name = task->range ? StrCat(task->first, "-", task->last) : StrCat(task->first);
  if (task->range && per_task > 1) {
    return absl::InvalidArgumentError(
        StrCat("--task ", name, " is a range of rows: --rows-per-task ", per_task,
               " applies to an array task's index (--task N or ", kTaskEnv, ")"));
  }
  // An array task's rows; the last task of an array may have fewer.
  const uint64_t first = task->range ? task->first : task->first * per_task;
  const uint64_t last = task->range ? task->last : first + per_task - 1;
  if (first >= rows || (task->range && last >= rows)) {
    const uint64_t task_count = (rows + per_task - 1) / per_task;
    std::string tasks_text;
    if (task_count > 0) {
      tasks_text = StrCat(" (tasks 0 to ", task_count - 1,
                          per_task > 1 ? StrCat(" at ", per_task, " rows per task") : "", ")");
    }
    return absl::InvalidArgumentError(StrCat("task ", name, source,
                                             " is out of range: ", manifest.path, " has ", rows,
                                             rows == 1 ? " row" : " rows", tasks_text));
  }
  for (uint64_t row = first; row <= last && row < rows; ++row) tasks.push_back(row);
  return tasks;
}

absl::Status ApplyRowOptions(const Manifest& manifest, const ManifestRow& row,
                             CompareOptions* options) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(StrCat(manifest.path, ":", row.line, ": ", what));
  };
  for (size_t i = 0; i < row.options.size(); ++i) {
    std::string name = row.options[i];
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (name == "--by-op") {
      if (value) return error("--by-op takes no value");
      options->by_op = true;
      continue;
    }
    std::string* text = name == "--ruleset"  ? &options->ruleset
                        : name == "--label1" ? &options->label1
                        : name == "--label2" ? &options->label2
                                             : nullptr;
    if (text == nullptr && name != "--min-group-size") {
      return error(StrCat("unsupported option '", name,
                          "' in the options column (supported: --ruleset, --min-group-size, "
                          "--label1, --label2, --by-op)"));
    }
    if (!value && i + 1 == row.options.size()) return error(StrCat(name, " needs a value"));
    if (!value) value = row.options[++i];
    if (name == "--ruleset" && !IsBuiltinRuleSet(*value)) {
      options->ruleset = ResolveTracePath(manifest, *value);
    } else if (text != nullptr) {
      *text = *value;
    } else if (std::optional<uint32_t> n = ParseNumber(*value); n && *n > 0) {
      options->min_group_size = *n;
    } else {
      return error(StrCat("--min-group-size: '", *value, "' is not a positive integer"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> RunBatch(const Manifest& manifest, const std::vector<size_t>& tasks,
                             const BatchOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec || !std::filesystem::is_directory(options.out_dir)) {
    return absl::UnavailableError(
        StrCat(options.out_dir, ": cannot make the output directory",
               ec ? StrCat(": ", ec.message()) : std::string(": not a directory")));
  }
  const std::vector<std::string> formats = ReportFormats(options.formats);
  // What every pair would otherwise pay again: each rule set's load (with its Hyperscan scratch).
  ClassifierCache classifiers;
  int exit_code = kExitOk;
  for (size_t task : tasks) {
    if (InterruptSignal() != 0) return kExitSignalBase + InterruptSignal();
    const int pair_exit_code = RunPair(manifest, task, options, formats, &classifiers);
    if (pair_exit_code >= kExitSignalBase) return pair_exit_code;
    if (exit_code == kExitOk) exit_code = pair_exit_code;
  }
  return exit_code;
}

}  // namespace tracefuse
