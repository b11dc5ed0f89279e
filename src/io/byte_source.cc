#include "tracefuse/io/byte_source.h"

#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "tracefuse/base/host.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"

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
// nothing new. A padded pool's buffers have a byte before the pointer Acquire() gives and
// kBlockTailroom bytes after its buffer_bytes() (see Block::padded).
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(size_t buffer_bytes, bool padded = false)
      : buffer_bytes_(buffer_bytes), padded_(padded) {}

  // Acquire() returns a buffer for `bytes` (at most buffer_bytes()): a pooled one for a whole
  // block; one of its own, freed with its last Block, for less. A regular file's reads of less
  // than a block are its first block and its tail, a few per file, and a whole 2 MiB window for
  // them would take a fresh huge page of the heap for a few KB (docs/performance.md, "Small
  // files").
  std::shared_ptr<char> Acquire(size_t bytes) {
    const size_t before = padded_ ? 1 : 0, padding = padded_ ? 1 + kBlockTailroom : 0;
    if (bytes < buffer_bytes_) {
      char* raw = new char[bytes + padding];
      return std::shared_ptr<char>(raw + before, [before](char* p) { delete[](p - before); });
    }
    char* raw = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        raw = free_.back().release();
        free_.pop_back();
      }
    }
    if (raw == nullptr) raw = new char[buffer_bytes_ + padding];
    std::weak_ptr<BufferPool> pool = weak_from_this();
    return std::shared_ptr<char>(raw + before, [pool, before](char* p) {
      if (auto alive = pool.lock()) {
        std::lock_guard<std::mutex> lock(alive->mu_);
        alive->free_.emplace_back(p - before);
      } else {
        delete[](p - before);
      }
    });
  }
  // Acquire() without a size returns a whole block's buffer.
  std::shared_ptr<char> Acquire() { return Acquire(buffer_bytes_); }
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  size_t buffer_bytes_;
  bool padded_;
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
  static constexpr size_t kFirstBlockBytes = 64u << 10;

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
    const size_t want = BlockBytes();
    std::shared_ptr<char> buf = pool_->Acquire(want);
    size_t have = 0;
    while (have < want) {
      if (InterruptSignal() != 0) {
        return InterruptedError(StrCat("after ", pos_ + have, " bytes of ", path()));
      }
      ssize_t n = read(fd_.get(), buf.get() + have, want - have);
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

  // BlockBytes() is how much Next() reads. The first block is small: it is read to tell the
  // format and the trace's first keys, and a regular file's events are then read by the parallel
  // stage; a full window would fault in (about 1 ms for 2 MiB here) and copy bytes that nobody
  // parses. Nor does a regular file's block go past what is left of it (the tail after its last
  // chunk is often a few KB); past its end, where only a file that grew has more, a block is
  // small again.
  size_t BlockBytes() const {
    size_t bytes = pool_->buffer_bytes();
    if (pos_ == 0) bytes = std::min(bytes, kFirstBlockBytes);
    if (regular_) bytes = std::min<uint64_t>(bytes, pos_ < size_ ? size_ - pos_ : kFirstBlockBytes);
    return bytes;
  }

  // The first block of the input, read ahead (and kept for Next) so that its magic bytes can be
  // told on pipes too; empty for an empty input.
  absl::StatusOr<std::string_view> Peek() {
    if (!peeked_) {
      Block first;
      absl::StatusOr<bool> more = Next(&first);
      if (!more.ok()) return more.status();
      if (!*more) return std::string_view();
      peeked_ = std::move(first);
    }
    return std::string_view(peeked_->data, peeked_->size);
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

// A streaming decompressor of one format, fed the compressed stream piece by piece. Decode()
// works until the input is used up, the output is full or a frame ends (a gzip member, a zstd
// frame); a file may hold several frames one after the other (`cat a.gz b.gz`), so after a frame
// ends the caller calls NextFrame() before it decodes further.
class Decoder {
 public:
  struct Step {
    size_t consumed = 0;
    size_t produced = 0;
    bool frame_ended = false;
    const char* error = nullptr;  // why the data is corrupt; static storage
  };
  virtual ~Decoder() = default;
  virtual Step Decode(const char* in, size_t in_size, char* out, size_t out_size) = 0;
  virtual void NextFrame() = 0;

 protected:
  // zlib and ISA-L count bytes in 32 bits: larger windows are decoded a gigabyte at a time.
  static uint32_t Clamp32(size_t n) { return static_cast<uint32_t>(std::min<size_t>(n, 1u << 30)); }
};

// zlib: every gzip member whatever its header, at 35-40 % of ISA-L's speed (bench_inflate).
class ZlibInflater final : public Decoder {
 public:
  ZlibInflater() { inflateInit2(&zs_, 15 + 16); }
  ~ZlibInflater() override { inflateEnd(&zs_); }
  ZlibInflater(const ZlibInflater&) = delete;
  ZlibInflater& operator=(const ZlibInflater&) = delete;

  Step Decode(const char* in, size_t in_size, char* out, size_t out_size) override {
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
    zs_.avail_in = Clamp32(in_size);
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = Clamp32(out_size);
    const uInt in_given = zs_.avail_in, out_given = zs_.avail_out;
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    Step step{in_given - zs_.avail_in, out_given - zs_.avail_out, rc == Z_STREAM_END};
    if (rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) {
      step.error = zs_.msg != nullptr ? zs_.msg : "inflate failed";
    }
    return step;
  }
  void NextFrame() override { inflateReset(&zs_); }

 private:
  z_stream zs_{};
};

// Intel ISA-L's igzip: several times zlib's speed, for the gzip members GzipInflater gives it.
// A member's end leaves next_in at the next member: ISA-L reads the trailer and no further.
class IsalInflater final : public Decoder {
 public:
  IsalInflater() : state_(std::make_unique<inflate_state>()) {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;  // parses the header, checks the trailer's CRC and length
  }

  Step Decode(const char* in, size_t in_size, char* out, size_t out_size) override {
    state_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in));
    state_->avail_in = Clamp32(in_size);
    state_->next_out = reinterpret_cast<uint8_t*>(out);
    state_->avail_out = Clamp32(out_size);
    const uint32_t in_given = state_->avail_in, out_given = state_->avail_out;
    const int rc = isal_inflate(state_.get());
    Step step{in_given - state_->avail_in, out_given - state_->avail_out,
              state_->block_state == ISAL_BLOCK_FINISH};
    if (rc != ISAL_DECOMP_OK) step.error = Reason(rc);
    return step;
  }
  void NextFrame() override {
    isal_inflate_reset(state_.get());
    state_->crc_flag = ISAL_GZIP;
  }

 private:
  // zlib's words where zlib has the same error, so a corrupt file reads alike with either.
  static const char* Reason(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK:
        return "invalid block type or code lengths";
      case ISAL_INVALID_SYMBOL:
        return "invalid literal/length or distance code";
      case ISAL_INVALID_LOOKBACK:
        return "invalid distance too far back";
      case ISAL_INVALID_WRAPPER:
        return "incorrect header check";
      case ISAL_UNSUPPORTED_METHOD:
        return "unknown compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "incorrect data check";
      default:
        return "inflate failed";
    }
  }

  std::unique_ptr<inflate_state> state_;  // 85 KiB: on the heap
};

