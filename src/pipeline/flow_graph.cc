#include "tracefuse/pipeline/flow_graph.h"

#include <malloc.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "fmt/ranges.h"
#include "oneapi/tbb/enumerable_thread_specific.h"
#include "oneapi/tbb/flow_graph.h"
#include "oneapi/tbb/parallel_for.h"
#include "oneapi/tbb/task_arena.h"
#include "oneapi/tbb/task_group.h"
#include "tracefuse/base/host.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/parse/importer.h"
#include "tracefuse/parse/platform.h"
#include "tracefuse/scan/event_chunker.h"

namespace tracefuse {

void KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // One heap for every thread: what one thread frees (the parsers' buffers, a trace's chunks)
  // another reuses, where per-thread arenas would each keep their own (ops: 136 MB peak on the
  // 1 GB pair against 122 MB). The threads allocate little while they parse, so they contend
  // little for it.
  mallopt(M_ARENA_MAX, 1);
  // The heap's first kHugeHeap bytes on transparent huge pages, faulted in 2 MiB at a time: a
  // small trace's run faults in its heap once (simdjson's structural index and string buffers,
  // the traces' tables), and a fresh 4 KiB page is dear on these VMs (docs/performance.md, "Small
  // files"). What glibc.malloc.hugetlb=1 does, which a tunable can only ask for before the
  // process starts: grow the heap by kHugeHeap at once (M_TOP_PAD; nothing is touched yet) and
  // advise the grown range. Best effort: 4 KiB pages where the kernel declines.
  constexpr size_t kHugeHeap = size_t{64} << 20, kHugePage = size_t{2} << 20,
                   kSmallPage = size_t{4} << 10;
  const auto before = reinterpret_cast<uintptr_t>(sbrk(0));
  mallopt(M_TOP_PAD, kHugeHeap);
  // Larger than what is left at the top: the heap grows. Through a volatile pointer, since the
  // compiler drops a malloc() that is only freed.
  void* volatile grow = malloc(kHugePage);
  free(grow);
  mallopt(M_TOP_PAD, 128 << 10);  // glibc's default again
  const uintptr_t start = (before + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0)) & ~uintptr_t{kHugePage - 1};
  if (end <= start) return;  // the heap did not grow (another allocator, or no room)
  // Carving `grow` wrote the header of the rest of the heap 2 MiB in, which faulted in a 4 KiB
  // page there, and a 2 MiB range that has one gets no huge page: about 500 faults more for a run
  // that fills it. All of [start, end) is the heap's free top again: drop that page.
  madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
  // Below `start` the heap cannot have huge pages (its mapping does not cover that 2 MiB range),
  // and a run uses all of it: fault it in with one call, under 1 us a page, rather than one trap
  // a page (up to 511 of them). Linux 5.14+; best effort.
  const uintptr_t head = before & ~uintptr_t{kSmallPage - 1};
  madvise(reinterpret_cast<void*>(head), start - head, MADV_POPULATE_WRITE);
}

