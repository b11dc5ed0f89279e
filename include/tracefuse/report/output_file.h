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
// uncommitted removes the temporary. "-" is standard output. Append() may be called many times,
// so a large report is streamed rather than built in memory.
class OutputFile {
 public:
  // OnInterrupt says what an output does once SIGTERM or SIGINT has arrived (interrupt.h): a
  // report is abandoned, so no partial file is committed; a record of the interruption (batch's
  // status file) is finished.
  enum class OnInterrupt { kAbandon, kFinish };

  static absl::StatusOr<OutputFile> Open(const std::string& path,
                                         OnInterrupt on_interrupt = OnInterrupt::kAbandon);
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
  OnInterrupt on_interrupt_ = OnInterrupt::kAbandon;
};

// WriteStreamedOutput() opens `path` as an OutputFile, lets `write` append to it and commits it
// when `write` succeeds: a report streamed as it is made.
absl::Status WriteStreamedOutput(
    const std::string& path, const std::function<absl::Status(OutputFile*)>& write,
    OutputFile::OnInterrupt on_interrupt = OutputFile::OnInterrupt::kAbandon);

// WriteOutput() writes `content` to `path` as one OutputFile, for outputs small enough to be
// built in memory first.
absl::Status WriteOutput(const std::string& path, std::string_view content,
                         OutputFile::OnInterrupt on_interrupt = OutputFile::OnInterrupt::kAbandon);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_OUTPUT_FILE_H_