// GzipHeader finds where a gzip member's header ends (RFC 1952: ten bytes, then the extra field,
// file name, comment and header CRC that its flags announce) as the header arrives in pieces, and
// whether ISA-L may inflate the member.
class GzipHeader {
 public:
  enum class Verdict { kMore, kIsal, kZlib };

  // Takes the bytes of `in` up to the header's end, or up to the first byte that rules ISA-L out,
  // and returns how many it took.
  size_t Feed(const char* in, size_t size, Verdict* verdict) {
    size_t i = 0;
    while (i < size && field_ != Field::kDone) {
      if (field_ == Field::kName || field_ == Field::kComment) {  // up to a NUL byte
        const void* nul = std::memchr(in + i, '\0', size - i);
        const size_t end = nul == nullptr ? size : static_cast<const char*>(nul) - in + 1;
        seen_ += end - i;
        i = end;
        if (nul != nullptr) Advance();
        continue;
      }
      const unsigned char c = static_cast<unsigned char>(in[i++]);
      ++seen_;
      if (field_ == Field::kFixed && !IsalTakes(seen_ - 1, c)) {
        *verdict = Verdict::kZlib;
        return i;
      }
      if (field_ == Field::kFixed && seen_ == 4) flags_ = c;
      if (field_ == Field::kExtraLength) extra_length_ |= size_t{c} << (left_ == 2 ? 0 : 8);
      if (--left_ == 0) Advance();
    }
    *verdict = field_ == Field::kDone ? Verdict::kIsal
               : seen_ > kMaxBytes    ? Verdict::kZlib
                                      : Verdict::kMore;
    return i;
  }

