#include "tracefuse/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/host.h"
#include "tracefuse/interrupt.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

absl::Status ErrnoStatus(const std::string& path, int err) {
  std::string msg = StrCat(path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

// Fixed-size buffers recycled through a free list: a freed buffer goes back to the pool when the
// last Block referring to it is dropped, so steady-state reading allocates (and page-faults)
// nothing new.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(size_t buffer_bytes) : buffer_bytes_(buffer_bytes) {}

  std::shared_ptr<char> Acquire() {
    char* raw = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        raw = free_.back().release();
        free_.pop_back();
      }
    }
    if (raw == nullptr) raw = new char[buffer_bytes_];
    std::weak_ptr<BufferPool> pool = weak_from_this();
    return std::shared_ptr<char>(raw, [pool](char* p) {
      if (auto alive = pool.lock()) {
        std::lock_guard<std::mutex> lock(alive->mu_);
        alive->free_.emplace_back(p);
      } else {
        delete[] p;
      }
    });
  }
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  size_t buffer_bytes_;
  std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> free_;
};

class FdHolder {
 public:
  explicit FdHolder(int fd) : fd_(fd) {}
  ~FdHolder() {
    if (fd_ > 2) close(fd_);
  }
  FdHolder(const FdHolder&) = delete;
  FdHolder& operator=(const FdHolder&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// read() into pooled buffers, for regular files and pipes alike. Measured on this project's VMs
// (1 GB trace, warm page cache): read() into a reused buffer runs at 12-13 GB/s, while mmap
// windows with MAP_POPULATE, or MADV_POPULATE_READ on one mapping, deliver 2.4-2.7 GB/s because
// every window's page-table set-up and tear-down goes through the hypervisor.
class ReadSource : public ByteSource {
 public:
  ReadSource(std::string path, int fd, bool regular, uint64_t size, size_t buffer)
      : ByteSource(std::move(path)),
        fd_(fd),
        regular_(regular),
        size_(size),
        pool_(std::make_shared<BufferPool>(buffer)) {}

  absl::StatusOr<bool> Next(Block* block) override {
    if (peeked_) {
      *block = std::move(*peeked_);
      peeked_.reset();
      return true;
    }
    if (eof_) return false;
    std::shared_ptr<char> buf = pool_->Acquire();
    size_t have = 0;
    while (have < pool_->buffer_bytes()) {
      if (InterruptSignal() != 0) {
        return InterruptedError(StrCat("after ", pos_ + have, " bytes of ", path()));
      }
      ssize_t n = read(fd_.get(), buf.get() + have, pool_->buffer_bytes() - have);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path(), errno);
      }
      if (n == 0) {
        eof_ = true;
        break;
      }
      have += static_cast<size_t>(n);
    }
    if (have == 0) return false;
    block->data = buf.get();
    block->size = have;
    block->offset = pos_;
    block->owner = std::move(buf);
    pos_ += have;
    return true;
  }
  uint64_t file_bytes() const override { return size_; }
  uint64_t file_bytes_read() const override { return pos_; }

  bool random_access() const override { return regular_; }
  absl::Status ReadAt(uint64_t offset, size_t size, char* out) const override {
    size_t have = 0;
    while (have < size) {
      if (InterruptSignal() != 0) {
        return InterruptedError(StrCat("at byte ", offset + have, " of ", path()));
      }
      ssize_t n = pread(fd_.get(), out + have, size - have, static_cast<off_t>(offset + have));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(path(), errno);
      }
      if (n == 0) {
        return absl::UnavailableError(
            StrCat(path(), ": the file shrank while it was read (", offset + have, " bytes left)"));
      }
      have += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }
  void SeekTo(uint64_t offset) override {
    if (offset == pos_ && !peeked_) return;
    peeked_.reset();
    pos_ = offset;
    eof_ = false;
    lseek(fd_.get(), static_cast<off_t>(offset), SEEK_SET);
  }

  // Whether the input starts with gzip's magic bytes. Reads (and keeps for Next) the first block,
  // so it works on pipes too.
  absl::StatusOr<bool> StartsWithGzipMagic() {
    if (!peeked_) {
      Block first;
      absl::StatusOr<bool> more = Next(&first);
      if (!more.ok()) return more.status();
      if (!*more) return false;
      peeked_ = std::move(first);
    }
    return peeked_->size >= 2 && static_cast<unsigned char>(peeked_->data[0]) == 0x1f &&
           static_cast<unsigned char>(peeked_->data[1]) == 0x8b;
  }

