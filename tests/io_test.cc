#include "tracefuse/io.h"

#include <zlib.h>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace tracefuse {
namespace {

std::string ReadAll(const std::string& path, size_t window, absl::Status* status) {
  SourceOptions o;
  o.window_bytes = window;
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

std::string Gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
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