 private:
  enum class Field { kFixed, kExtraLength, kExtra, kName, kComment, kHeaderCrc, kDone };
  static constexpr size_t kMaxBytes = 64 << 10;  // longer headers (huge names) go to zlib

  // The magic bytes, deflate, and no reserved flag: zlib rejects those ("unknown header flags
  // set") where ISA-L would not, and zlib's errors are the ones this tool has always given.
  static bool IsalTakes(size_t index, unsigned char c) {
    static constexpr unsigned char kExpected[] = {0x1f, 0x8b, Z_DEFLATED};
    return index >= 4 || (index == 3 ? (c & 0xe0) == 0 : c == kExpected[index]);
  }
  // Moves to the next field that the flags announce.
  void Advance() {
    const auto present = [this](unsigned flag) { return (flags_ & flag) != 0; };
    while (field_ != Field::kDone) {
      field_ = static_cast<Field>(static_cast<int>(field_) + 1);
      left_ = field_ == Field::kExtra ? extra_length_ : 2;
      if ((field_ == Field::kExtraLength && present(0x04)) ||
          (field_ == Field::kExtra && present(0x04) && extra_length_ > 0) ||
          (field_ == Field::kName && present(0x08)) ||
          (field_ == Field::kComment && present(0x10)) ||
          (field_ == Field::kHeaderCrc && present(0x02))) {
        return;
      }
    }
  }

  Field field_ = Field::kFixed;
  size_t left_ = 10;  // bytes still to come of a fixed-size field
  size_t seen_ = 0;
  unsigned flags_ = 0;
  size_t extra_length_ = 0;
};

// gzip, member by member: ISA-L inflates each member, given its header whole, in one piece: ISA-L
// 2.30 misreads a valid header that arrives in pieces (it rejects every header CRC so read, and
// a file name cut short before a comment makes it take the comment for deflate data), as happens
// where a member starts near the end of a read buffer. So the header is read first, and copied
// where it spans pieces. zlib takes the members ISA-L does not handle as zlib does: reserved flag
// bits, bytes that are no gzip header (trailing garbage), headers over 64 KiB.
class GzipInflater final : public Decoder {
 public:
  explicit GzipInflater(GzipInflaterKind kind) : kind_(kind) {}

  Step Decode(const char* in, size_t in_size, char* out, size_t out_size) override {
    if (member_ != nullptr) return member_->Decode(in, in_size, out, out_size);
    GzipHeader::Verdict verdict = GzipHeader::Verdict::kZlib;
    const size_t taken = kind_ == GzipInflaterKind::kZlib ? 0 : header_.Feed(in, in_size, &verdict);
    if (verdict == GzipHeader::Verdict::kMore) {
      head_.append(in, taken);
      return Step{taken, 0, false, nullptr};
    }
    member_ = verdict == GzipHeader::Verdict::kIsal ? static_cast<Decoder*>(&isal_) : &zlib_;
    if (head_.empty()) return member_->Decode(in, in_size, out, out_size);  // whole in this piece
    head_.append(in, taken);
    // A header alone: no output, and the inflater takes all of it.
    const Step header = member_->Decode(head_.data(), head_.size(), out, out_size);
    assert(header.error != nullptr || (header.consumed == head_.size() && header.produced == 0));
    if (header.error != nullptr) return Step{taken, 0, false, header.error};
    Step step = member_->Decode(in + taken, in_size - taken, out, out_size);
    step.consumed += taken;
    return step;
  }
  void NextFrame() override {
    if (member_ != nullptr) member_->NextFrame();
    member_ = nullptr;
    header_ = GzipHeader();
    head_.clear();
  }

 private:
  GzipInflaterKind kind_;
  ZlibInflater zlib_;
  IsalInflater isal_;
  Decoder* member_ = nullptr;  // the current member's inflater; null until its header is read
  GzipHeader header_;
  std::string head_;  // the header's bytes so far, when it spans pieces
};