int DefaultThreadCount() {
  if (const char* slurm = std::getenv("SLURM_CPUS_PER_TASK")) {
    int n = std::atoi(slurm);
    if (n > 0) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

namespace {

int ThreadCount(const PipelineOptions& options) {
  return options.threads > 0 ? options.threads : DefaultThreadCount();
}

// One ChunkParser per thread for the whole process: their buffers are allocated (and
// page-faulted) once, then reused by every chunk of every trace.
tbb::enumerable_thread_specific<ChunkParser>& Parsers() {
  static tbb::enumerable_thread_specific<ChunkParser> parsers;
  return parsers;
}

// ReleaseParsers() frees the parsers' buffers (about 15 MB a thread) once the traces are read,
// for the analysis to reuse: freed memory stays in the process (KeepFreedMemoryForReuse()), so
// the next traces' parsers take it back without faulting pages in again.
void ReleaseParsers() { Parsers().clear(); }

struct Work {
  EventChunk chunk;
  ParsedChunk parsed;
  bool imported = false;           // `parsed` came from a TraceImporter: there is no chunk to parse
  std::vector<RuleId> name_rules;  // per distinct name of `parsed`
  ChunkSummary summary;
  absl::Status status;  // of the parse
};

// Work items, recycled: a ParsedChunk keeps its vectors' capacity between uses. The limiter
// bounds how many are live (the source node may hold one more while the limiter is full).
class WorkPool {
 public:
  explicit WorkPool(size_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}

  Work* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return New();
    Work* w = free_.back();
    free_.pop_back();
    return w;
  }
  void Release(Work* w) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(w);
  }

 private:
  // New() is a work item with room for a chunk of the target size. Grown from one element
  // instead, its vectors would take the heap's lock, which every thread shares
  // (KeepFreedMemoryForReuse()), a dozen times each, just when all threads start parsing: a thread
  // that finds the lock taken sleeps, and on a VM it wakes milliseconds later.
  Work* New() {
    Work& w = items_.emplace_back();
    w.parsed.Reserve(chunk_bytes_);
    w.summary.Reserve(w.parsed.kernels.capacity());
    return &w;
  }

  size_t chunk_bytes_;
  std::deque<Work> items_;  // stable addresses
  std::vector<Work*> free_;
  std::mutex mu_;
};

class SharedProgress {
 public:
  // Totals start from the files' sizes, so the first update already covers every trace.
  SharedProgress(const PipelineOptions& options, const std::vector<std::string>& paths)
      : callback_(options.progress),
        read_(paths.size()),
        total_(paths.size()),
        input_(paths.size()) {
    for (size_t i = 0; i < paths.size(); ++i) {
      std::error_code ec;
      uintmax_t size = std::filesystem::file_size(paths[i], ec);
      if (!ec) total_[i] = size;
    }
  }
  void Update(size_t trace, uint64_t read, uint64_t total, uint64_t input) {
    if (!callback_) return;
    std::lock_guard<std::mutex> lock(mu_);
    read_[trace] = read;
    total_[trace] = total;
    input_[trace] = input;
    ProgressUpdate u;
    for (size_t i = 0; i < read_.size(); ++i) {
      u.file_bytes_read += read_[i];
      u.file_bytes_total += total_[i];
      u.input_bytes += input_[i];
    }
    callback_(u);
  }

 private:
  std::function<void(const ProgressUpdate&)> callback_;
  std::mutex mu_;
  std::vector<uint64_t> read_, total_, input_;
};

// LeadingMetadata() parses the top-level keys that precede `traceEvents`, once the splitter has
// entered the events array (a bare array of events has none).
absl::StatusOr<TraceMetadata> LeadingMetadata(const EventSplitter& splitter,
                                              const std::string& path) {
  if (splitter.bare_array()) return TraceMetadata();
  return ParseTraceMetadata(StrCat(splitter.leading_metadata_json(), "]}"), path);
}

// Speculative cuts need an input that can be read again from a rejected chunk on.
bool CanReadTwice(const std::string& path) {
  std::error_code ec;
  return path != "-" && std::filesystem::is_regular_file(path, ec);
}

SourceOptions SourceOptionsFor(const PipelineOptions& options) {
  SourceOptions o;
  o.window_bytes = options.window_bytes;
  o.accept_truncated = options.salvage_truncated;
  // ISA-L decodes with table lookups that read a few bits past the symbol, so at a cut it may
  // stop one symbol short of what the data holds; zlib decodes bit-exactly to the cut, and a
  // salvaged trace keeps every event the data holds (at zlib's speed, about a third of ISA-L's).
  if (options.salvage_truncated) o.gzip_inflater = GzipInflaterKind::kZlib;
  return o;
}

ChunkerOptions ChunkerOptionsFor(const std::string& path, const PipelineOptions& options) {
  ChunkerOptions o;
  o.chunk_bytes = options.chunk_bytes;
  o.max_event_bytes = options.max_event_bytes;
  o.salvage_truncated = options.salvage_truncated;
  o.speculate = options.speculative_cuts && CanReadTwice(path);
  o.threads = static_cast<size_t>(ThreadCount(options));
  return o;
}

// ChunkSource is the serial front of the graph: it reads blocks, cuts them into chunks of whole
// events and, as soon as the keys before `traceEvents` have been read, detects the platform that
// names are classified with (the reducer re-classifies if the final detection, which also weighs
// event evidence, differs).
class ChunkSource {
 public:
  ChunkSource(const std::string& path, std::unique_ptr<ByteSource> bytes,
              const PipelineOptions& options, SharedProgress* progress, size_t trace_index)
      : path_(path),
        source_options_(SourceOptionsFor(options)),
        bytes_(std::move(bytes)),
        chunker_(path, ChunkerOptionsFor(path, options)),
        progress_(progress),
        trace_index_(trace_index) {
    if (bytes_->random_access()) chunker_.UseFile(bytes_.get());
    if (bytes_->can_unread()) chunker_.CutAtBlockEnds();
  }

  // Next() moves the next chunk into `chunk`; false at the end of the input or on an error
  // (then status() says which).
  bool Next(EventChunk* chunk) {
    while (pending_.empty()) {
      if (done_ || !status_.ok()) return false;
      status_ = ReadBlock();
    }
    *chunk = std::move(pending_.front());
    pending_.pop_front();
    return true;
  }

  // Restart() reads the input again from `rejected`, a speculative chunk whose parse failed.
  absl::Status Restart(const EventChunk& rejected) {
    chunker_.Restart(rejected);
    if (!bytes_->random_access()) {  // read the stream again from its start
      absl::StatusOr<std::unique_ptr<ByteSource>> bytes = OpenSource(path_, source_options_);
      if (!bytes.ok()) return bytes.status();
      inflate_cpu_ += bytes_->inflate_cpu_seconds();
      bytes_ = std::move(*bytes);
    }
    pending_.clear();
    status_ = absl::OkStatus();
    done_ = false;
    return absl::OkStatus();
  }

  const absl::Status& status() const { return status_; }
  Platform classify_platform() const { return classify_platform_.load(); }

  // Metadata() checks that the input was a Kineto trace and parses its top-level keys; call it
  // once every chunk has been handed out.
  absl::StatusOr<TraceMetadata> Metadata() const {
    const EventSplitter& splitter = chunker_.splitter();
    if (!splitter.events_started()) {
      absl::StatusOr<TraceMetadata> meta = ParseTraceMetadata(splitter.metadata_json(), path_);
      // Keys are the file's text: one with a newline must not break the one-line error.
      std::string keys =
          meta.ok() ? EscapedControls(fmt::format("{}", fmt::join(meta->keys, ", "))) : "";
      return UnsupportedTraceError(
          StrCat(path_, ": not a Kineto trace: no traceEvents array",
                 keys.empty() ? "" : StrCat(" (top-level keys: ", keys, ")")));
    }
    if (splitter.metadata_truncated()) {
      return UnsupportedTraceError(
          StrCat(path_,
                 ": unsupported trace: its top-level keys other than traceEvents hold more "
                 "than 64 MiB"));
    }
    return ParseTraceMetadata(splitter.metadata_json(), path_);
  }

  uint64_t input_bytes() const { return chunker_.bytes_fed(); }
  // The serial front's CPU seconds: reading (less inflation), inflation, cutting into chunks.
  double read_cpu_seconds() const { return read_and_inflate_cpu_ - inflate_cpu_seconds(); }
  double inflate_cpu_seconds() const { return inflate_cpu_ + bytes_->inflate_cpu_seconds(); }
  double split_cpu_seconds() const { return split_cpu_; }
  uint64_t file_bytes() const {
    return bytes_->compressed() ? bytes_->file_bytes_read() : chunker_.bytes_fed();
  }
  bool compressed() const { return bytes_->compressed(); }
  std::string_view compression() const { return bytes_->compression(); }
  bool random_access() const { return bytes_->random_access(); }
  uint64_t rejected_cuts() const { return chunker_.rejected(); }
  // Truncated() says what a salvaged input lost: the events cut by the end of the input, or
  // nothing but a compressed file's last frame, cut where its events were complete.
  std::optional<TruncatedInput> Truncated() const {
    if (chunker_.truncated() || !bytes_->truncated()) return chunker_.truncated();
    TruncatedInput whole;
    whole.input_bytes = whole.kept_bytes = chunker_.bytes_fed();
    whole.position = CutPosition::kAfterEvents;
    return whole;
  }

 private:
  absl::Status ReadBlock() {
    produced_.clear();
    absl::Status st = chunker_.cutting_file() ? CutFile() : FeedBlock();
    // Chunks cut before an error go on: an error inside them comes first in the input.
    for (EventChunk& c : produced_) pending_.push_back(std::move(c));
    if (!st.ok()) return st;
    if (!platform_checked_ && chunker_.splitter().events_started()) DetectEarlyPlatform();
    if (progress_ != nullptr) {
      progress_->Update(trace_index_, file_bytes(), bytes_->file_bytes(), chunker_.bytes_fed());
    }
    return absl::OkStatus();
  }

  absl::Status CutFile() {
    const double started = ThreadCpuSeconds();
    absl::Status st = chunker_.CutFile(&produced_);
    split_cpu_ += ThreadCpuSeconds() - started;
    return st;
  }

  absl::Status FeedBlock() {
    if (std::optional<uint64_t> at = chunker_.TakeSeek(); at && bytes_->random_access()) {
      bytes_->SeekTo(*at);
    }
    Block block;
    const double read_started = ThreadCpuSeconds();
    absl::StatusOr<bool> more = bytes_->Next(&block);
    const double split_started = ThreadCpuSeconds();
    read_and_inflate_cpu_ += split_started - read_started;
    if (!more.ok()) return more.status();
    absl::Status st;
    if (*more) {
      st = chunker_.Feed(block, &produced_);
      // Before the chunks are handed out: an in-place chunk's parse overwrites what follows it.
      if (std::optional<uint64_t> at = chunker_.TakeUnread()) bytes_->Unread(*at);
    } else {
      st = chunker_.Finish(&produced_);
      done_ = true;
    }
    split_cpu_ += ThreadCpuSeconds() - split_started;
    return st;
  }

  void DetectEarlyPlatform() {
    platform_checked_ = true;
    absl::StatusOr<TraceMetadata> early = LeadingMetadata(chunker_.splitter(), path_);
    std::string why;
    if (early.ok()) classify_platform_ = DetectPlatform(*early, {}, {}, &why);
  }

  const std::string& path_;
  SourceOptions source_options_;
  std::unique_ptr<ByteSource> bytes_;
  EventChunker chunker_;
  SharedProgress* progress_;
  size_t trace_index_;
  std::deque<EventChunk> pending_;
  std::vector<EventChunk> produced_;
  absl::Status status_;
  bool done_ = false;
  bool platform_checked_ = false;
  double read_and_inflate_cpu_ = 0;
  double inflate_cpu_ = 0;  // of sources closed by a restart
  double split_cpu_ = 0;
  // Written by the source node before the first chunk leaves it; read by the parallel stage.
  std::atomic<Platform> classify_platform_{Platform::kUnknown};
};

int64_t Nanos(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// HasRocprofV1Keys() tells whether a trace's top-level keys are those of rocprof v1's Chrome
// trace (rocprofiler's tblextr.py: traceEvents, then otherData with the system's information),
// where Kineto writes schemaVersion.
bool HasRocprofV1Keys(const TraceMetadata& metadata) {
  auto has = [&metadata](std::string_view key) {
    return std::find(metadata.keys.begin(), metadata.keys.end(), key) != metadata.keys.end();
  };
  return has("otherData") && !has("schemaVersion");
}

// FinishProfile() completes a streamed trace: its metadata, the reducer's last step (platform
// detection, re-classification if needed) and what was read.
// `parallel_read`: CPU seconds the parallel stage spent reading chunks from the file.
absl::StatusOr<TraceProfile> FinishProfile(const std::string& path, const ChunkSource& source,
                                           TraceReducer* reducer, StageCpuSeconds cpu,
                                           double parallel_read,
                                           std::chrono::steady_clock::time_point started) {
  const double merge_started = ThreadCpuSeconds();
  absl::StatusOr<TraceMetadata> metadata = source.Metadata();
  if (!metadata.ok()) return metadata.status();
  const bool rocprof_v1_keys = HasRocprofV1Keys(*metadata);
  TraceProfile profile = reducer->Finish(std::move(*metadata), source.classify_platform());
  // Read as Kineto, its events hold no kernels: refused, never reported as an empty trace.
  if (rocprof_v1_keys && profile.events > 0 && profile.kernel_count == 0) {
    return UnsupportedTraceError(
        StrCat(path,
               ": not a Kineto trace: a rocprof v1 (roctracer) Chrome trace, by its "
               "otherData key and events without kernel categories; profile with rocprofv3 "
               "(--output-format json or rocpd) or torch.profiler instead"));
  }
  cpu.read = source.read_cpu_seconds() + parallel_read;
  cpu.parallel_read = source.random_access();
  cpu.inflate = source.inflate_cpu_seconds();
  cpu.split = source.split_cpu_seconds();
  cpu.merge = ThreadCpuSeconds() - merge_started;
  profile.cpu_seconds = cpu;
  profile.path = path;
  profile.input_bytes = source.input_bytes();
  profile.file_bytes = source.file_bytes();
  profile.compressed = source.compressed();
  profile.compression = std::string(source.compression());
  profile.rejected_cuts = source.rejected_cuts();
  profile.truncated = source.Truncated();
  profile.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return profile;
}

// TraceInput is what a trace is read from: its bytes (a Kineto trace, cut into chunks and parsed)
// or an importer of another format.
struct TraceInput {
  std::unique_ptr<ByteSource> bytes;
  std::unique_ptr<TraceImporter> importer;
};

// TbbTaskGroup is the importers' TaskGroup: tasks on the arena's threads.
class TbbTaskGroup : public TaskGroup {
 public:
  void Run(std::function<void()> task) override { group_->run(std::move(task)); }
  void Wait() override { group_->wait(); }

 private:
  // Held by pointer: tbb::task_group's destructor is declared to throw (tasks never waited for,
  // outside an unwinding), a TaskGroup's is not. The importers wait for all they run; left by an
  // exception, the destructor cancels and waits without throwing.
  std::unique_ptr<tbb::task_group> group_ = std::make_unique<tbb::task_group>();
};

// OpenInput() opens `path`, of `format`, for one pass.
absl::StatusOr<TraceInput> OpenInput(const std::string& path, TraceFormat format,
                                     const PipelineOptions& options) {
  TraceInput input;
  if (format == TraceFormat::kKineto) {
    absl::StatusOr<std::unique_ptr<ByteSource>> bytes = OpenSource(path, SourceOptionsFor(options));
    if (!bytes.ok()) return bytes.status();
    input.bytes = std::move(*bytes);
  } else {
    ImportOptions reading;
    reading.host_activity = options.host_activity;
    reading.slice_bytes = options.chunk_bytes;
    reading.new_task_group = [] { return std::make_unique<TbbTaskGroup>(); };
    absl::StatusOr<std::unique_ptr<TraceImporter>> importer =
        OpenTraceImporter(path, format, reading);
    if (!importer.ok()) return importer.status();
    input.importer = std::move(*importer);
  }
  return input;
}

// ImportedPlatform() is the platform of an imported trace's format.
Platform ImportedPlatform(const TraceImporter& importer) {
  std::string why;
  return DetectPlatform(importer.metadata(), {}, {}, &why);
}

// FinishImport() completes an imported trace, as FinishProfile() a Kineto one.
TraceProfile FinishImport(const std::string& path, const TraceImporter& importer,
                          TraceReducer* reducer, StageCpuSeconds cpu,
                          std::chrono::steady_clock::time_point started) {
  const double merge_started = ThreadCpuSeconds();
  TraceProfile profile = reducer->Finish(importer.metadata(), ImportedPlatform(importer));
  cpu.merge = ThreadCpuSeconds() - merge_started;
  profile.cpu_seconds = cpu;
  profile.path = path;
  profile.input_bytes = importer.bytes_read();
  profile.file_bytes = importer.file_bytes();
  profile.compression = std::string(importer.compression());
  profile.compressed = !profile.compression.empty();
  profile.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return profile;
}

using CpuSideReading = TraceReducer::CpuSideReading;

// KeepsLaunchSites() tells whether the op tree of a trace read with `options` keeps its launch
// sites: for classification by launching op, where the CPU side is read anyway.
bool KeepsLaunchSites(const PipelineOptions& options, const Classifier& classifier) {
  return options.host_activity && options.classify_by_launching_op &&
         ClassifiesByLaunchingOp(classifier.rule_set());
}

using GpuTimelineReading = TraceReducer::GpuTimelineReading;

// GpuTimelineReadingFor() streams the GPU timeline where a failed sweep can read the trace
// again.
GpuTimelineReading GpuTimelineReadingFor(const std::string& path) {
  return CanReadTwice(path) ? GpuTimelineReading::kStream : GpuTimelineReading::kCollect;
}

CpuSideReading CpuSideReadingFor(const std::string& path, const PipelineOptions& options) {
  if (!options.host_activity) return CpuSideReading::kSkip;
  return options.stream_cpu_side && CanReadTwice(path) ? CpuSideReading::kStream
                                                       : CpuSideReading::kCollect;
}

// TraceRun streams one trace through the flow graph:
//   source (serial: read, cut into chunks) -> limiter -> parse + classify (parallel)
//     -> sequencer -> reduce (serial, in input order) -> back to the limiter
// The first error stops every stage; an error inside a chunk is reported before any error the
// reader met further on. A speculative chunk that fails to parse ends the pass instead: the
// chunks after it are dropped unreduced, and the next pass reads again from it.
class TraceRun {
 public:
  // `events_wanted`: stop once the chunks reduced hold that many events (0: read everything).
  TraceRun(const std::string& path, TraceInput input, std::shared_ptr<const Classifier> classifier,
           const PipelineOptions& options, size_t threads, SharedProgress* progress,
           size_t trace_index, uint64_t events_wanted = 0,
           GpuTimelineReading gpu_timeline = GpuTimelineReading::kStream)
      : path_(path),
        threads_(threads),
        importer_(std::move(input.importer)),
        parse_options_{options.host_activity},
        keep_kernel_records_(options.keep_kernel_records),
        events_wanted_(events_wanted),
        reducer_(classifier, options.keep_kernel_records, CpuSideReadingFor(path, options),
                 gpu_timeline == GpuTimelineReading::kCollect ? gpu_timeline
                                                              : GpuTimelineReadingFor(path),
                 options.step_figures, KeepsLaunchSites(options, *classifier)),
        classifier_(classifier),
        classifiers_([this, classifier] {
          // Each thread's cache is made on its first chunk, after the platform is detected.
          return CachedClassifier(classifier, ClassifyPlatform());
        }),
        pool_(options.chunk_bytes),
        import_progress_(progress),
        trace_index_(trace_index) {
    if (!importer_) source_.emplace(path, std::move(input.bytes), options, progress, trace_index);
    if (options.keep_placement && options.keep_kernel_records) reducer_.KeepPlacement();
    if (!options.idle_cpu_ops) reducer_.SkipIdleCpuOps();
  }

  // RecordCpuWaits() has the reducer keep the cpu_wait part of each gap (TraceReducer's).
  void RecordCpuWaits() { reducer_.RecordCpuWaits(); }

  absl::StatusOr<TraceProfile> Run(std::chrono::steady_clock::time_point started) {
    while (true) {
      absl::Status pass = RunPass();
      if (!pass.ok()) return pass;
      if (!rejected_) break;
      absl::Status restarted = source_->Restart(*rejected_);
      if (!restarted.ok()) return restarted;
      rejected_.reset();
    }
    // A run for the first events wants only what they hold, not the trace's top-level keys.
    if (events_wanted_ > 0) {
      return reducer_.Finish(importer_ ? importer_->metadata() : TraceMetadata(),
                             ClassifyPlatform());
    }
    auto seconds = [&](ParallelStage s) { return double(parallel_cpu_ns_[s].load()) * 1e-9; };
    cpu_.parse = seconds(kParse);
    cpu_.classify = seconds(kClassify);
    cpu_.summarize = seconds(kSummarize);
    if (importer_) {
      cpu_.read = import_cpu_;
      return FinishImport(path_, *importer_, &reducer_, cpu_, started);
    }
    return FinishProfile(path_, *source_, &reducer_, cpu_, seconds(kRead), started);
  }

 private:
  // ParseAndClassify() is the parallel stage: parse, classify and summarize one chunk.
  Work* ParseAndClassify(Work* w) {
    if (!stop_.load(std::memory_order_relaxed)) {
      const double parse_started = ThreadCpuSeconds();
      w->status = w->imported
                      ? absl::OkStatus()
                      : Parsers().local().Parse(w->chunk, path_, &w->parsed, parse_options_);
      const double classify_started = ThreadCpuSeconds();
      if (w->status.ok()) classifiers_.local().ClassifyNames(w->parsed, &w->name_rules);
      const double summarize_started = ThreadCpuSeconds();
      if (w->status.ok()) {
        w->summary.Summarize(w->parsed, keep_kernel_records_, *classifier_, w->name_rules);
      }
      const double read = w->parsed.read_cpu_seconds;
      parallel_cpu_ns_[kRead].fetch_add(Nanos(read), std::memory_order_relaxed);
      parallel_cpu_ns_[kParse].fetch_add(Nanos(classify_started - parse_started - read),
                                         std::memory_order_relaxed);
      parallel_cpu_ns_[kClassify].fetch_add(Nanos(summarize_started - classify_started),
                                            std::memory_order_relaxed);
      parallel_cpu_ns_[kSummarize].fetch_add(Nanos(ThreadCpuSeconds() - summarize_started),
                                             std::memory_order_relaxed);
    }
    w->chunk.pieces.clear();  // release the input blocks as early as possible
    return w;
  }

  void Reduce(Work* w) {
    if (!stop_.load(std::memory_order_relaxed)) {
      if (w->status.ok()) {
        const double reduce_started = ThreadCpuSeconds();
        reducer_.Consume(w->parsed, w->summary, w->name_rules);
        cpu_.reduce += ThreadCpuSeconds() - reduce_started;
        if (events_wanted_ > 0 && reducer_.events() >= events_wanted_) {
          has_events_wanted_ = true;
          stop_ = true;
        }
      } else if (w->chunk.speculative && absl::IsInvalidArgument(w->status)) {
        rejected_ = std::move(w->chunk);
        stop_ = true;
      } else {
        reduce_error_ = w->status;
        stop_ = true;
      }
    }
  }

  // RunPass() runs the graph until the input ends, an error stops it or a speculative chunk is
  // rejected.
  absl::Status RunPass() {
    stop_ = false;
    tbb::flow::graph g;
    tbb::flow::input_node<Work*> read_and_cut(g, [&](tbb::flow_control& fc) -> Work* {
      Work* w = pool_.Acquire();
      if (stop_.load(std::memory_order_relaxed) || !NextWork(w)) {
        pool_.Release(w);
        fc.stop();
        return nullptr;
      }
      return w;
    });
    tbb::flow::limiter_node<Work*> limiter(g, 2 * threads_ + 2);
    tbb::flow::function_node<Work*, Work*> parse_and_classify(
        g, tbb::flow::unlimited, [&](Work* w) { return ParseAndClassify(w); });
    tbb::flow::sequencer_node<Work*> in_order(g, [](Work* const& w) { return w->chunk.seq; });
    tbb::flow::function_node<Work*, tbb::flow::continue_msg> reduce(
        g, tbb::flow::serial, [&](Work* w) {
          Reduce(w);
          pool_.Release(w);
          return tbb::flow::continue_msg();
        });
    tbb::flow::make_edge(read_and_cut, limiter);
    tbb::flow::make_edge(limiter, parse_and_classify);
    tbb::flow::make_edge(parse_and_classify, in_order);
    tbb::flow::make_edge(in_order, reduce);
    tbb::flow::make_edge(reduce, limiter.decrementer());
    read_and_cut.activate();
    g.wait_for_all();

    if (!reduce_error_.ok()) return reduce_error_;
    // The source's own error, if any, lies beyond: the reader may have run ahead to it.
    if (rejected_ || has_events_wanted_) return absl::OkStatus();
    return importer_ ? import_status_ : source_->status();
  }

  // NextWork() gives `w` the next chunk, to parse or imported; false at the end of the input or
  // on an error.
  bool NextWork(Work* w) {
    w->imported = importer_ != nullptr;
    if (!importer_) return source_->Next(&w->chunk);
    const double started = ThreadCpuSeconds();
    absl::StatusOr<bool> more = importer_->Next(&w->parsed);
    import_cpu_ += ThreadCpuSeconds() - started;
    if (!more.ok()) import_status_ = more.status();
    if (import_progress_ != nullptr) {
      const uint64_t covered = importer_->file_bytes_covered();
      import_progress_->Update(trace_index_, covered, importer_->file_bytes(), covered);
    }
    if (!more.ok() || !*more) return false;
    w->chunk.seq = w->parsed.seq;
    return true;
  }

  // ClassifyPlatform() is the platform that names are classified with: the importer's, or what
  // the Kineto trace's leading keys say.
  Platform ClassifyPlatform() const {
    return importer_ ? ImportedPlatform(*importer_) : source_->classify_platform();
  }

  const std::string& path_;
  size_t threads_;
  std::unique_ptr<TraceImporter> importer_;  // null for a Kineto trace
  std::optional<ChunkSource> source_;        // a Kineto trace's
  absl::Status import_status_;
  double import_cpu_ = 0;
  ParseOptions parse_options_;
  bool keep_kernel_records_;
  uint64_t events_wanted_;
  TraceReducer reducer_;
  std::shared_ptr<const Classifier> classifier_;
  tbb::enumerable_thread_specific<CachedClassifier> classifiers_;
  WorkPool pool_;
  SharedProgress* import_progress_;  // an imported trace's (a Kineto trace's is its source's)
  size_t trace_index_;
  absl::Status reduce_error_;
  std::optional<EventChunk> rejected_;
  bool has_events_wanted_ = false;  // the chunks reduced hold events_wanted_
  std::atomic<bool> stop_{false};
  enum ParallelStage { kRead, kParse, kClassify, kSummarize, kParallelStages };
  std::atomic<int64_t> parallel_cpu_ns_[kParallelStages] = {};  // atomic<double>: no fetch_add
  StageCpuSeconds cpu_;  // the serial stages write theirs directly
};

// ReadCpuSideAgain() reads again the CPU events that came before the chunk where `profile`'s
// CPU side fell out of order, which its stream did not keep, and puts them before the rest: the
// any-order path then sees the whole CPU side.
absl::Status ReadCpuSideAgain(const std::string& path, TraceFormat format,
                              std::shared_ptr<const Classifier> classifier,
                              const PipelineOptions& options, size_t threads,
                              TraceProfile* profile) {
  PipelineOptions again = options;
  again.keep_kernel_records = false;
  again.stream_cpu_side = false;
  const uint64_t end = profile->host.events_read_again;
  absl::StatusOr<TraceInput> input = OpenInput(path, format, again);
  if (!input.ok()) return input.status();
  TraceRun run(path, std::move(*input), std::move(classifier), again, threads, nullptr, 0, end);
  absl::StatusOr<TraceProfile> before = run.Run(std::chrono::steady_clock::now());
  if (!before.ok()) return before.status();
  TraceHost& host = before->host;
  auto after = [end](const auto& event) { return event.position >= end; };
  host.ops.erase(std::remove_if(host.ops.begin(), host.ops.end(), after), host.ops.end());
  host.calls.erase(std::remove_if(host.calls.begin(), host.calls.end(), after), host.calls.end());
  host.events_without_times = 0;  // counted by the stream, in the rest
  host.Append(profile->host);
  host.any_order_reason = std::move(profile->host.any_order_reason);
  host.events_read_again = end;
  host.unit_spans = profile->host.unit_spans;  // the second pass keeps no kernel records
  profile->host = std::move(host);
  return absl::OkStatus();
}

// ReadGpuTimelineAgain() measures the GPU timeline of a trace whose sweep met its events out of
// order, by reading it again and collecting them.
absl::Status ReadGpuTimelineAgain(const std::string& path, TraceFormat format,
                                  std::shared_ptr<const Classifier> classifier,
                                  const PipelineOptions& options, size_t threads,
                                  TraceProfile* profile) {
  PipelineOptions again = options;
  again.keep_kernel_records = false;
  again.host_activity = false;
  absl::StatusOr<TraceInput> input = OpenInput(path, format, again);
  if (!input.ok()) return input.status();
  TraceRun run(path, std::move(*input), std::move(classifier), again, threads, nullptr, 0, 0,
               GpuTimelineReading::kCollect);
  // The first pass read the CPU side.
  if (options.host_activity && options.idle_cpu_ops) run.RecordCpuWaits();
  absl::StatusOr<TraceProfile> whole = run.Run(std::chrono::steady_clock::now());
  if (!whole.ok()) return whole.status();
  GpuTimeline& timeline = profile->gpu_timeline;
  timeline.devices = std::move(whole->gpu_timeline.devices);
  timeline.collectives = std::move(whole->gpu_timeline.collectives);
  timeline.launches = std::move(whole->gpu_timeline.launches);
  timeline.steps = std::move(whole->gpu_timeline.steps);
  timeline.step_names = std::move(whole->gpu_timeline.step_names);
  timeline.step_name_of = std::move(whole->gpu_timeline.step_name_of);
  timeline.cpu_wait_spans = std::move(whole->gpu_timeline.cpu_wait_spans);
  timeline.path = GpuTimelinePath::kCollected;
  return absl::OkStatus();
}

absl::StatusOr<TraceProfile> RunGraph(const std::string& path,
                                      std::shared_ptr<const Classifier> classifier,
                                      const PipelineOptions& options, size_t threads,
                                      SharedProgress* progress, size_t trace_index);

// HasCpuOps() tells whether a trace recorded cpu_op events, which launches nest in.
bool HasCpuOps(const TraceProfile& profile) {
  return std::any_of(profile.event_categories.begin(), profile.event_categories.end(),
                     [](const auto& c) { return c.first == "cpu_op" || c.first == "Operator"; });
}

// ClassifyByLaunchingOps() classifies by launching op the names of a read trace that its rule set
// left in the default category: at once where the CPU side was read with it (TakeOpTree() then
// classifies); otherwise by reading the trace again with its CPU side, so that traces without
// such names (nearly all) pay nothing. Returns whether it read the trace again.
absl::StatusOr<bool> ClassifyByLaunchingOps(const std::string& path, const PipelineOptions& options,
                                            size_t threads, TraceProfile* profile) {
  using State = ByOpClassification::State;
  TraceProfile& p = *profile;
  ByOpClassification& by_op = p.by_op;
  if (!ClassifiesByLaunchingOp(p.classifier->rule_set())) return false;
  auto settle = [&by_op](State state) {
    by_op.state = state;
    return false;
  };
  if (!p.any_in_default_by_name()) return settle(State::kNothingLeft);
  if (!HasCpuOps(p)) return settle(State::kNoCpuSide);
  if (options.host_activity) return settle(State::kPending);
  if (!CanReadTwice(path)) return settle(State::kCannotReadTwice);
  PipelineOptions again = options;
  again.host_activity = true;
  again.keep_kernel_records = true;
  again.step_figures = false;
  again.progress = nullptr;
  absl::StatusOr<TraceProfile> linked = RunGraph(path, p.classifier, again, threads, nullptr, 0);
  if (!linked.ok()) return linked.status();
  TakeOpTree(&*linked);
  StringMap<uint32_t> name_ids;
  for (uint32_t n = 0; n < p.names.size(); ++n) name_ids.try_emplace(p.names[n], n);
  for (auto& [name, found] : linked->by_op.names) {
    if (auto it = name_ids.find(linked->names[name]); it != name_ids.end()) {
      by_op.names[it->second] = std::move(found);
    }
  }
  by_op.state = linked->by_op.state;
  return true;
}

absl::StatusOr<TraceProfile> RunGraph(const std::string& path,
                                      std::shared_ptr<const Classifier> classifier,
                                      const PipelineOptions& options, size_t threads,
                                      SharedProgress* progress, size_t trace_index) {
  auto started = std::chrono::steady_clock::now();
  absl::StatusOr<TraceFormat> format = DetectTraceFormat(path);
  if (!format.ok()) return format.status();
  absl::StatusOr<TraceInput> input = OpenInput(path, *format, options);
  if (!input.ok()) return input.status();
  TraceRun run(path, std::move(*input), classifier, options, threads, progress, trace_index);
  absl::StatusOr<TraceProfile> profile = run.Run(started);
  if (!profile.ok()) return profile;
  TraceHost& host = profile->host;
  if (host.path == CpuSidePath::kAnyOrder && host.any_order_reason.empty()) {
    host.any_order_reason =
        options.stream_cpu_side ? "the input cannot be read twice" : "streaming was turned off";
  }
  bool read_again =
      host.events_read_again > 0 || profile->gpu_timeline.path == GpuTimelinePath::kReadAgain;
  if (host.events_read_again > 0) {
    absl::Status again = ReadCpuSideAgain(path, *format, classifier, options, threads, &*profile);
    if (!again.ok()) return again;
  }
  if (profile->gpu_timeline.path == GpuTimelinePath::kReadAgain) {
    absl::Status again =
        ReadGpuTimelineAgain(path, *format, classifier, options, threads, &*profile);
    if (!again.ok()) return again;
  }
  if (profile->cpu_ops_by_thread != nullptr) {  // the GPU timeline is complete
    AttributeCpuWaits(profile->cpu_ops_by_thread.get(), &profile->gpu_timeline);
    profile->cpu_ops_by_thread.reset();
  }
  if (options.classify_by_launching_op) {
    absl::StatusOr<bool> by_op = ClassifyByLaunchingOps(path, options, threads, &*profile);
    if (!by_op.ok()) return by_op.status();
    read_again |= *by_op;
  }
  if (read_again) {
    profile->elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return profile;
}

// ProfileInArena() streams the traces concurrently in `arena`, and releases the parsers once
// the last one is read.
absl::StatusOr<std::vector<TraceProfile>> ProfileInArena(
    tbb::task_arena& arena, int threads, const std::vector<std::string>& paths,
    std::shared_ptr<const Classifier> classifier, const PipelineOptions& options) {
  SharedProgress progress(options, paths);
  std::vector<absl::StatusOr<TraceProfile>> results;
  for (size_t i = 0; i < paths.size(); ++i) results.emplace_back(absl::UnknownError("not run"));
  std::atomic<size_t> reading{paths.size()};
  arena.execute([&] {
    tbb::parallel_for(
        size_t{0}, paths.size(),
        [&](size_t i) {
          results[i] = RunGraph(paths[i], classifier, options, static_cast<size_t>(threads),
                                options.progress ? &progress : nullptr, i);
          if (--reading == 0) ReleaseParsers();
        },
        tbb::simple_partitioner());
  });
  std::vector<TraceProfile> profiles;
  for (auto& r : results) {
    if (!r.ok()) return r.status();
    profiles.push_back(std::move(*r));
  }
  return profiles;
}

}  // namespace

absl::StatusOr<TraceMetadata> ReadLeadingMetadata(const std::string& path) {
  absl::StatusOr<TraceFormat> format = DetectTraceFormat(path);
  if (!format.ok()) return format.status();
  if (*format != TraceFormat::kKineto) {  // no top-level keys, and no rank
    TraceMetadata metadata;
    metadata.format = *format;
    return metadata;
  }
  absl::StatusOr<std::unique_ptr<ByteSource>> bytes = OpenSource(path);
  if (!bytes.ok()) return bytes.status();
  EventSplitter splitter(path);
  std::vector<EventChunk> chunks;  // dropped: only the keys before the events are wanted
  while (!splitter.events_started()) {
    Block block;
    absl::StatusOr<bool> more = (*bytes)->Next(&block);
    if (!more.ok()) return more.status();
    if (!*more) {
      absl::Status finished = splitter.Finish();
      if (!finished.ok()) return finished;
      return ParseTraceMetadata(splitter.metadata_json(), path);
    }
    absl::Status fed = splitter.Feed(block, &chunks);
    if (!fed.ok()) return fed;
    chunks.clear();
  }
  return LeadingMetadata(splitter, path);
}

absl::StatusOr<std::vector<TraceProfile>> ProfileTraces(
    const std::vector<std::string>& paths, std::shared_ptr<const Classifier> classifier,
    const PipelineOptions& options) {
  const int threads = ThreadCount(options);
  tbb::task_arena arena(threads);
  return ProfileInArena(arena, threads, paths, std::move(classifier), options);
}

namespace {

// RecordsCpuOperators() refuses, for the op-level comparison, an imported trace without operator
// ranges: the vendors' profilers record PyTorch's operators only as NVTX or roctx ranges, where
// torch.autograd.profiler.emit_nvtx() wrote them.
absl::Status RecordsCpuOperators(const PerSide<TraceProfile>& traces) {
  for (Side side : kSides) {
    const TraceProfile& p = traces[side];
    if (p.metadata.format == TraceFormat::kKineto || HasCpuOps(p)) continue;
    return UnsupportedTraceError(
        StrCat(p.path, ": ", TraceFormatName(p.metadata.format),
               " without operator ranges, which the op-level comparison aligns: profile with "
               "torch.autograd.profiler.emit_nvtx(), or with torch.profiler, or compare without "
               "--by-op"));
  }
  return absl::OkStatus();
}

// OpLinks are the op trees of two traces.
struct OpLinks {
  PerSide<OpTree> trees;

  // Link() builds both trees at once, in `arena`, once the traces are read: the parsers' buffers
  // are free for them by then. The CPU side is not needed past the tree.
  void Link(tbb::task_arena& arena, PerSide<TraceProfile>* traces) {
    arena.execute([&] {
      tbb::parallel_for(size_t{0}, size_t{2},
                        [&](size_t i) { trees[kSides[i]] = TakeOpTree(&(*traces)[kSides[i]]); });
    });
  }

  // Compare() aligns the two trees and finds their fusion differences, while the kernel records
  // are still there.
  OpComparison Compare(const PerSide<TraceProfile>& traces, const OpCompareOptions& options) {
    OpComparison ops = CompareOps({{&traces[Side::kTrace1], &traces[Side::kTrace2]}},
                                  {{&trees[Side::kTrace1], &trees[Side::kTrace2]}}, options);
    FindFusionDifferences({{&traces[Side::kTrace1], &traces[Side::kTrace2]}},
                          {{&trees[Side::kTrace1], &trees[Side::kTrace2]}}, &ops);
    return ops;
  }
};

// AddGraphReplayTypes() gives the top instances that are graph replays on `side` their kernels'
// categories, in start order.
void AddGraphReplayTypes(const TraceProfile& profile, const OpTree& tree, Side side,
                         std::vector<MatchedInstance>* instances) {
  std::vector<uint32_t> units;
  for (const MatchedInstance& m : *instances) {
    if (m.graph[side]) units.push_back(m.units[side]);
  }
  if (units.empty()) return;
  const std::vector<std::vector<CategoryId>> types = KernelTypesOf(profile, tree, units);
  size_t next = 0;
  for (MatchedInstance& m : *instances) {
    if (!m.graph[side]) continue;
    for (CategoryId c : types[next++]) m.types[side].push_back(profile.category_name(c));
  }
}

// CompareLinkedOperators() compares the operators of two traces linked by `links`, whose kernel
// records were kept: what `ops` and `compare --by-op` report alike. The kernel records are then
// let go of, unless `keep_kernels`.
OpComparison CompareLinkedOperators(OpLinks* links, PerSide<TraceProfile>* traces,
                                    const OpCompareOptions& compare, bool keep_kernels) {
  OpComparison ops = links->Compare(*traces, compare);
  tbb::parallel_for(size_t{0}, size_t{2}, [&](size_t i) {
    const Side side = kSides[i];
    AddGraphReplayTypes((*traces)[side], links->trees[side], side, &ops.top_instances);
    if (!keep_kernels) (*traces)[side].kernels = KernelStream();
  });
  return ops;
}

}  // namespace

absl::StatusOr<Comparison> CompareTraces(const std::string& path1, const std::string& path2,
                                         std::shared_ptr<const Classifier> classifier,
                                         const PipelineOptions& options,
                                         const FusionOptions& fusion,
                                         const OpCompareOptions* by_op) {
  const int threads = ThreadCount(options);
  tbb::task_arena arena(threads);
  auto started = std::chrono::steady_clock::now();
  PipelineOptions reading = options;
  reading.host_activity = by_op != nullptr;
  if (by_op != nullptr) reading.keep_kernel_records = true;  // the top instances' kernel types
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileInArena(arena, threads, {path1, path2}, std::move(classifier), reading);
  if (!profiles.ok()) return profiles.status();
  Comparison c;
  c.traces = {{std::move((*profiles)[0]), std::move((*profiles)[1])}};
  if (by_op != nullptr) {
    if (absl::Status st = RecordsCpuOperators(c.traces); !st.ok()) return st;
  }
  OpLinks links;
  if (by_op != nullptr) links.Link(arena, &c.traces);
  auto merged = std::chrono::steady_clock::now();
  c.read_seconds = std::chrono::duration<double>(merged - started).count();
  arena.execute([&] {
    c.report = AnalyzeFusion(c.traces[Side::kTrace1], c.traces[Side::kTrace2], fusion);
    if (by_op != nullptr) {
      c.ops = CompareLinkedOperators(&links, &c.traces, *by_op, options.keep_kernel_records);
      if (options.keep_placement) c.trees = std::move(links.trees);
    }
  });
  c.analyze_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - merged).count();
  return c;
}

absl::StatusOr<OperatorComparison> CompareOperators(const std::string& path1,
                                                    const std::string& path2,
                                                    std::shared_ptr<const Classifier> classifier,
                                                    PipelineOptions options,
                                                    const OpCompareOptions& compare) {
  const int threads = ThreadCount(options);
  tbb::task_arena arena(threads);
  auto started = std::chrono::steady_clock::now();
  options.keep_kernel_records = true;
  options.host_activity = true;
  OperatorComparison c;
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileInArena(arena, threads, {path1, path2}, std::move(classifier), options);
  if (!profiles.ok()) return profiles.status();
  c.traces = {{std::move((*profiles)[0]), std::move((*profiles)[1])}};
  if (absl::Status st = RecordsCpuOperators(c.traces); !st.ok()) return st;
  OpLinks links;
  links.Link(arena, &c.traces);
  auto read = std::chrono::steady_clock::now();
  c.read_seconds = std::chrono::duration<double>(read - started).count();
  arena.execute([&] {
    c.ops = CompareLinkedOperators(&links, &c.traces, compare, options.keep_placement);
    c.trees = std::move(links.trees);
  });
  c.analyze_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - read).count();
  return c;
}

}  // namespace tracefuse
