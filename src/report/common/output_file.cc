#include "tracefuse/report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {

absl::StatusOr<OutputFile> OutputFile::Open(const std::string& path, OnInterrupt on_interrupt,
                                            Durability durability) {
  OutputFile f;
  f.path_ = path;
  f.on_interrupt_ = on_interrupt;
  f.durability_ = durability;
  if (path == "-") {
    f.fd_ = STDOUT_FILENO;
    return f;
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device or a pipe (-o /dev/null, -o /dev/stdout, a FIFO) is written where it is: renaming
    // a file over it would replace the device, and it holds no partial file to protect.
    f.fd_ = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (f.fd_ < 0) return absl::UnavailableError(StrCat(path, ": ", std::strerror(errno)));
    f.direct_ = true;
    return f;
  }
  f.tmp_ = StrCat(path, ".tmp.", getpid());
  f.fd_ = open(f.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return absl::UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  return f;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)),
      tmp_(std::move(o.tmp_)),
      fd_(o.fd_),
      failed_(o.failed_),
      direct_(o.direct_),
      on_interrupt_(o.on_interrupt_),
      durability_(o.durability_) {
  o.fd_ = -1;
  o.tmp_.clear();
}

OutputFile::~OutputFile() {
  if (direct_ && fd_ >= 0) close(fd_);
  if (!tmp_.empty()) {  // not committed: leave nothing behind
    if (fd_ >= 0) close(fd_);
    unlink(tmp_.c_str());
  }
}

absl::Status OutputFile::Append(std::string_view data) {
  if (InterruptSignal() != 0 && on_interrupt_ == OnInterrupt::kAbandon) {
    failed_ = true;
    return InterruptedError(StrCat("while writing ", path_));
  }
  while (!data.empty() && !failed_) {
    ssize_t n = write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      return absl::UnavailableError(StrCat(path_, ": ", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return failed_ ? absl::UnavailableError(StrCat(path_, ": write failed")) : absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (direct_) {
    const int err = close(fd_) != 0 ? errno : 0;
    fd_ = -1;
    direct_ = false;
    if (err != 0) return absl::UnavailableError(StrCat(path_, ": ", std::strerror(err)));
    return absl::OkStatus();
  }
  if (tmp_.empty()) return absl::OkStatus();  // standard output
  if (InterruptSignal() != 0 && on_interrupt_ == OnInterrupt::kAbandon)
    return InterruptedError(StrCat("before ", path_, " was complete"));
  int err = 0;
  if ((durability_ == Durability::kMachine && fsync(fd_) != 0) || close(fd_) != 0) err = errno;
  fd_ = -1;
  if (err == 0 && rename(tmp_.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) return absl::UnavailableError(StrCat(path_, ": ", std::strerror(err)));
  tmp_.clear();
  return absl::OkStatus();
}

absl::Status WriteStreamedOutput(const std::string& path,
                                 const std::function<absl::Status(OutputFile*)>& write,
                                 OutputFile::OnInterrupt on_interrupt,
                                 OutputFile::Durability durability) {
  absl::StatusOr<OutputFile> out = OutputFile::Open(path, on_interrupt, durability);
  if (!out.ok()) return out.status();
  absl::Status st = write(&*out);
  if (!st.ok()) return st;
  return out->Commit();
}

absl::Status WriteOutput(const std::string& path, std::string_view content,
                         OutputFile::OnInterrupt on_interrupt, OutputFile::Durability durability) {
  return WriteStreamedOutput(
      path, [content](OutputFile* out) { return out->Append(content); }, on_interrupt, durability);
}

absl::Status SyncToDisk(const std::string& path) {
  if (path == "-") return absl::OkStatus();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 && fsync(fd) != 0) err = errno;
  if (fd >= 0) close(fd);
  if (err != 0) return absl::UnavailableError(StrCat(path, ": ", std::strerror(err)));
  return absl::OkStatus();
}

}  // namespace tracefuse