// libzstd's streaming decoder. Skippable frames (pzstd writes one first) are read and dropped.
// Frames whose window exceeds zstd's default limit (128 MiB, `zstd --long=31` writes such) are
// rejected as zstd itself rejects them without --memory: memory stays bounded.
class ZstdDecoder final : public Decoder {
 public:
  ZstdDecoder() : dctx_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(dctx_); }
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;

  Step Decode(const char* in, size_t in_size, char* out, size_t out_size) override {
    // On an error libzstd does not say how far it read: it is given a block's worth at a time, so
    // that the error's offset is that of the piece given, within about 128 KiB of the damage.
    ZSTD_inBuffer input{in, std::min(in_size, ZSTD_DStreamInSize()), 0};
    ZSTD_outBuffer output{out, out_size, 0};
    const size_t rc = ZSTD_decompressStream(dctx_, &output, &input);
    if (ZSTD_isError(rc)) return Step{input.size, 0, false, ZSTD_getErrorName(rc)};
    // 0: the frame is decoded and flushed whole.
    return Step{input.pos, output.pos, rc == 0};
  }
  void NextFrame() override { ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only); }

 private:
  ZSTD_DCtx* dctx_;
};

// A compressed format: its name in messages, what its decoder does to the bytes, and the decoder.
struct Format {
  const char* name;
  const char* decoded;
  std::unique_ptr<Decoder> (*make_decoder)(const SourceOptions& options);
};
constexpr Format kGzip{
    "gzip", "inflated", [](const SourceOptions& options) {
      return std::unique_ptr<Decoder>(std::make_unique<GzipInflater>(options.gzip_inflater));
    }};
constexpr Format kZstd{"zstd", "decompressed", [](const SourceOptions&) {
                         return std::unique_ptr<Decoder>(std::make_unique<ZstdDecoder>());
                       }};

// Streaming decompression of another source into pooled buffers, with any Decoder: a file may
// hold several frames (gzip members, zstd frames) back to back, and it must end at a frame's end.
class DecompressingSource : public ByteSource {
 public:
  DecompressingSource(std::unique_ptr<ByteSource> inner, Format format,
                      std::unique_ptr<Decoder> decoder, const SourceOptions& options)
      : ByteSource(inner->path()),
        inner_(std::move(inner)),
        format_(format),
        decoder_(std::move(decoder)),
        pool_(std::make_shared<BufferPool>(options.window_bytes, /*padded=*/true)),
        accept_truncated_(options.accept_truncated) {}

  absl::StatusOr<bool> Next(Block* block) override {
    if (done_ && carry_ == nullptr) return false;
    std::shared_ptr<char> buf = carry_ != nullptr ? std::move(carry_) : pool_->Acquire();
    size_t have = std::exchange(carry_bytes_, 0);
    while (!done_ && have < pool_->buffer_bytes()) {
      if (in_used_ == in_.size && !input_ended_) {
        absl::StatusOr<bool> more = inner_->Next(&in_);
        if (!more.ok()) return more.status();
        if (*more) in_used_ = 0;
        input_ended_ = !*more;
      }
      if (input_ended_ && frame_ended_) {
        done_ = true;
        break;
      }
      if (frame_ended_) {
        // Another frame follows the previous one (as `cat a.gz b.gz` produces).
        decoder_->NextFrame();
        frame_ended_ = false;
      }
      const double cpu = ThreadCpuSeconds();
      const Decoder::Step step = decoder_->Decode(in_.data + in_used_, in_.size - in_used_,
                                                  buf.get() + have, pool_->buffer_bytes() - have);
      inflate_cpu_seconds_ += ThreadCpuSeconds() - cpu;
      in_used_ += step.consumed;
      have += step.produced;
      frame_ended_ = step.frame_ended;
      if (step.error != nullptr) {
        return absl::DataLossError(StrCat(path(), ": corrupt ", format_.name,
                                          " data near compressed byte ", compressed_read(), ": ",
                                          step.error));
      }
      // The input ended inside a frame, once the decoder has given what it still held (it keeps
      // output back when the buffer is full), whatever the buffer size.
      if (input_ended_ && !frame_ended_ && step.produced == 0) {
        truncated_message_ =
            StrCat(path(), ": truncated ", format_.name, " data after ", compressed_read(),
                   " compressed bytes (", produced_ + have, " bytes ", format_.decoded, ")");
        if (!accept_truncated_) return TruncatedInputError(truncated_message_);
        done_ = true;
        break;
      }
    }
    if (have == 0) return false;
    block->data = buf.get();
    block->size = have;
    block->offset = produced_;
    block->owner = std::move(buf);
    block->padded = true;
    produced_ += have;
    last_ = *block;
    return true;
  }
  bool can_unread() const override { return true; }
  void Unread(uint64_t offset) override {
    assert(offset >= last_.offset && offset <= last_.offset + last_.size);
    carry_ = pool_->Acquire();
    carry_bytes_ = static_cast<size_t>(last_.offset + last_.size - offset);
    std::memcpy(carry_.get(), last_.data + (offset - last_.offset), carry_bytes_);
    produced_ = offset;
    last_ = Block();
  }
  uint64_t file_bytes() const override { return inner_->file_bytes(); }
  uint64_t file_bytes_read() const override { return compressed_read(); }
  bool compressed() const override { return true; }
  std::string_view compression() const override { return format_.name; }
  double inflate_cpu_seconds() const override { return inflate_cpu_seconds_; }
  bool truncated() const override { return !truncated_message_.empty(); }
  std::string truncated_message() const override { return truncated_message_; }

