// TraceImporter: reading the vendors' profiler files (Nsight Systems and rocpd SQLite, rocprofv3
// JSON) into the records that ChunkParser gives for Kineto traces. Part of the parse stage.
//
// Each format is one file in src/parse/ (docs/architecture.md, "Adding an input format"): it
// opens its file, reads the GPU's name and the platform from the format's own device tables, and
// hands out ParsedChunks of kernels, memcpy and memset activities, launches and step ranges in
// start order, a bounded number of records each. The stages after `parse` (classification,
// the reducer, the GPU timeline) take them as they take a Kineto trace's chunks.
#ifndef TRACEFUSE_PARSE_IMPORTER_H_
#define TRACEFUSE_PARSE_IMPORTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/parse/trace_format.h"

namespace tracefuse {

// DetectTraceFormat() tells a file's format by its content: the SQLite header and the tables it
// holds, or the first key of a (possibly compressed) JSON document. Anything else is kKineto,
// which the Kineto reader accepts or refuses with its own errors. Reads a few kilobytes.
absl::StatusOr<TraceFormat> DetectTraceFormat(const std::string& path);

// TaskGroup runs tasks on other threads while its caller goes on.
class TaskGroup {
 public:
  virtual ~TaskGroup() = default;
  // Run() starts `task`, now or later, on any thread.
  virtual void Run(std::function<void()> task) = 0;
  // Wait() returns once every task started has finished; the caller runs some meanwhile.
  virtual void Wait() = 0;
};

// ImportOptions says what an importer reads and how much it hands out at once.
struct ImportOptions {
  size_t chunk_records = 64 << 10;  // GPU activities and launches per chunk
  // Also read the CPU side (ParseOptions::host_activity): the launches' threads, and the NVTX or
  // roctx ranges as operators (PyTorch's emit_nvtx writes one per op), annotations and steps.
  bool host_activity = false;
  // new_task_group() gives a TaskGroup on the pipeline's threads; unset, an importer runs its
  // tasks itself, one after the other. Importers that parse their file apart (rocprofv3 JSON)
  // use it.
  std::function<std::unique_ptr<TaskGroup>()> new_task_group;
  // How many bytes of records each such task parses (PipelineOptions::chunk_bytes).
  size_t slice_bytes = 2u << 20;
};

// TraceImporter reads one file of a format other than kKineto.
class TraceImporter {
 public:
  virtual ~TraceImporter() = default;

  // Next() fills `chunk` (cleared first) with the next records, in start order across all of
  // them; false once every record has been handed out. Errors name the file.
  virtual absl::StatusOr<bool> Next(ParsedChunk* chunk) = 0;
  // metadata() is what the file's own tables say of its GPU and platform (TraceMetadata::format
  // and gpu_name).
  virtual const TraceMetadata& metadata() const = 0;
  // bytes_read() is how much of the input the records handed out so far cover (decompressed),
  // once they are all handed out; 0 before.
  virtual uint64_t bytes_read() const = 0;
  // file_bytes_covered() is how much of the file the records handed out so far stand for, for a
  // progress line: an estimate (the share of the records, or of the time they span), the whole
  // file once they are all handed out; 0 where the format gives no way to tell.
  virtual uint64_t file_bytes_covered() const = 0;
  // file_bytes() is the file's size on disk, and compression() how it is compressed ("gzip",
  // "zstd"; "" for none), as ByteSource says.
  virtual uint64_t file_bytes() const = 0;
  virtual std::string_view compression() const { return ""; }
};

// OpenTraceImporter() opens `path`, of `format` (not kKineto), for reading. An input that is not
// a valid file of its format is an error naming the file.
absl::StatusOr<std::unique_ptr<TraceImporter>> OpenTraceImporter(const std::string& path,
                                                                 TraceFormat format,
                                                                 const ImportOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_IMPORTER_H_
