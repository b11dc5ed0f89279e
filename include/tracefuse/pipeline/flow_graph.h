// Library tracefuse_pipeline (after analyze): the flow graph, the one place where the stages are
// wired together.
//
//   source (serial: read, cut into chunks) -> limiter -> parse + classify (parallel)
//     -> sequencer -> reduce (serial, in input order) -> back to the limiter
//
// The limiter bounds the chunks in flight, and with them the memory held, whatever the file size.
// Results do not depend on the thread count: chunks are reduced in input order. The source looks
// at only a few bytes per chunk (see EventChunker): a speculative cut is validated by the chunk's
// parse, and when one is rejected the chunks from it on are discarded and the trace is read again
// from there, cut exactly.
#ifndef TRACEFUSE_PIPELINE_FLOW_GRAPH_H_
#define TRACEFUSE_PIPELINE_FLOW_GRAPH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/reduce/op_tree.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

struct ProgressUpdate {
  uint64_t file_bytes_read = 0;   // on disk, all traces together
  uint64_t file_bytes_total = 0;  // 0 when unknown (pipes)
  uint64_t input_bytes = 0;       // uncompressed bytes scanned
};

struct PipelineOptions {
  int threads = 0;  // 0: DefaultThreadCount()
  size_t chunk_bytes = 2u << 20;
  size_t window_bytes = 2u << 20;
  // Keep the per-kernel stream (about 6.4 bytes per kernel). Only the fusion analysis needs it;
  // without it memory is bounded by distinct names and correlation groups, not by kernels.
  bool keep_kernel_records = true;
  // Read the CPU side (ops, annotations, module frames, runtime calls: TraceProfile::host), for
  // the op-level comparison.
  bool host_activity = false;
  // Keep each device's figures per profiler step, and the steps' names (GpuTimeline; `stats
  // --format json` lists them); else only each step's GPU span, 32 bytes a step.
  bool step_figures = false;
  // Nest the CPU side as it arrives (CpuSideStream), falling back to the any-order path per
  // trace (op_tree.h); false: the any-order path, 32 bytes per CPU event, for every trace.
  bool stream_cpu_side = true;
  // Cut chunks speculatively between events (see EventChunker); false: scan every byte exactly.
  // Standard input and other streams that cannot be read twice are always scanned exactly.
  bool speculative_cuts = true;
  // An event larger than this is an error (see SplitterOptions::max_event_bytes).
  uint64_t max_event_bytes = kDefaultMaxEventBytes;
  // `--lenient`: a trace cut short (a profiler killed while writing) is read up to its last
  // complete event, and TraceProfile::truncated says what was dropped.
  bool salvage_truncated = false;
  // Classify the kernels that the rule set leaves in its default category by the ops that
  // launched them (ClassifyByLaunchingOp() in op_tree.h; TraceProfile::by_op), for the rule sets
  // ClassifiesByLaunchingOp() accepts. Without host_activity, a trace with such names and
  // cpu_ops is read a second time, with its CPU side; with it, TakeOpTree() classifies.
  bool classify_by_launching_op = false;
  // Keep, with the kernel records, each kernel's device and stream, each memcpy and memset with
  // its name, and (with host_activity) each top-level op's span: what a Perfetto trace draws
  // (TraceReducer::KeepPlacement()). About two bytes a kernel and 40 a transfer more.
  bool keep_placement = false;
  // With host_activity: name the cpu_ops the GPU waited on in each device's idle split
  // (IdleSplit::cpu_ops), holding each thread's top-level ops and each launch's thread while the
  // trace is read (on the generated 1 GB pair, 28 MB of ops' peak). The Perfetto output, which
  // draws no idle causes, does without.
  bool idle_cpu_ops = true;
  // Called from the reading stage, at most once per block; must be thread-safe.
  std::function<void(const ProgressUpdate&)> progress;
};

// Tells glibc to keep freed memory for reuse instead of returning it to the kernel, in one heap
// for all threads: faulting a fresh 4 KiB page costs about 15 us on these machines (0.3 GB/s),
// so memory freed by the reading stages is worth recycling for the analysis; and puts the heap's
// first 64 MiB on transparent huge pages, for the same cost. Call once, early, from a program's
// main.
void KeepFreedMemoryForReuse();

// SLURM_CPUS_PER_TASK when set to a positive number, else the CPUs this process may run on.
int DefaultThreadCount();

// Streams the traces (concurrently, sharing the threads) and returns one profile per path, in
// order. Errors name the file; see cli for the exit code of each kind.
absl::StatusOr<std::vector<TraceProfile>> ProfileTraces(
    const std::vector<std::string>& paths, std::shared_ptr<const Classifier> classifier,
    const PipelineOptions& options);

// ReadLeadingMetadata() reads a trace only as far as its `traceEvents` array and parses the
// top-level keys before it (Kineto writes deviceProperties and distributedInfo there): a few
// kilobytes of a multi-gigabyte file. A file without events is read whole. A file of another
// format (importer.h) gives its format only.
absl::StatusOr<TraceMetadata> ReadLeadingMetadata(const std::string& path);

// Comparison is what CompareTraces() returns.
struct Comparison {
  PerSide<TraceProfile> traces;
  FusionReport report;
  // `compare --by-op`: the op-level comparison, for its fusion differences; nullopt without.
  std::optional<OpComparison> ops;
  // `compare --by-op` with PipelineOptions::keep_placement: each trace's op tree; empty otherwise.
  PerSide<OpTree> trees;
  double read_seconds = 0;     // both traces streamed and reduced, concurrently
  double analyze_seconds = 0;  // the final merge stage
};

// Profiles both traces concurrently, then merges them into a fusion report, all on the same
// `options.threads` threads. With `by_op`, it also reads the CPU side, compares the traces op by
// op (as CompareOperators()) and finds their fusion differences, in the same pass.
absl::StatusOr<Comparison> CompareTraces(const std::string& path1, const std::string& path2,
                                         std::shared_ptr<const Classifier> classifier,
                                         const PipelineOptions& options,
                                         const FusionOptions& fusion,
                                         const OpCompareOptions* by_op = nullptr);

// OperatorComparison is what CompareOperators() returns.
struct OperatorComparison {
  // Without their kernel records (kept with PipelineOptions::keep_placement) and CPU side, once
  // linked.
  PerSide<TraceProfile> traces;
  PerSide<OpTree> trees;
  OpComparison ops;
  double read_seconds = 0;     // both traces streamed, reduced and linked to their ops
  double analyze_seconds = 0;  // the alignment
};

// CompareOperators() profiles both traces with their CPU side, links each trace's kernels to its
// ops and compares the two op by op (`tracefuse ops`).
absl::StatusOr<OperatorComparison> CompareOperators(const std::string& path1,
                                                    const std::string& path2,
                                                    std::shared_ptr<const Classifier> classifier,
                                                    PipelineOptions options,
                                                    const OpCompareOptions& compare);

}  // namespace tracefuse

#endif  // TRACEFUSE_PIPELINE_FLOW_GRAPH_H_