 private:
  uint64_t compressed_read() const { return in_.offset + in_used_; }

  std::unique_ptr<ByteSource> inner_;
  Format format_;
  std::unique_ptr<Decoder> decoder_;
  std::shared_ptr<BufferPool> pool_;
  Block in_;
  size_t in_used_ = 0;  // bytes of in_ decoded
  uint64_t produced_ = 0;
  Block last_;                   // the last block Next() gave, until Unread()
  std::shared_ptr<char> carry_;  // the next block's first bytes, from Unread()
  size_t carry_bytes_ = 0;
  bool frame_ended_ = false;
  bool input_ended_ = false;  // the compressed input has no more bytes
  bool done_ = false;
  double inflate_cpu_seconds_ = 0;
  bool accept_truncated_;
  std::string truncated_message_;
};

// The compressed format that a file's first bytes announce, if any.
std::optional<Format> Sniff(std::string_view head) {
  const auto byte = [head](size_t i) { return static_cast<unsigned char>(head[i]); };
  if (head.size() >= 2 && byte(0) == 0x1f && byte(1) == 0x8b) return kGzip;
  if (head.size() < 4) return std::nullopt;
  // A zstd frame (28 B5 2F FD), or a skippable frame (5? 2A 4D 18) before one.
  const bool zstd = byte(0) == 0x28 && byte(1) == 0xb5 && byte(2) == 0x2f && byte(3) == 0xfd;
  const bool skippable =
      (byte(0) & 0xf0) == 0x50 && byte(1) == 0x2a && byte(2) == 0x4d && byte(3) == 0x18;
  if (zstd || skippable) return kZstd;
  return std::nullopt;
}

}  // namespace

absl::Status ByteSource::ReadAt(uint64_t, size_t, char*) const {
  return absl::UnimplementedError(StrCat(path(), ": not a regular uncompressed file"));
}
void ByteSource::SeekTo(uint64_t) {}
void ByteSource::Unread(uint64_t) { assert(false && "Unread() on a source that cannot"); }

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
  absl::StatusOr<std::string_view> head = raw->Peek();
  if (!head.ok()) return head.status();
  const std::optional<Format> format = Sniff(*head);
  if (!format) return std::unique_ptr<ByteSource>(std::move(raw));
  return std::unique_ptr<ByteSource>(std::make_unique<DecompressingSource>(
      std::move(raw), *format, format->make_decoder(options), options));
}

namespace {
constexpr char kTruncatedPayload[] = "tracefuse/truncated-input";
constexpr char kUnsupportedPayload[] = "tracefuse/unsupported-trace";
}  // namespace

absl::Status TruncatedInputError(const std::string& message) {
  absl::Status status = absl::DataLossError(message);
  status.SetPayload(kTruncatedPayload, absl::Cord());
  return status;
}

bool IsTruncatedInput(const absl::Status& status) {
  return status.GetPayload(kTruncatedPayload).has_value();
}

absl::Status UnsupportedTraceError(const std::string& message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUnsupportedPayload, absl::Cord());
  return status;
}

bool IsUnsupportedTrace(const absl::Status& status) {
  return status.GetPayload(kUnsupportedPayload).has_value();
}

}  // namespace tracefuse
