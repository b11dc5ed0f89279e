// Stage 7, report: where every command's output goes. Outputs are written atomically so that a
// failed or killed run never leaves a partial file behind for a script to pick up.
#ifndef TRACEFUSE_REPORT_OUTPUT_FILE_H_
#define TRACEFUSE_REPORT_OUTPUT_FILE_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tracefuse {

// OutputFile is an output written through a temporary file in the same directory and renamed
// into place by Commit(), so a failed or killed run never leaves a partial file; dropping it
// uncommitted removes the temporary. "-" is standard output; an existing path that is no regular
// file (/dev/null, a FIFO) is written directly. Append() may be called many times,
// so a large report is streamed rather than built in memory.
class OutputFile {
 public:
  // OnInterrupt says what an output does once SIGTERM or SIGINT has arrived (interrupt.h): a
  // report is abandoned, so no partial file is committed; a record of the interruption (batch's
  // status file) is finished.
  enum class OnInterrupt { kAbandon, kFinish };
  // Durability says what an output survives once committed. kProcess: the run being killed at
  // any point (the rename is atomic), as cp, sort -o or perf record promise; what the kernel
  // has not written yet is lost if the machine fails. kMachine: the machine failing too, by an
  // fsync before the rename, for what a later run trusts without reading the data (batch's
  // status files); it costs 2-7 ms a file here, a tenth of a 100 MB pair's run.
  enum class Durability { kProcess, kMachine };

  static absl::StatusOr<OutputFile> Open(const std::string& path,
                                         OnInterrupt on_interrupt = OnInterrupt::kAbandon,
                                         Durability durability = Durability::kProcess);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();
  absl::Status Append(std::string_view data);
  absl::Status Commit();

 private:
  OutputFile() = default;
  std::string path_;
  std::string tmp_;  // empty for standard output and once committed
  int fd_ = -1;
  bool failed_ = false;
  bool direct_ = false;  // a device or pipe, written in place
  OnInterrupt on_interrupt_ = OnInterrupt::kAbandon;
  Durability durability_ = Durability::kProcess;
};

// WriteStreamedOutput() opens `path` as an OutputFile, lets `write` append to it and commits it
// when `write` succeeds: a report streamed as it is made.
absl::Status WriteStreamedOutput(
    const std::string& path, const std::function<absl::Status(OutputFile*)>& write,
    OutputFile::OnInterrupt on_interrupt = OutputFile::OnInterrupt::kAbandon,
    OutputFile::Durability durability = OutputFile::Durability::kProcess);

// WriteOutput() writes `content` to `path` as one OutputFile, for outputs small enough to be
// built in memory first.
absl::Status WriteOutput(const std::string& path, std::string_view content,
                         OutputFile::OnInterrupt on_interrupt = OutputFile::OnInterrupt::kAbandon,
                         OutputFile::Durability durability = OutputFile::Durability::kProcess);

// SyncToDisk() writes a committed output's data to the disk (fsync): for an output written with
// Durability::kProcess that a later run will trust after all (batch's reports, before the status
// that vouches for them).
absl::Status SyncToDisk(const std::string& path);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_OUTPUT_FILE_H_