 private:
  FdHolder fd_;
  bool regular_;
  uint64_t size_;  // 0 for pipes
  std::optional<Block> peeked_;
  std::shared_ptr<BufferPool> pool_;
  uint64_t pos_ = 0;
  bool eof_ = false;
};

// Streaming inflate of gzip (and concatenated gzip members) from another source.
class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> inner, size_t buffer)
      : ByteSource(inner->path()),
        inner_(std::move(inner)),
        pool_(std::make_shared<BufferPool>(buffer)) {
    std::memset(&zs_, 0, sizeof(zs_));
    inflateInit2(&zs_, 15 + 16);
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  absl::StatusOr<bool> Next(Block* block) override {
    if (done_) return false;
    std::shared_ptr<char> buf = pool_->Acquire();
    zs_.next_out = reinterpret_cast<Bytef*>(buf.get());
    zs_.avail_out = static_cast<uInt>(pool_->buffer_bytes());
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0) {
        absl::StatusOr<bool> more = inner_->Next(&in_);
        if (!more.ok()) return more.status();
        if (!*more) {
          if (!member_ended_) {
            return absl::DataLossError(StrCat(path(), ": truncated gzip data after ",
                                              compressed_read(), " compressed bytes (",
                                              produced_ + Produced(buf.get()), " bytes inflated)"));
          }
          done_ = true;
          break;
        }
        zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data));
        zs_.avail_in = static_cast<uInt>(in_.size);
      }
      if (member_ended_) {
        // Another gzip member follows the previous one (as `cat a.gz b.gz` produces).
        inflateReset(&zs_);
        member_ended_ = false;
      }
      const double cpu = ThreadCpuSeconds();
      int rc = inflate(&zs_, Z_NO_FLUSH);
      inflate_cpu_seconds_ += ThreadCpuSeconds() - cpu;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return absl::DataLossError(StrCat(path(), ": corrupt gzip data near compressed byte ",
                                          compressed_read(), ": ",
                                          zs_.msg ? zs_.msg : "inflate failed"));
      }
    }
    size_t have = Produced(buf.get());
    if (have == 0) return false;
    block->data = buf.get();
    block->size = have;
    block->offset = produced_;
    block->owner = std::move(buf);
    produced_ += have;
    return true;
  }
  uint64_t file_bytes() const override { return inner_->file_bytes(); }
  uint64_t file_bytes_read() const override { return compressed_read(); }
  bool compressed() const override { return true; }
  double inflate_cpu_seconds() const override { return inflate_cpu_seconds_; }

 private:
  size_t Produced(const char* buf) const {
    return static_cast<size_t>(reinterpret_cast<const char*>(zs_.next_out) - buf);
  }
  uint64_t compressed_read() const { return in_.offset + (in_.size - zs_.avail_in); }

  std::unique_ptr<ByteSource> inner_;
  std::shared_ptr<BufferPool> pool_;
  z_stream zs_;
  Block in_;
  uint64_t produced_ = 0;
  bool member_ended_ = false;
  bool done_ = false;
  double inflate_cpu_seconds_ = 0;
};

}  // namespace

absl::Status ByteSource::ReadAt(uint64_t, size_t, char*) const {
  return absl::UnimplementedError(StrCat(path(), ": not a regular uncompressed file"));
}
void ByteSource::SeekTo(uint64_t) {}

absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(const std::string& path,
                                                       const SourceOptions& options) {
  int fd = path == "-" ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    if (fd > 2) close(fd);
    return ErrnoStatus(path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    if (fd > 2) close(fd);
    return absl::FailedPreconditionError(StrCat(path, ": is a directory"));
  }
  bool regular = S_ISREG(st.st_mode);
  if (regular && st.st_size == 0) {
    if (fd > 2) close(fd);
    return absl::InvalidArgumentError(StrCat(path, ": empty file"));
  }
  if (regular) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto raw = std::make_unique<ReadSource>(
      path, fd, regular, regular ? static_cast<uint64_t>(st.st_size) : 0, options.window_bytes);
  absl::StatusOr<bool> gzip = raw->StartsWithGzipMagic();
  if (!gzip.ok()) return gzip.status();
  if (*gzip) {
    return std::unique_ptr<ByteSource>(
        std::make_unique<GzipSource>(std::move(raw), options.window_bytes));
  }
  return std::unique_ptr<ByteSource>(std::move(raw));
}

}  // namespace tracefuse
