#include "tracefuse/pipeline.h"

#include <malloc.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "fmt/ranges.h"
#include "oneapi/tbb/enumerable_thread_specific.h"
#include "oneapi/tbb/flow_graph.h"
#include "oneapi/tbb/parallel_for.h"
#include "oneapi/tbb/task_arena.h"
#include "tracefuse/io.h"
#include "tracefuse/parse.h"
#include "tracefuse/scan.h"
#include "tracefuse/strings.h"

namespace tracefuse {

void KeepFreedMemoryForReuse() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
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

// One ChunkParser per thread for the whole process: their buffers are allocated (and
// page-faulted) once, then reused by every chunk of every trace.
tbb::enumerable_thread_specific<ChunkParser>& Parsers() {
  static tbb::enumerable_thread_specific<ChunkParser> parsers;
  return parsers;
}

struct Work {
  EventChunk chunk;
  ParsedChunk parsed;
};

// Work items, recycled: a ParsedChunk keeps its vectors' capacity between uses. The limiter
// bounds how many are live (the source node may hold one more while the limiter is full).
class WorkPool {
 public:
  Work* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return &items_.emplace_back();
    Work* w = free_.back();
    free_.pop_back();
    return w;
  }
  void Release(Work* w) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(w);
  }

 private:
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

absl::StatusOr<TraceProfile> RunGraph(const std::string& path,
                                      std::shared_ptr<const Classifier> classifier,
                                      const PipelineOptions& options, size_t threads,
                                      SharedProgress* progress, size_t trace_index) {
  auto started = std::chrono::steady_clock::now();
  SourceOptions source_options;
  source_options.window_bytes = options.window_bytes;
  absl::StatusOr<std::unique_ptr<ByteSource>> opened = OpenSource(path, source_options);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<ByteSource> source = std::move(*opened);

  SplitterOptions split_options;
  split_options.chunk_bytes = options.chunk_bytes;
  EventSplitter splitter(path, split_options);
  TraceReducer reducer(classifier, options.keep_kernel_records);

  // Names are classified with the platform known when events start (from the keys before
  // traceEvents); the reducer re-classifies if the final detection differs.
  std::atomic<Platform> classify_platform{Platform::kUnknown};
  bool platform_checked = false;

  const size_t in_flight = 2 * threads + 2;
  WorkPool pool;
  std::deque<EventChunk> pending;
  std::vector<EventChunk> produced;
  absl::Status source_error, reduce_error;
  std::atomic<bool> stop{false};
  bool input_done = false;

  using RuleCache = StringMap<RuleId>;
  tbb::enumerable_thread_specific<RuleCache> rule_caches;

  tbb::flow::graph g;
  tbb::flow::input_node<Work*> read_and_split(g, [&](tbb::flow_control& fc) -> Work* {
    while (pending.empty()) {
      if (input_done || stop.load(std::memory_order_relaxed)) {
        fc.stop();
        return nullptr;
      }
      Block block;
      absl::StatusOr<bool> more = source->Next(&block);
      absl::Status st;
      produced.clear();
      if (!more.ok()) {
        st = more.status();
      } else if (!*more) {
        st = splitter.Finish();
        input_done = true;
      } else {
        st = splitter.Feed(block, &produced);
      }
      if (!st.ok()) {
        source_error = st;
        fc.stop();
        return nullptr;
      }
      if (!platform_checked && splitter.events_started()) {
        platform_checked = true;
        if (!splitter.bare_array()) {
          absl::StatusOr<TraceMetadata> early =
              ParseTraceMetadata(splitter.metadata_json() + "]}", path);
          if (early.ok()) {
            std::string why;
            classify_platform = DetectPlatform(*early, {}, {}, &why);
          }
        }
      }
      for (EventChunk& c : produced) pending.push_back(std::move(c));
      if (progress != nullptr) {
        progress->Update(trace_index, source->file_bytes_read(), source->file_bytes(),
                         splitter.bytes_scanned());
      }
    }
    Work* w = pool.Acquire();
    w->chunk = std::move(pending.front());
    pending.pop_front();
    return w;
  });

  tbb::flow::limiter_node<Work*> limiter(g, in_flight);
  tbb::flow::function_node<Work*, Work*> parse_and_classify(
      g, tbb::flow::unlimited, [&](Work* w) -> Work* {
        if (stop.load(std::memory_order_relaxed)) {
          w->parsed.seq = w->chunk.seq;
          w->chunk.pieces.clear();
          return w;
        }
        ParsedChunk& parsed = w->parsed;
        parsed.status = Parsers().local().Parse(w->chunk, path, &parsed);
        w->chunk.pieces.clear();  // release the input blocks as early as possible
        parsed.seq = w->chunk.seq;
        if (parsed.status.ok()) {
          RuleCache& cache = rule_caches.local();
          Platform platform = classify_platform.load(std::memory_order_relaxed);
          parsed.name_rule.resize(parsed.name_count());
          for (size_t i = 0; i < parsed.name_count(); ++i) {
            std::string_view name = parsed.name(i);
            auto it = cache.find(name);
            if (it == cache.end()) {
              it = cache.emplace(std::string(name), classifier->Classify(name, platform)).first;
            }
            parsed.name_rule[i] = it->second;
          }
        }
        return w;
      });
  tbb::flow::sequencer_node<Work*> in_order(g, [](Work* const& w) { return w->parsed.seq; });
  tbb::flow::function_node<Work*, tbb::flow::continue_msg> reduce(
      g, tbb::flow::serial, [&](Work* w) {
        if (reduce_error.ok() && !stop.load(std::memory_order_relaxed)) {
          if (w->parsed.status.ok()) {
            reducer.Consume(w->parsed);
          } else {
            reduce_error = w->parsed.status;
            stop = true;
          }
        }
        pool.Release(w);
        return tbb::flow::continue_msg();
      });

  tbb::flow::make_edge(read_and_split, limiter);
  tbb::flow::make_edge(limiter, parse_and_classify);
  tbb::flow::make_edge(parse_and_classify, in_order);
  tbb::flow::make_edge(in_order, reduce);
  tbb::flow::make_edge(reduce, limiter.decrementer());
  read_and_split.activate();
  g.wait_for_all();

  // An error inside a chunk comes before any error the reader met further on.
  if (!reduce_error.ok()) return reduce_error;
  if (!source_error.ok()) return source_error;
  if (!splitter.events_started()) {
    absl::StatusOr<TraceMetadata> meta = ParseTraceMetadata(splitter.metadata_json(), path);
    std::string keys = meta.ok() ? fmt::format("{}", fmt::join(meta->keys, ", ")) : "";
    return absl::InvalidArgumentError(
        StrCat(path, ": not a Kineto trace: no traceEvents array",
               keys.empty() ? "" : StrCat(" (top-level keys: ", keys, ")")));
  }
  if (splitter.metadata_truncated()) {
    return absl::InvalidArgumentError(
        StrCat(path,
               ": unsupported trace: its top-level keys other than traceEvents hold more "
               "than 64 MiB"));
  }
  absl::StatusOr<TraceMetadata> meta = ParseTraceMetadata(splitter.metadata_json(), path);
  if (!meta.ok()) return meta.status();

  TraceProfile profile = reducer.Finish(std::move(*meta), classify_platform.load());
  profile.path = path;
  profile.input_bytes = splitter.bytes_scanned();
  profile.file_bytes = source->compressed() ? source->file_bytes_read() : splitter.bytes_scanned();
  profile.compressed = source->compressed();
  profile.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return profile;
}

}  // namespace

