// Stage 1, library tracefuse_io: input bytes.
//
// A trace is read as a sequence of Blocks whose memory stays valid for as long as any copy of the
// Block is alive, so downstream stages can hold on to a byte range without copying it. Blocks are
// pooled buffers filled by read(): a buffer returns to its pool when the last chunk using it is
// done, so resident memory is bounded by the data in flight, not by the file size, and steady
// state allocates nothing. (Memory-mapped windows were measured slower here; see io.cc.)
//
// Compressed input is detected by its magic bytes, whatever the file name, and decompressed by
// streaming into pooled buffers, frame after frame (concatenated gzip members, zstd frames): gzip
// by Intel ISA-L, several times faster than zlib, because inflating is serial and on the critical
// path of a run; zlib takes the members ISA-L does not handle as zlib does (see io.cc); zstd,
// which users pick for multi-GB traces, by libzstd.
#ifndef TRACEFUSE_IO_BYTE_SOURCE_H_
#define TRACEFUSE_IO_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tracefuse {

// kBlockTailroom is what the buffer of a padded Block holds past its bytes, besides one byte
// before them: room for a parser to write a JSON array's closing bracket and simdjson's padding
// (see EventChunk::in_place).
inline constexpr size_t kBlockTailroom = 128;

// A contiguous run of input bytes. `offset` is the position of data[0] in the uncompressed stream.
struct Block {
  const char* data = nullptr;
  size_t size = 0;
  uint64_t offset = 0;
  std::shared_ptr<const void> owner;  // keeps `data` alive
  // The buffer has a byte before data and kBlockTailroom bytes after data + size.
  bool padded = false;

  // Slice() is the part of this block from input offset `from` to `to` (both within it), kept
  // alive by the same owner.
  Block Slice(uint64_t from, uint64_t to) const {
    return Block{data + (from - offset), static_cast<size_t>(to - from), from, owner, padded};
  }
};

// GzipInflaterKind chooses what inflates gzip input. kIsal is ISA-L for every member it handles
// as zlib does, zlib for the others; kZlib is zlib alone, the reference that tests and benchmarks
// compare ISA-L against.
enum class GzipInflaterKind { kIsal, kZlib };

struct SourceOptions {
  size_t window_bytes = 8u << 20;  // read / decompression buffer size
  GzipInflaterKind gzip_inflater = GzipInflaterKind::kIsal;
  // Compressed input that ends inside a frame ends the stream after the last byte decoded, and
  // sets ByteSource::truncated(), instead of failing: a profiler killed while writing leaves
  // such files, and every event decoded before the cut is good data.
  bool accept_truncated = false;
};

// TruncatedInputError() is the error for input that ends too early: a truncated file that
// --lenient would read up to its cut. IsTruncatedInput() recognises it (a status payload).
absl::Status TruncatedInputError(const std::string& message);
bool IsTruncatedInput(const absl::Status& status);

// UnsupportedTraceError() is the error for well-formed input that is not a trace tracefuse reads
// (JSON that is not a Kineto trace, say): still exit code 1, but the Python module raises
// UnsupportedTraceError for it rather than MalformedTraceError. IsUnsupportedTrace() recognises
// it (a status payload).
absl::Status UnsupportedTraceError(const std::string& message);
bool IsUnsupportedTrace(const absl::Status& status);

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Produces the next block. Returns false at the end of the input.
  virtual absl::StatusOr<bool> Next(Block* block) = 0;
  // Bytes of the file on disk (compressed size for gzip and zstd); 0 when unknown (pipes).
  virtual uint64_t file_bytes() const = 0;
  // Bytes of the file on disk consumed so far, for progress reporting.
  virtual uint64_t file_bytes_read() const = 0;
  virtual bool compressed() const { return false; }
  // The compressed format ("gzip", "zstd"), for reports that name it; "" for plain input.
  virtual std::string_view compression() const { return ""; }
  // CPU seconds spent inflating (or decompressing zstd), for compressed sources (part of Next()'s
  // time).
  virtual double inflate_cpu_seconds() const { return 0; }
  // truncated() is true once compressed input read with SourceOptions::accept_truncated has
  // ended inside a frame; truncated_message() then says where ("truncated gzip data after ...").
  virtual bool truncated() const { return false; }
  virtual std::string truncated_message() const { return ""; }

  // random_access() is true for a regular, uncompressed file: then ReadAt() reads any range of
  // it, from any thread (pread, straight into the caller's buffer), and SeekTo() moves where
  // Next() goes on from.
  virtual bool random_access() const { return false; }
  // ReadAt() reads exactly `size` bytes at `offset` into `out`: the parallel stage reads its
  // chunks itself, so the serial front need not copy every byte.
  virtual absl::Status ReadAt(uint64_t offset, size_t size, char* out) const;
  virtual void SeekTo(uint64_t offset);
  // can_unread() is true for a decompressing source, whose blocks are padded: then Unread(offset),
  // with `offset` inside the last block Next() gave, makes the next block start there. The bytes
  // from `offset` on are copied at once, so the last block's holder may overwrite them after the
  // call. The chunker hands a block's incomplete last event on to the next block this way, so
  // that a chunk lies in one block and is parsed where it is, without a copy.
  virtual bool can_unread() const { return false; }
  virtual void Unread(uint64_t offset);
  const std::string& path() const { return path_; }

 protected:
  explicit ByteSource(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// Opens `path` ("-" is standard input). Errors: NotFound / PermissionDenied / FailedPrecondition
// (a directory) / Unavailable (read failure) are I/O errors; InvalidArgument means the file is not
// usable input (empty file). Messages start with the path. Next() fails with DataLoss on truncated
// or corrupt compressed input ("t.json.gz: truncated gzip data after 5000 compressed bytes
// (130056 bytes inflated)", "t.json.zst: corrupt zstd data near compressed byte 12: ...").
absl::StatusOr<std::unique_ptr<ByteSource>> OpenSource(const std::string& path,
                                                       const SourceOptions& options = {});

}  // namespace tracefuse

#endif  // TRACEFUSE_IO_BYTE_SOURCE_H_
