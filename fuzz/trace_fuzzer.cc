// trace_fuzzer: any bytes as a whole trace, read the way `tracefuse` reads a file: through
// ProfileTraces (pipeline/flow_graph.h), so through the byte source (plain, gzip, zstd), the
// chunker and the exact splitter, the chunk parser, classification and the reducer; or, for the
// vendors' formats (an SQLite database, rocprofv3 JSON), through their importers.
//
// Byte 0 of an input says how the rest reaches the reader (Handover); the rest is the trace. The
// trace is written to a memfd and read by its /proc path: a regular file, so plain input is cut
// speculatively with reads at random, as a trace on disk is, and compressed input as a stream.
//
// Invariants, beyond what ASan and UBSan check:
//   - every read ends with a profile or with one error line that starts with the file's name;
//   - every way of reading gives the same answer (docs/guide.md: "A trace is accepted or rejected
//     alike whatever the thread count and chunk size"): exact and speculative cuts, chunks of one
//     event up to the whole input, blocks of 64 bytes up to 64 KiB, one and two threads;
//     compressed input gives what its plain text gives;
//   - so does every way of reading with --lenient (PipelineOptions::salvage_truncated), which
//     gives what the plain reading gives whenever that reads the trace.
// An accepted trace then goes through the analyses that take hostile times and ids as they come:
// its CPU ops linked to its kernels (BuildOpTree) and the fusion analysis against itself.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fuzz_check.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse {
namespace {

using fuzz::Fail;

// MemoryFile is a file in memory that the pipeline opens by its /proc path, as it opens any path.
class MemoryFile {
 public:
  MemoryFile()
      : fd_(memfd_create("trace", MFD_CLOEXEC)), path_("/proc/self/fd/" + std::to_string(fd_)) {
    if (fd_ < 0) Fail("memfd_create failed");
  }
  void Write(std::string_view bytes) const {
    if (ftruncate(fd_, 0) != 0) Fail("ftruncate of the memfd failed");
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done, off_t(done));
      if (n <= 0) Fail("pwrite to the memfd failed");
      done += static_cast<size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// Handover is byte 0 of an input: bits 0-1 the format (plain, gzip, gzip as two members split
// at `fraction` of the text, zstd), bit 2 whether the compressed bytes are cut at `fraction` of
// their length, bits 3-7 `fraction`, in 32nds.
struct Handover {
  enum Format { kPlain, kGzip, kGzipMembers, kZstd };
  Format format;
  bool truncate;
  size_t fraction;

  explicit Handover(uint8_t byte)
      : format(static_cast<Format>(byte & 3)), truncate(byte & 4), fraction(byte >> 3) {}
  size_t Part(size_t n) const { return n * fraction / 32; }
};

std::string Gzip(std::string_view text, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    Fail("deflateInit2 failed");
  }
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) Fail("deflate failed");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 1);
  if (ZSTD_isError(n)) Fail("ZSTD_compress failed");
  out.resize(n);
  return out;
}

std::string Compress(std::string_view text, const Handover& h) {
  std::string out;
  switch (h.format) {
    case Handover::kPlain:
      return std::string(text);
    case Handover::kGzip:
      out = Gzip(text, 6);
      break;
    case Handover::kGzipMembers:
      out =
          Gzip(text.substr(0, h.Part(text.size())), 1) + Gzip(text.substr(h.Part(text.size())), 9);
      break;
    case Handover::kZstd:
      out = Zstd(text);
      break;
  }
  if (h.truncate) out.resize(h.Part(out.size()));
  return out;
}

// ReadFromTheFile() is true for text that the reader would take for gzip or zstd by its first
// bytes (io.cc's Sniff), or for an SQLite database, which is read from the file itself, not
// inflated: compressing it does not give the reader the same bytes.
bool ReadFromTheFile(std::string_view text) {
  if (text.substr(0, 16) == std::string_view("SQLite format 3\0", 16)) return true;
  const auto byte = [text](size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() >= 2 && byte(0) == 0x1f && byte(1) == 0x8b) return true;
  if (text.size() < 4) return false;
  return (byte(0) == 0x28 && byte(1) == 0xb5 && byte(2) == 0x2f && byte(3) == 0xfd) ||
         ((byte(0) & 0xf0) == 0x50 && byte(1) == 0x2a && byte(2) == 0x4d && byte(3) == 0x18);
}