namespace {

absl::StatusOr<std::vector<TraceProfile>> ProfileInArena(
    tbb::task_arena& arena, int threads, const std::vector<std::string>& paths,
    std::shared_ptr<const Classifier> classifier, const PipelineOptions& options) {
  SharedProgress progress(options, paths);
  std::vector<absl::StatusOr<TraceProfile>> results;
  for (size_t i = 0; i < paths.size(); ++i) results.emplace_back(absl::UnknownError("not run"));
  arena.execute([&] {
    tbb::parallel_for(
        size_t{0}, paths.size(),
        [&](size_t i) {
          results[i] = RunGraph(paths[i], classifier, options, static_cast<size_t>(threads),
                                options.progress ? &progress : nullptr, i);
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

absl::StatusOr<std::vector<TraceProfile>> ProfileTraces(
    const std::vector<std::string>& paths, std::shared_ptr<const Classifier> classifier,
    const PipelineOptions& options) {
  const int threads = options.threads > 0 ? options.threads : DefaultThreadCount();
  tbb::task_arena arena(threads);
  return ProfileInArena(arena, threads, paths, std::move(classifier), options);
}

absl::StatusOr<Comparison> CompareTraces(const std::string& path1, const std::string& path2,
                                         std::shared_ptr<const Classifier> classifier,
                                         const PipelineOptions& options,
                                         const FusionOptions& fusion) {
  const int threads = options.threads > 0 ? options.threads : DefaultThreadCount();
  tbb::task_arena arena(threads);
  auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileInArena(arena, threads, {path1, path2}, std::move(classifier), options);
  if (!profiles.ok()) return profiles.status();
  Comparison c;
  c.traces = std::move(*profiles);
  auto merged = std::chrono::steady_clock::now();
  c.read_seconds = std::chrono::duration<double>(merged - started).count();
  arena.execute([&] { c.report = AnalyzeFusion(c.traces[0], c.traces[1], fusion); });
  c.analyze_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - merged).count();
  return c;
}

}  // namespace tracefuse
