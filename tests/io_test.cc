#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test_util.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {
namespace {

std::string ReadAll(const std::string& path, size_t window, absl::Status* status,
                    GzipInflaterKind inflater = GzipInflaterKind::kIsal) {
  SourceOptions o;
  o.window_bytes = window;
  o.gzip_inflater = inflater;
  auto src = OpenSource(path, o);
  if (!src.ok()) {
    *status = src.status();
    return "";
  }
  std::string all;
  Block b;
  uint64_t expect_offset = 0;
  while (true) {
    auto more = (*src)->Next(&b);
    if (!more.ok()) {
      *status = more.status();
      return all;
    }
    if (!*more) break;
    EXPECT_EQ(b.offset, expect_offset);
    expect_offset += b.size;
    all.append(b.data, b.size);
  }
  *status = absl::OkStatus();
  return all;
}

// One gzip member of `data` at `level`, with `header`'s fields (name, comment, extra, header CRC)
// when given.
std::string Gzip(const std::string& data, int level = 6, gz_header* header = nullptr) {
  z_stream zs{};
  deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  if (header != nullptr) deflateSetHeader(&zs, header);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Sample(size_t n) {
  std::string s;
  for (size_t i = 0; s.size() < n; ++i) s += "{\"i\": " + std::to_string(i) + "},";
  s.resize(n);
  return s;
}

TEST(ByteSource, MmapWindowsCoverTheFileExactly) {
  testing::TempDir dir;
  std::string data = Sample(100000);
  std::string path = dir.File("a.json", data);
  absl::Status st;
  EXPECT_EQ(ReadAll(path, 4096, &st), data);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(ReadAll(path, 1 << 20, &st), data);
}

// The first block only tells the format and the first keys: 64 KiB, whatever the window; the
// blocks after it fill the window.
TEST(ByteSource, TheFirstBlockIsSmallTheOthersFillTheWindow) {
  testing::TempDir dir;
  std::string data = Sample(3 << 20);
  auto src = OpenSource(dir.File("a.json", data), SourceOptions{});
  ASSERT_TRUE(src.ok()) << src.status();
  std::vector<size_t> sizes;
  for (Block b; *(*src)->Next(&b);) sizes.push_back(b.size);
  const size_t window = SourceOptions{}.window_bytes;
  ASSERT_GE(sizes.size(), 2u);
  EXPECT_EQ(sizes[0], size_t{64} << 10);
  EXPECT_EQ(sizes[1], std::min(window, data.size() - sizes[0]));
  absl::Status st;
  EXPECT_EQ(ReadAll(dir.File("b.json", data), 1 << 20, &st), data);
  EXPECT_EQ(ReadAll(dir.File("c.json", Sample(1000)), 1 << 20, &st), Sample(1000));
}

// A regular file's blocks end where the file did when it was opened, and past that end, where only
// a file that grew has more, they are small again: a tail or a growth of a few KB is read into a
// buffer of its size, not a whole window. What was appended is still read, to the new end.
TEST(ByteSource, BlocksStopAtTheFileEndAndReadWhatWasAppended) {
  testing::TempDir dir;
  const std::string first = Sample((64 << 10) + 5000), appended = Sample(150000);
  const std::string path = dir.File("a.json", first);
  auto src = OpenSource(path, SourceOptions{});
  ASSERT_TRUE(src.ok()) << src.status();
  std::string all;
  std::vector<size_t> sizes;
  Block b;
  ASSERT_TRUE(*(*src)->Next(&b));
  all.append(b.data, b.size);
  {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << appended;
  }
  while (*(*src)->Next(&b)) {
    sizes.push_back(b.size);
    all.append(b.data, b.size);
  }
  EXPECT_EQ(all, first + appended);
  ASSERT_GE(sizes.size(), 2u);
  EXPECT_EQ(sizes[0], size_t{5000});  // what was left of the file as opened
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_LE(sizes[i], size_t{64} << 10) << i;
}

// A decompressing source's blocks are padded, and Unread() makes the next block start inside the
// last one, with its bytes copied at once: overwriting the last block afterwards changes nothing.
// Read so, the stream is still every byte once, across gzip members and at its very end.
TEST(ByteSource, UnreadStartsTheNextBlockInsideTheLast) {
  testing::TempDir dir;
  const std::string data = Sample(200000) + Sample(50000);
  const std::string path =
      dir.File("a.json.gz", Gzip(data.substr(0, 200000)) + Gzip(data.substr(200000)));
  SourceOptions o;
  o.window_bytes = 16 << 10;
  auto src = OpenSource(path, o);
  ASSERT_TRUE(src.ok()) << src.status();
  ASSERT_TRUE((*src)->can_unread());
  std::string all;
  size_t blocks = 0;
  for (Block b; *(*src)->Next(&b); ++blocks) {
    ASSERT_TRUE(b.padded);
    ASSERT_EQ(b.offset, all.size());
    ASSERT_EQ(std::string_view(b.data, b.size), std::string_view(data).substr(b.offset, b.size));
    // Hand back the last third of every other block.
    const size_t keep = blocks % 2 == 0 ? b.size - b.size / 3 : b.size;
    all.append(b.data, keep);
    if (keep < b.size) {
      (*src)->Unread(b.offset + keep);
      std::memset(const_cast<char*>(b.data) - 1, '#', b.size + 1 + kBlockTailroom);
    }
  }
  EXPECT_EQ(all, data);
  EXPECT_GT(blocks, data.size() / o.window_bytes);
}

TEST(ByteSource, GzipByMagicBytesAndConcatenatedMembers) {
  testing::TempDir dir;
  std::string a = Sample(300000), b = Sample(1000);
  std::string path = dir.File("no_gz_suffix.json", Gzip(a) + Gzip(b));
  absl::Status st;
  EXPECT_EQ(ReadAll(path, 8192, &st), a + b);
  EXPECT_TRUE(st.ok()) << st;
}

TEST(ByteSource, TruncatedAndCorruptGzip) {
  testing::TempDir dir;
  std::string gz = Gzip(Sample(200000));
  absl::Status st;
  ReadAll(dir.File("t.gz", gz.substr(0, gz.size() / 2)), 8192, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(
      absl::StartsWith(std::string(st.message()), dir.path() + "/t.gz: truncated gzip data"))
      << st;
  std::string corrupt = gz;
  for (size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(0xff);
  ReadAll(dir.File("c.gz", corrupt), 8192, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(std::string(st.message()), "corrupt gzip data")) << st;
}

// Text that compresses about as well as a trace (a repetitive sample alone compresses to almost
// nothing, and would not exercise the dynamic Huffman blocks of a real file).
std::string TraceLike(size_t n, unsigned seed) {
  std::string s;
  uint32_t x = seed * 2654435761u + 1;
  while (s.size() < n) {
    x = x * 1664525u + 1013904223u;
    s += absl::StrCat("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k", x % 97,
                      "\", \"ts\": ", x % 1000003, ", \"dur\": ", x % 89, "},\n");
  }
  s.resize(n);
  return s;
}

constexpr GzipInflaterKind kInflaters[] = {GzipInflaterKind::kIsal, GzipInflaterKind::kZlib};

// ISA-L inflates what zlib inflates, byte for byte: each gzip level, empty members, members and
// files that end just before, at and after the 32 KiB deflate window and the read buffer, many
// members in one file, read through buffers of several sizes.
TEST(ByteSource, IsalInflatesEveryLevelSizeAndMemberAsZlib) {
  testing::TempDir dir;
  const size_t sizes[] = {0, 1, 1000, 32767, 32768, 32769, 65535, 65536, 65537, 1 << 20, 1234567};
  for (int level : {1, 6, 9}) {
    std::string all, gz;
    for (size_t i = 0; i < std::size(sizes); ++i) {
      const std::string data = TraceLike(sizes[i], i + level);
      const std::string member = Gzip(data, level);
      all += data;
      gz += member;
      if (sizes[i] < 100000) {
        const std::string path = dir.File("one.gz", member);
        for (GzipInflaterKind inflater : kInflaters) {
          absl::Status st;
          EXPECT_EQ(ReadAll(path, 65536, &st, inflater), data) << level << " " << sizes[i];
          EXPECT_TRUE(st.ok()) << st;
        }
      }
    }
    gz += Gzip("", level);  // an empty member last
    const std::string path = dir.File(absl::StrCat("members", level, ".gz"), gz);
    for (size_t window : {size_t{4096}, size_t{65536}, size_t{1} << 20, size_t{8} << 20}) {
      for (GzipInflaterKind inflater : kInflaters) {
        absl::Status st;
        EXPECT_TRUE(ReadAll(path, window, &st, inflater) == all) << level << " " << window;
        EXPECT_TRUE(st.ok()) << st;
      }
    }
  }
}

// Members whose header carries a name, a comment, an extra field and a header CRC, split across
// reads at every small offset: ISA-L rejects a header CRC read in two pieces, so those members go
// to zlib, and the file reads whole either way.
TEST(ByteSource, GzipHeaderFieldsAndHeaderCrcAcrossReads) {
  testing::TempDir dir;
  std::string name = "trace.json", comment = "a comment", extra = "xx";
  const std::string a = TraceLike(50000, 1), b = TraceLike(3000, 2);
  std::string gz;
  for (int hcrc : {1, 0}) {
    gz_header header{};
    header.name = reinterpret_cast<Bytef*>(name.data());
    header.comment = reinterpret_cast<Bytef*>(comment.data());
    header.extra = reinterpret_cast<Bytef*>(extra.data());
    header.extra_len = static_cast<uInt>(extra.size());
    header.hcrc = hcrc;
    gz += Gzip(a, 6, &header) + Gzip(b, 6, &header);
  }
  const std::string path = dir.File("fields.gz", gz);
  for (size_t window = 16; window < 64; window += 3) {
    for (GzipInflaterKind inflater : kInflaters) {
      absl::Status st;
      EXPECT_TRUE(ReadAll(path, window, &st, inflater) == a + b + a + b) << window;
      EXPECT_TRUE(st.ok()) << st;
    }
  }
}

// The same file gives the same error line with either inflater: reserved header flags, which zlib
// rejects and ISA-L would ignore, and trailing bytes that are no gzip member.
TEST(ByteSource, CorruptGzipHeadersGiveZlibsErrorWithEitherInflater) {
  testing::TempDir dir;
  const std::string member = Gzip(TraceLike(20000, 3));
  std::string reserved = member + member;
  reserved[member.size() + 3] = static_cast<char>(0x20);
  const std::pair<std::string, std::string> cases[] = {
      {reserved, absl::StrCat(": corrupt gzip data near compressed byte ", member.size() + 4,
                              ": unknown header flags set")},
      {member + std::string(2, '\0'), absl::StrCat(": corrupt gzip data near compressed byte ",
                                                   member.size() + 2, ": incorrect header check")},
  };
  for (const auto& [content, message] : cases) {
    const std::string path = dir.File("c.gz", content);
    for (GzipInflaterKind inflater : kInflaters) {
      absl::Status st;
      ReadAll(path, 8192, &st, inflater);
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
      EXPECT_EQ(st.message(), path + message);
    }
  }
}

// A file cut anywhere (in a member's header, its data, its trailer, or in the next member) gives
// the truncation line, with the bytes it read: the whole file.
TEST(ByteSource, TruncatedGzipGivesTheSameLineWithEitherInflater) {
  testing::TempDir dir;
  const std::string member = Gzip(TraceLike(200000, 4));
  const std::string gz = member + member;
  for (size_t cut : {size_t{5}, size_t{12}, member.size() / 2, member.size() - 3, member.size() + 2,
                     member.size() + 9, gz.size() - 1}) {
    const std::string path = dir.File("t.gz", gz.substr(0, cut));
    const std::regex line(absl::StrCat(path, ": truncated gzip data after ", cut,
                                       " compressed bytes \\([0-9]+ bytes inflated\\)"));
    for (GzipInflaterKind inflater : kInflaters) {
      absl::Status st;
      ReadAll(path, 8192, &st, inflater);
      EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << cut;
      EXPECT_TRUE(std::regex_match(std::string(st.message()), line)) << st;
    }
  }
}

// One zstd frame of `data`, with a checksum, as the zstd command writes it.
std::string Zstd(const std::string& data, int level = 3) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  out.resize(ZSTD_compress2(cctx, out.data(), out.size(), data.data(), data.size()));
  ZSTD_freeCCtx(cctx);
  return out;
}

// Concatenated zstd frames (empty ones too), after a skippable frame as pzstd writes, into pooled
// buffers of several sizes; progress and CPU accounted as for gzip.
TEST(ByteSource, ZstdByMagicBytesAndConcatenatedFrames) {
  testing::TempDir dir;
  const std::string a = TraceLike(3 << 20, 5), b = TraceLike(1000, 6);
  std::string skippable = "\x50\x2a\x4d\x18";
  skippable += std::string("\x04\0\0\0", 4) + "skip";
  const std::string zst = skippable + Zstd(a) + Zstd("") + Zstd(b, 19);
  const std::string path = dir.File("no_zst_suffix.json", zst);
  for (size_t window : {size_t{4096}, size_t{100000}, size_t{8} << 20}) {
    absl::Status st;
    EXPECT_TRUE(ReadAll(path, window, &st) == a + b) << window;
    EXPECT_TRUE(st.ok()) << st;
  }
  auto src = OpenSource(path);
  ASSERT_TRUE(src.ok()) << src.status();
  Block block;
  while ((*src)->Next(&block).value_or(false)) {
  }
  EXPECT_TRUE((*src)->compressed());
  EXPECT_EQ((*src)->compression(), "zstd");
  EXPECT_EQ((*src)->file_bytes(), zst.size());
  EXPECT_EQ((*src)->file_bytes_read(), zst.size());
  EXPECT_GT((*src)->inflate_cpu_seconds(), 0);
}

TEST(ByteSource, CompressionNamesTheFormatFoundByMagicBytes) {
  testing::TempDir dir;
  const std::string data = TraceLike(1000, 8);
  const std::pair<std::string, std::string> cases[] = {
      {data, ""}, {Gzip(data), "gzip"}, {Zstd(data), "zstd"}};
  for (const auto& [content, format] : cases) {
    auto src = OpenSource(dir.File("t.json", content));
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ((*src)->compression(), format);
    EXPECT_EQ((*src)->compressed(), !format.empty());
  }
}

TEST(ByteSource, TruncatedAndCorruptZstd) {
  testing::TempDir dir;
  const std::string frame = Zstd(TraceLike(500000, 7));
  const std::string zst = frame + frame;
  for (size_t cut : {size_t{3} + 4, frame.size() / 2, frame.size() + 2, zst.size() - 1}) {
    const std::string path = dir.File("t.zst", zst.substr(0, cut));
    absl::Status st;
    ReadAll(path, 8192, &st);
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << cut;
    const std::regex line(absl::StrCat(path, ": truncated zstd data after ", cut,
                                       " compressed bytes \\([0-9]+ bytes decompressed\\)"));
    EXPECT_TRUE(std::regex_match(std::string(st.message()), line)) << st;
  }
  std::string corrupt = zst;
  for (size_t i = 100; i < 140; ++i) corrupt[i] = static_cast<char>(0xff);
  const std::string path = dir.File("c.zst", corrupt);
  absl::Status st;
  ReadAll(path, 8192, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StartsWith(st.message(), path + ": corrupt zstd data near compressed byte "))
      << st;
  ReadAll(dir.File("g.zst", zst + "garbage"), 8192, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(absl::StrContains(st.message(), ": corrupt zstd data near compressed byte ")) << st;
}

TEST(ByteSource, OpenErrorsNameTheFile) {
  testing::TempDir dir;
  absl::Status st;
  ReadAll(dir.path() + "/missing.json", 4096, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), dir.path() + "/missing.json: No such file or directory");
  ReadAll(dir.path(), 4096, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), dir.path() + ": is a directory");
  ReadAll(dir.File("empty.json", ""), 4096, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), dir.path() + "/empty.json: empty file");
}

}  // namespace
}  // namespace tracefuse