// Reading is one way to read a trace; every one must give the same result.
struct Reading {
  const char* name;
  bool speculative;
  size_t chunk_bytes;
  size_t window_bytes;
  int threads;
};

constexpr Reading kReadings[] = {
    {"exact cuts, one chunk, one block", false, 2u << 20, 64u << 10, 1},
    {"speculative cuts, a chunk per event, 4 KiB blocks", true, 1, 4096, 1},
    {"speculative cuts, 4 KiB chunks, 256-byte blocks, 2 threads", true, 4096, 256, 2},
    {"exact cuts, 64-byte chunks and blocks", false, 64, 64, 1},
};

template <typename... Args>
void Append(std::string* out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(*out), format, std::forward<Args>(args)...);
}

void AppendMetadata(const TraceMetadata& m, std::string* out) {
  Append(out, "keys {}\n", fmt::join(m.keys, "|"));
  Append(out, "gpu {} warp {} base {} rank {}\n", m.gpu_name.value_or("-"),
         m.warp_size.value_or(-1), m.base_time_ns.value_or(-1), m.rank.value_or(-1));
  Append(out, "versions {}{}{}{}{}\n", m.has_roctracer_version, m.roctracer_version_truthy,
         m.has_cupti_version, m.has_cuda_runtime_version, m.has_hip_runtime_version);
}

void AppendHost(const TraceHost& host, std::string* out) {
  for (const HostOp& op : host.ops) {
    Append(out, "op {} {} {} {} {}:{} {}\n", op.ts_ns, op.dur_ns, int(op.kind), op.position,
           host.names[op.name].size(), host.names[op.name], host.threads[op.thread]);
  }
  for (const RuntimeCall& call : host.calls) {
    Append(out, "call {} {} {} {}:{} {}\n", call.ts_ns, call.correlation, call.position,
           host.names[call.name].size(), host.names[call.name], host.threads[call.thread]);
  }
  Append(out, "host events without times {}\n", host.events_without_times);
}

// Fingerprint() is everything a profile says about the trace (not how it was read: timings,
// rejected cuts, file bytes), as text, so that two readings compare as strings and a difference
// prints.
std::string Fingerprint(const TraceProfile& p) {
  std::string out;
  Append(&out, "bytes {} events {} platform {} ({}) gpu {}\n", p.input_bytes, p.events,
         int(p.platform), p.platform_evidence, p.gpu);
  AppendMetadata(p.metadata, &out);
  for (const auto& [cat, count] : p.event_categories)
    Append(&out, "cat {}:{} {}\n", cat.size(), cat, count);
  Append(&out, "evidence {} {} {}\n", p.evidence.kernels_with_kind, p.evidence.hip_runtime_calls,
         p.evidence.cuda_runtime_calls);
  Append(&out, "kernels {} bad times {} no name {} no correlation {}\n", p.kernel_count,
         p.kernels_with_bad_times, p.kernels_without_name, p.kernels_without_correlation);
  for (size_t i = 0; i < p.names.size(); ++i) {
    Append(&out, "name {}:{} rule {} x{} {} ns\n", p.names[i].size(), p.names[i], p.name_rule[i],
           p.name_kernels[i], p.name_time_ns[i]);
  }
  for (size_t g = 0; g < p.group_correlation.size(); ++g) {
    Append(&out, "group {} x{}\n", p.group_correlation[g], p.group_size[g]);
  }
  p.kernels.ForEach([&out](const KernelRecord& k) {
    Append(&out, "kernel {} {} {} {}\n", k.ts_ns, k.dur_ns, k.name, k.group);
  });
  AppendHost(p.host, &out);
  if (p.truncated) {
    Append(&out, "truncated at {}, kept {}, {}\n", p.truncated->input_bytes,
           p.truncated->kept_bytes, Describe(*p.truncated));
  }
  return out;
}

struct Outcome {
  bool ok = false;
  std::string text;  // the profile's fingerprint, or the error
};

Outcome Read(const MemoryFile& file, const Reading& reading,
             const std::shared_ptr<const Classifier>& classifier, TraceProfile* profile,
             bool lenient = false) {
  PipelineOptions options;
  options.salvage_truncated = lenient;
  options.threads = reading.threads;
  options.chunk_bytes = reading.chunk_bytes;
  options.window_bytes = reading.window_bytes;
  options.speculative_cuts = reading.speculative;
  options.host_activity = true;
  absl::StatusOr<std::vector<TraceProfile>> read =
      ProfileTraces({file.path()}, classifier, options);
  if (!read.ok()) {
    fuzz::CheckErrorMessage(read.status(), file.path() + ": ");
    if (!absl::IsInvalidArgument(read.status()) && !absl::IsDataLoss(read.status())) {
      Fail("neither a malformed trace nor corrupt compressed data: " + read.status().ToString());
    }
    return {false, read.status().ToString()};
  }
  Outcome outcome{true, Fingerprint(read->front())};
  if (profile != nullptr) *profile = std::move(read->front());
  return outcome;
}

void ExpectSame(const Outcome& expected, const Outcome& got, const std::string& how,
                const char* reference = kReadings[0].name) {
  if (expected.ok == got.ok && (!expected.ok || expected.text == got.text)) return;
  size_t at = 0;
  while (at < expected.text.size() && at < got.text.size() && expected.text[at] == got.text[at]) {
    ++at;
  }
  const size_t from =
      expected.text.rfind('\n', at) == std::string::npos ? 0 : expected.text.rfind('\n', at) + 1;
  Fail(
      fmt::format("{} differs from the reference reading ({}), from byte {}:\n--- reference\n{}\n"
                  "--- {}\n{}",
                  how, reference, at, fuzz::Abbreviated(expected.text.substr(from)), how,
                  fuzz::Abbreviated(got.text.substr(from))));
}

const std::shared_ptr<const Classifier>& RuleSetUnderTest() {
  // wafer-op is platform-dependent: names classified before the platform is final are
  // classified again, a path the platform-independent sets never take.
  static const std::shared_ptr<const Classifier> classifier = [] {
    absl::StatusOr<std::shared_ptr<const Classifier>> c = LoadClassifier("wafer-op");
    if (!c.ok()) Fail(c.status().ToString());
    return *c;
  }();
  return classifier;
}

}  // namespace
}  // namespace tracefuse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracefuse;
  if (size == 0) return 0;
  static const MemoryFile file;
  const std::shared_ptr<const Classifier>& classifier = RuleSetUnderTest();
  const Handover handover(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  TraceProfile profile;
  // The reference is the first reading of the plain text when the compressed bytes hold all of
  // it (and the reader would not take the text itself for compressed data), else the first
  // reading of the bytes written.
  std::optional<Outcome> reference;
  const bool compressed = handover.format != Handover::kPlain;
  if (compressed && !handover.truncate && !ReadFromTheFile(text)) {
    file.Write(text);
    reference = Read(file, kReadings[0], classifier, &profile);
  }
  file.Write(Compress(text, handover));
  for (const Reading& reading : kReadings) {
    if (!reference) {
      reference = Read(file, reading, classifier, &profile);
      continue;
    }
    ExpectSame(*reference, Read(file, reading, classifier, nullptr),
               compressed ? std::string(reading.name) + ", compressed" : reading.name);
  }
  // --lenient: every reading agrees, and with the reference where that read the trace whole.
  std::optional<Outcome> lenient;
  for (const Reading& reading : kReadings) {
    const Outcome got = Read(file, reading, classifier, nullptr, /*lenient=*/true);
    const std::string how = std::string(reading.name) + ", --lenient";
    if (lenient) {
      ExpectSame(*lenient, got, how, "the first reading with --lenient");
    } else if (reference->ok && !handover.truncate) {
      ExpectSame(*reference, got, how);
    }
    if (!lenient) lenient = got;
  }
  if (reference->ok) {
    if (BuildOpTree(profile).kernels != profile.kernel_count) {
      Fail("the op tree holds other kernels than the profile");
    }
    if (AnalyzeFusion(profile, profile).total_kernels[Side::kTrace1] != profile.kernel_count) {
      Fail("the fusion analysis counts other kernels than the profile");
    }
  }
  return 0;
}
