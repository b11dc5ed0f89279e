#include "tracefuse/parse/chunk_parser.h"

#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "json_errors.h"
#include "simdjson.h"
#include "tracefuse/base/host.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

namespace od = simdjson::ondemand;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// EventKind is what an event's `cat` makes it, told once per event: a test of the string at
// every use was 1-2 % of a parse.
enum class EventKind : uint8_t {
  kOther,
  kKernel,
  kTransfer,  // a memcpy or memset
  kRuntime,
  kDriver,
  kUserAnnotation,
  kOperator,
  kPythonFunction,
};

EventKind EventKindOf(std::string_view cat) {
  switch (cat.size()) {
    case 6:
      if (cat == "kernel" || cat == "Kernel") return EventKind::kKernel;
      if (cat == "cpu_op") return EventKind::kOperator;
      if (cat == "Memcpy" || cat == "Memset") return EventKind::kTransfer;
      break;
    case 7:
      if (cat == "Runtime") return EventKind::kRuntime;
      break;
    case 8:
      if (cat == "Operator") return EventKind::kOperator;
      break;
    case 10:
      if (cat == "gpu_memcpy" || cat == "gpu_memset") return EventKind::kTransfer;
      break;
    case 11:
      if (cat == "cuda_driver") return EventKind::kDriver;
      break;
    case 12:
      if (cat == "cuda_runtime") return EventKind::kRuntime;
      break;
    case 15:
      if (cat == "user_annotation") return EventKind::kUserAnnotation;
      if (cat == "python_function") return EventKind::kPythonFunction;
      break;
  }
  return EventKind::kOther;
}

// Launches are runtime calls, or driver calls (cuLaunchKernel, which Triton and CUTLASS use).
bool IsLaunch(EventKind kind) { return kind == EventKind::kRuntime || kind == EventKind::kDriver; }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool IsNonNumericJsonValue(std::string_view raw) {
  raw = TrimRight(raw);
  return raw == "null" || raw == "true" || raw == "false" ||
         (!raw.empty() && (raw[0] == '"' || raw[0] == '[' || raw[0] == '{'));
}

// Reads an integer-valued JSON number (some writers emit floats for ids).
bool ReadInteger(od::value v, int64_t* out) {
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) {
    *out = i;
    return true;
  }
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

// FastMicrosToNanos() converts the common form, "[-]D{1,15}[.D{0,3}]", with no overflow checks
// (15 integer digits stay below INT64_MAX / 1000); nullopt for anything else, which the general
// path then takes. Every kernel and CPU op has two such numbers.
std::optional<int64_t> FastMicrosToNanos(std::string_view s) {
  size_t i = s.size() > 0 && s[0] == '-' ? 1 : 0;
  const size_t int_begin = i;
  uint64_t micros = 0;
  while (i < s.size() && static_cast<unsigned>(s[i] - '0') < 10) {
    micros = micros * 10 + static_cast<unsigned>(s[i] - '0');
    ++i;
  }
  if (i == int_begin || i - int_begin > 15) return std::nullopt;
  uint64_t frac = 0;
  int digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && static_cast<unsigned>(s[i] - '0') < 10; ++i, ++digits) {
      if (digits == 3) return std::nullopt;
      frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
    }
    if (digits == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  static constexpr uint64_t kScale[] = {1000, 100, 10, 1};
  const auto ns = static_cast<int64_t>(micros * 1000 + frac * kScale[digits]);
  return int_begin == 1 ? -ns : ns;
}

}  // namespace

std::optional<int64_t> MicrosToNanos(std::string_view s) {
  s = TrimRight(s);
  if (std::optional<int64_t> fast = FastMicrosToNanos(s)) return fast;
  if (s.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
  }
  size_t int_begin = i;
  unsigned __int128 micros = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    micros = micros * 10 + static_cast<unsigned>(s[i] - '0');
    if (micros > (unsigned __int128)(INT64_MAX / 1000)) return std::nullopt;
    ++i;
  }
  if (i == int_begin) return std::nullopt;
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t frac_begin = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
        ++frac_digits;
      } else if (i == frac_begin + 3) {
        round_up = s[i] >= '5';
      }
      ++i;
    }
    if (i == frac_begin) return std::nullopt;
  }
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return std::nullopt;
    // Exponent form is rare in traces: go through a double, rounding to the nearest nanosecond.
    std::string copy(s);
    char* end = nullptr;
    double d = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(d) || std::fabs(d) > 9.2e15)
      return std::nullopt;
    return static_cast<int64_t>(std::llround(d * 1000.0));
  }
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  int64_t ns =
      static_cast<int64_t>(micros) * 1000 + static_cast<int64_t>(frac) + (round_up ? 1 : 0);
  return negative ? -ns : ns;
}

bool IsStepAnnotation(std::string_view name) {
  return StartsWith(name, "ProfilerStep#") || StartsWith(name, "step[") ||
         (StartsWith(name, "execute_") && name.find("context") != std::string_view::npos);
}

void ParsedChunk::Reserve(size_t chunk_bytes) {
  // A Kineto kernel event takes about 500 bytes with its args, and its launch as many. A chunk
  // may hold only kernels (a graph replay's), while each launch mostly comes with a kernel.
  constexpr size_t kKernelEventBytes = 512;
  kernels.reserve(chunk_bytes / kKernelEventBytes);
  launches.reserve(chunk_bytes / (2 * kKernelEventBytes));
}

void ParsedChunk::Clear() {
  events = 0;
  kernels.clear();
  names.Clear();
  host.Clear();
  categories.clear();
  kernels_with_bad_times = 0;
  kernels_without_name = 0;
  whole_graph_replays = 0;
  whole_graph_replay_ns = 0;
  transfers.clear();
  transfer_names.Clear();
  transfers_with_bad_times = 0;
  launches.clear();
  launch_apis.Clear();
  steps.clear();
  step_names.Clear();
  steps_with_bad_times = 0;
  host_events_without_times = 0;
  evidence = EventEvidence();
}

// The fields of one event that tracefuse reads, as views into the parser's buffer.
struct EventFields {
  std::string_view cat, name, ts_raw, dur_raw;
  bool have_cat = false, have_name = false;
  EventKind kind = EventKind::kOther;  // by `cat`
  KernelEvent kernel;                  // args, read when the event may be a kernel or a transfer
  std::string_view pid_raw;            // a GPU event's device when its args name none
  std::string_view tid_raw;            // read with ParseOptions::host_activity only
  // A cpu_op's recorded arguments (raw JSON), read with ParseOptions::host_activity only.
  std::string_view input_dims, input_types, concrete_inputs;
};

constexpr std::string_view kModulePrefix = "nn.Module: ";

// HugePageBuffer is a parser's buffer: uninitialized memory of its own, 2 MiB-aligned and advised
// to be backed by transparent huge pages (MADV_HUGEPAGE), so that its first touch faults it in
// 2 MiB at a time. On this project's VMs (nested, paravirtualized page tables) a fresh 4 KiB page
// costs 20-50 us to fault in, a 2 MiB huge page 0.5-3 ms: a chunk's buffer was most of a small
// trace's fixed cost (docs/performance.md, "Small files"). Malloc'd memory would not do: the
// allocator's own writes would touch each 2 MiB range first, and a range that already has 4 KiB
// pages gets no huge page.
class HugePageBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kSmallPage = size_t{4} << 10;

  HugePageBuffer() = default;
  // Huge pages for the whole 2 MiB pages of `bytes`, and for what is left past them when that is
  // at least half a huge page; 4 KiB pages for a smaller rest. A chunk a little over 2 MiB (it
  // ends at the first event past the chunk size) then faults in one huge page and a 4 KiB page or
  // two, not a second huge page zeroed for a few bytes, and a buffer of a few events has 4 KiB
  // pages only. But a small trace's chunks (a quarter of its share per thread, 1.3 MB each for
  // 10 MB on two threads) fill most of a huge page: 400 faults of 4 KiB took 4-7 ms here, a whole
  // huge page 0.7 ms.
  explicit HugePageBuffer(size_t bytes) {
    const size_t rest = bytes & (kHugePage - 1);
    const size_t huge = (bytes - rest) + (rest >= kHugePage / 2 ? kHugePage : 0);
    const size_t align = huge > 0 ? kHugePage : kSmallPage;
    bytes_ = std::max(huge, (bytes + kSmallPage - 1) & ~(kSmallPage - 1));
    const size_t mapped = bytes_ + align - kSmallPage;  // room to align the start
    void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = (start + align - 1) & ~uintptr_t{align - 1};
    if (aligned > start) munmap(p, aligned - start);
    const uintptr_t tail = aligned + bytes_, end = start + mapped;
    if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
    data_ = reinterpret_cast<char*>(aligned);
    // Best effort: 4 KiB pages where the kernel declines.
    if (huge > 0) madvise(data_, huge, MADV_HUGEPAGE);
  }
  ~HugePageBuffer() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  HugePageBuffer(HugePageBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  char* get() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

struct ChunkParser::Impl {
  od::parser parser;
  // capacity + SIMDJSON_PADDING bytes, left uninitialized: pages are faulted in only as chunks
  // fill them, which is much of a small trace's fixed cost (docs/performance.md, "Small files").
  // Transparent huge pages (HugePageBuffer): an earlier measurement found them slower here (a
  // huge page the hypervisor had not backed yet took 8-10 ms), but these VMs now take 20-50 us
  // per 4 KiB page against 0.5-3 ms per 2 MiB huge page.
  HugePageBuffer buffer;
  size_t capacity = 0;
  // The chunk's distinct strings, keyed by views into the document (simdjson keeps every string
  // it unescapes until the next document); threads by "PID\tTID", which is built.
  absl::flat_hash_map<std::string_view, uint32_t, StringHash, StringEq> local_names;
  absl::flat_hash_map<std::string_view, uint32_t, StringHash, StringEq> local_host_names;
  absl::flat_hash_map<std::string_view, uint32_t, StringHash, StringEq> local_launch_apis;
  absl::flat_hash_map<std::string_view, uint32_t, StringHash, StringEq> local_transfer_names;
  std::string_view last_launch_api;  // LaunchApi()'s last name, valid while the chunk has one
  uint32_t last_launch_api_index = 0;
  StringMap<uint32_t> local_threads;
  StringMap<uint32_t> local_shapes;
  std::vector<OpModel> host_name_model;  // per host name of the chunk: OpModelOf()
  std::string shapes_key;                // Shapes()'s scratch
  std::string last_pid, last_tid;
  uint32_t last_thread = 0;
  double read_cpu_seconds = 0;  // of the last LayOut()
  // The document LayOut() prepared: in `buffer`, or in place in an in-place chunk's block.
  char* doc = nullptr;
  size_t doc_capacity = 0;

  // Past this, a parser's buffers are freed once the chunk is parsed: only a giant event makes a
  // chunk so large, and its memory is better returned for the rest of the run (the reducer keeps
  // that event's name) than kept for chunks that will not need it.
  static constexpr size_t kKeptCapacity = size_t{64} << 20;

  void ReleaseIfOversized() {
    if (capacity <= kKeptCapacity) return;
    local_names.clear();
    local_host_names.clear();
    local_launch_apis.clear();
    local_transfer_names.clear();
    local_shapes.clear();
    buffer = HugePageBuffer();
    parser = od::parser();
    capacity = 0;
  }

  void Reserve(size_t bytes) {
    if (bytes <= capacity) return;
    // Headroom: chunks are cut near a target size, a little over or under it, and each
    // reallocation faults the buffers in again.
    capacity = std::max(bytes + bytes / 4, capacity + capacity / 2);
    buffer = HugePageBuffer(capacity + simdjson::SIMDJSON_PADDING);
    if (parser.allocate(capacity) != simdjson::SUCCESS) throw std::bad_alloc();
  }

  // LayOut() makes the chunk's events, with their separators, one padded JSON array (`doc`), and
  // returns its length: in place for an in-place chunk, else copied or read into `buffer`.
  absl::StatusOr<size_t> LayOut(const EventChunk& chunk) {
    const size_t len = chunk.bytes() + 2;
    Reserve(len);  // simdjson's own buffers, and ours (which an in-place chunk leaves untouched)
    if (chunk.in_place) {
      static_assert(kBlockTailroom >= 1 + simdjson::SIMDJSON_PADDING);
      // The block's byte before the chunk and its tail room are this chunk's (EventChunk).
      doc = const_cast<char*>(chunk.pieces.front().data) - 1;
      doc_capacity = len + simdjson::SIMDJSON_PADDING;
    } else {
      doc = buffer.get();
      doc_capacity = capacity + simdjson::SIMDJSON_PADDING;
      absl::Status copied = CopyChunk(chunk, doc + 1);
      if (!copied.ok()) return copied;
    }
    doc[0] = '[';
    doc[len - 1] = ']';
    // simdjson reads its end sentinel from the first padding byte: spaces there, not a previous
    // chunk's bytes, so an array cut short is an error rather than closed by leftovers.
    std::memset(doc + len, ' ', simdjson::SIMDJSON_PADDING);
    return len;
  }

  absl::Status CopyChunk(const EventChunk& chunk, char* out) {
    if (chunk.file != nullptr) {
      const double started = ThreadCpuSeconds();
      absl::Status read = chunk.file->ReadAt(chunk.begin, chunk.bytes(), out);
      read_cpu_seconds = ThreadCpuSeconds() - started;
      if (!read.ok()) return read;
      out += chunk.bytes();
    }
    for (const Block& piece : chunk.pieces) {
      std::memcpy(out, piece.data, piece.size);
      out += piece.size;
    }
    return absl::OkStatus();
  }

  // Offset() is the input offset of `where`, a position in the buffer (the chunk's start when
  // simdjson cannot say).
  uint64_t Offset(const EventChunk& chunk, size_t len, const char* where) const {
    if (where == nullptr || where <= doc || where >= doc + len) return chunk.begin;
    return chunk.begin + static_cast<uint64_t>(where - doc - 1);
  }

  absl::Status Malformed(const EventChunk& chunk, size_t len, const std::string& display_name,
                         simdjson::error_code err, od::document* doc) const {
    const char* where = nullptr;
    if (doc == nullptr || doc->current_location().get(where) != simdjson::SUCCESS) where = nullptr;
    return Malformed(chunk, len, display_name, err, where);
  }
  absl::Status Malformed(const EventChunk& chunk, size_t len, const std::string& display_name,
                         simdjson::error_code err, const char* where) const {
    return absl::InvalidArgumentError(StrCat(display_name, ": malformed JSON at byte ",
                                             Offset(chunk, len, where), ": ",
                                             simdjson::error_message(err)));
  }

  // ReadTime() converts an event's ts or dur (`raw`) to nanoseconds, nullopt for one that is
  // missing or not a number. On-Demand hands out raw tokens unvalidated: a malformed number (as
  // opposed to a value of another type, a string or null, which the caller counts) is an error.
  absl::Status ReadTime(const EventChunk& chunk, size_t len, std::string_view raw,
                        const std::string& display_name, std::optional<int64_t>* time) const {
    *time = MicrosToNanos(raw);
    if (!*time && !raw.empty() && !IsNonNumericJsonValue(raw)) {
      return absl::InvalidArgumentError(StrCat(display_name, ": malformed JSON at byte ",
                                               Offset(chunk, len, raw.data()), ": invalid number '",
                                               TrimRight(raw.substr(0, 32)), "'"));
    }
    return absl::OkStatus();
  }

  // ReadTimes() reads an event's ts and dur as ReadTime() does.
  absl::Status ReadTimes(const EventChunk& chunk, size_t len, const EventFields& f,
                         const std::string& display_name, std::optional<int64_t>* ts,
                         std::optional<int64_t>* dur) const {
    absl::Status read = ReadTime(chunk, len, f.ts_raw, display_name, ts);
    return read.ok() ? ReadTime(chunk, len, f.dur_raw, display_name, dur) : read;
  }

  // AddKernel() records a kernel event: its times as integer nanoseconds and its name, interned
  // per chunk.
  absl::Status AddKernel(const EventChunk& chunk, size_t len, EventFields* f,
                         const std::string& display_name, ParsedChunk* out) {
    std::optional<int64_t> ts, dur;
    absl::Status read = ReadTimes(chunk, len, *f, display_name, &ts, &dur);
    if (!read.ok()) return read;
    KernelEvent& k = f->kernel;
    if (!ts || !dur) {
      ++out->kernels_with_bad_times;
      k.flags |= KernelEvent::kBadTimes;
    }
    k.ts_ns = ts.value_or(0);
    k.dur_ns = dur.value_or(0);
    if (k.device < 0) k.device = DeviceFromPid(f->pid_raw);
    if (!f->have_name) ++out->kernels_without_name;
    k.name = LocalName(f->name, out);
    if (k.flags & KernelEvent::kHasKind) ++out->evidence.kernels_with_kind;
    out->kernels.push_back(k);
    return absl::OkStatus();
  }

  // AddTransfer() records a memcpy or memset event with its times and device.
  absl::Status AddTransfer(const EventChunk& chunk, size_t len, const EventFields& f,
                           const std::string& display_name, ParsedChunk* out) {
    std::optional<int64_t> ts, dur;
    absl::Status read = ReadTimes(chunk, len, f, display_name, &ts, &dur);
    if (!read.ok()) return read;
    if (!ts || !dur) {
      ++out->transfers_with_bad_times;
      return absl::OkStatus();
    }
    const int32_t device = f.kernel.device >= 0 ? f.kernel.device : DeviceFromPid(f.pid_raw);
    const bool has_correlation = f.kernel.flags & KernelEvent::kHasCorrelation;
    out->transfers.push_back(
        GpuTransfer{*ts, *dur, f.kernel.correlation, device, f.kernel.stream, has_correlation,
                    Intern(f.name, &local_transfer_names, &out->transfer_names)});
    return absl::OkStatus();
  }

  // AddStepMark() records a launch or a step annotation, what places GPU events in steps.
  absl::Status AddStepMark(const EventChunk& chunk, size_t len, const EventFields& f,
                           const std::string& display_name, ParsedChunk* out) {
    const bool launch = IsLaunch(f.kind) && (f.kernel.flags & KernelEvent::kHasCorrelation);
    const bool step = !launch && IsStepMark(f);
    if (!launch && !step) return absl::OkStatus();
    std::optional<int64_t> ts, dur;
    absl::Status read = ReadTimes(chunk, len, f, display_name, &ts, &dur);
    if (!read.ok()) return read;
    if (launch) {  // a launch's step is where it starts
      if (ts) {
        const uint32_t api = LaunchApi(f.name, out);
        out->launches.push_back(
            Launch{*ts, std::max<int64_t>(dur.value_or(0), 0), f.kernel.correlation, api});
      }
      return absl::OkStatus();
    }
    if (!ts || !dur || *dur < 0) {
      ++out->steps_with_bad_times;
    } else {
      out->steps.push_back(StepAnnotation{*ts, *dur, out->step_names.Append(f.name)});
    }
    return absl::OkStatus();
  }

  static bool IsStepMark(const EventFields& f) {
    if (f.kind == EventKind::kUserAnnotation) return IsStepAnnotation(f.name);
    return f.kind == EventKind::kOperator && StartsWith(f.name, "ProfilerStep#");
  }

  // DeviceFromPid() is a GPU event's pid as its device (Kineto writes the device index there),
  // -1 when it is not an integer.
  static int32_t DeviceFromPid(std::string_view pid_raw) {
    const std::string_view digits = TrimRight(pid_raw);
    int32_t pid = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (error != std::errc() || end != digits.data() + digits.size() || pid < 0) return -1;
    return pid;
  }

  // LaunchApi() interns a launch's name per chunk; runs of one name (an eager model's
  // cudaLaunchKernel) skip the hash.
  uint32_t LaunchApi(std::string_view name, ParsedChunk* out) {
    if (out->launch_apis.size() == 0 || name != last_launch_api) {
      last_launch_api = name;
      last_launch_api_index = Intern(name, &local_launch_apis, &out->launch_apis);
    }
    return last_launch_api_index;
  }

  uint32_t LocalName(std::string_view name, ParsedChunk* out) {
    return Intern(name, &local_names, &out->names);
  }

  // AddHostEvent() keeps a CPU-side event the op-level comparison reads: an op, annotation or
  // module frame with its times, or a runtime call with its correlation id.
  absl::Status AddHostEvent(const EventChunk& chunk, size_t len, const EventFields& f,
                            const std::string& display_name, ParsedChunk* out) {
    std::optional<HostOpKind> kind = HostOpKindOf(f);
    const bool call = !kind && (f.kernel.flags & KernelEvent::kHasCorrelation) && IsLaunch(f.kind);
    if (!kind && !call) return absl::OkStatus();
    std::optional<int64_t> ts, dur;
    absl::Status read = ReadTimes(chunk, len, f, display_name, &ts, &dur);
    if (!read.ok()) return read;
    if (!ts || (kind && !dur)) {
      ++out->host_events_without_times;
      return absl::OkStatus();
    }
    HostActivity& host = out->host;
    const uint32_t thread = Thread(f, &host);
    const auto position = static_cast<uint32_t>(out->events - 1);
    if (call) {
      host.calls.push_back(RuntimeCall{*ts, f.kernel.correlation, thread,
                                       Intern(f.name, &local_host_names, &host.names), position});
      return absl::OkStatus();
    }
    std::string_view name = f.name;
    if (*kind == HostOpKind::kModule) name.remove_prefix(kModulePrefix.size());
    const uint32_t name_id = Intern(name, &local_host_names, &host.names);
    host.ops.push_back(
        HostOp{*ts, *dur, thread, name_id, *kind, position, Shapes(f, name_id, &host)});
    return absl::OkStatus();
  }

  // Shapes() interns a cpu_op's recorded arguments when a perf model reads them: an op with a
  // model (told once per distinct name) and recorded dims.
  uint32_t Shapes(const EventFields& f, uint32_t name_id, HostActivity* host) {
    while (host_name_model.size() < host->names.size()) {
      host_name_model.push_back(OpModelOf(host->names[host_name_model.size()]));
    }
    if (f.kind != EventKind::kOperator || f.input_dims.empty() ||
        host_name_model[name_id] == OpModel::kNone) {
      return kNoShapes;
    }
    shapes_key.assign(f.input_dims);
    shapes_key.append(1, '\x1f').append(f.input_types).append(1, '\x1f').append(f.concrete_inputs);
    auto [slot, inserted] = local_shapes.try_emplace(shapes_key, 0);
    if (inserted) slot->second = host->shapes.Append(shapes_key);
    return slot->second;
  }

  static std::optional<HostOpKind> HostOpKindOf(const EventFields& f) {
    if (f.kind == EventKind::kOperator) return HostOpKind::kOperator;
    if (f.kind == EventKind::kUserAnnotation) {
      return IsStepAnnotation(f.name) ? HostOpKind::kStep : HostOpKind::kAnnotation;
    }
    if (f.kind == EventKind::kPythonFunction && StartsWith(f.name, kModulePrefix)) {
      return HostOpKind::kModule;
    }
    return std::nullopt;
  }

  // Thread() interns the event's "PID\tTID"; consecutive events mostly share one.
  uint32_t Thread(const EventFields& f, HostActivity* host) {
    const std::string_view pid = TrimRight(f.pid_raw), tid = TrimRight(f.tid_raw);
    if (host->threads.size() > 0 && pid == last_pid && tid == last_tid) return last_thread;
    last_pid.assign(pid);
    last_tid.assign(tid);
    last_thread = Intern(StrCat(pid, "\t", tid), &local_threads, &host->threads);
    return last_thread;
  }

  template <typename Index>
  static uint32_t Intern(std::string_view s, Index* index, InternedStrings* table) {
    auto [slot, inserted] = index->try_emplace(s, 0);
    if (inserted) slot->second = table->Append(s);
    return slot->second;
  }
};

namespace {

// FindStringError() and FindUtf8Error() locate what simdjson's first pass rejects without saying
// where, so the offset in the message does not depend on where the chunk began. The first
// control character inside a string, or the opening quote of a string left unclosed (nullptr
// when neither).
const char* FindStringError(std::string_view json) {
  const char* opening = nullptr;
  bool escaped = false;
  for (const char& c : json) {
    if (opening == nullptr) {
      if (c == '"') opening = &c;
    } else if (escaped) {
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '"') {
      opening = nullptr;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      return &c;
    }
  }
  return opening;
}

// FindUtf8Error() returns the first byte of `json` that does not start or continue a valid UTF-8
// sequence (RFC 3629: shortest form, no surrogates, at most U+10FFFF), or nullptr.
const char* FindUtf8Error(std::string_view json) {
  const auto* p = reinterpret_cast<const unsigned char*>(json.data());
  const auto* end = p + json.size();
  while (p < end) {
    const unsigned char c = *p;
    int length = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (length == 0 || end - p < length) return reinterpret_cast<const char*>(p);
    uint32_t code = length == 1 ? c : c & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      if ((p[i] & 0xC0) != 0x80) return reinterpret_cast<const char*>(p);
      code = (code << 6) | (p[i] & 0x3F);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return reinterpret_cast<const char*>(p);
    }
    p += length;
  }
  return nullptr;
}

}  // namespace

const char* FirstPassErrorAt(std::string_view json, simdjson::error_code err) {
  if (err == simdjson::UTF8_ERROR) return FindUtf8Error(json);
  if (err == simdjson::UNESCAPED_CHARS || err == simdjson::UNCLOSED_STRING) {
    return FindStringError(json);
  }
  return nullptr;
}

namespace {

uint64_t& CategorySlot(std::string_view cat, ParsedChunk* out) {
  for (auto& entry : out->categories)
    if (entry.first == cat) return entry.second;
  out->categories.emplace_back(std::string(cat), 0);
  return out->categories.back().second;
}

// IsAtom() says whether `raw` (a value's token, then spaces) is the literal `atom`.
bool IsAtom(std::string_view raw, std::string_view atom) {
  if (raw.substr(0, atom.size()) != atom) return false;
  raw.remove_prefix(atom.size());
  return raw.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// MisplacedValue() catches what On-Demand lets through in any value: it skips a missing value
// (`"a": }`) as a value that ends there, and a string that a ':' follows as a key: `{"a": "x": 1}
// }` and `{"a": }}` would parse, the extra '}' closing the object (found by fuzz_trace).
// BareWord() catches, in a value that is read, a bare word (`"name": x`, `"cat": tru`) that
// On-Demand would take for an atom of another type; numbers are checked where they are read (ts,
// dur, correlation...), with their own message. Values nobody reads are not validated.
bool MisplacedValue(std::string_view raw) {
  switch (raw[0]) {  // a switch: string_view::find() here was a memchr() call, 6 % of a parse
    case ',':
    case ':':
    case ']':
    case '}':
      return true;
    case '"':
      return raw.data()[raw.size()] == ':';
    default:
      return false;
  }
}

bool BareWord(std::string_view raw) {
  switch (raw[0]) {
    case '"':
    case '{':
    case '[':
    case '-':
      return false;
    case 't':
      return !IsAtom(raw, "true");
    case 'f':
      return !IsAtom(raw, "false");
    case 'n':
      return !IsAtom(raw, "null");
    default:
      return raw[0] < '0' || raw[0] > '9';
  }
}

// ForEachField() calls on_field(key, value) for each field of `object`, stopping at the first
// malformed one.
template <typename OnField>
simdjson::error_code ForEachField(od::object object, OnField&& on_field) {
  simdjson::error_code err = simdjson::SUCCESS;
  for (auto field : object) {
    od::raw_json_string key;
    if ((err = field.key().get(key))) return err;
    od::value value;
    if ((err = field.value().get(value))) return err;
    const std::string_view raw = value.raw_json_token();
    if (MisplacedValue(raw)) return simdjson::TAPE_ERROR;
    if ((err = on_field(key, value))) return err;
  }
  return err;
}

// ReadString() views a string value in place when it holds no escape, and has simdjson unescape
// it otherwise. Names are most of a trace's string bytes: a view copies nothing (a 300 MB kernel
// name would take 300 MB more of simdjson's string buffer). Stage 1 has already checked the bytes
// (UTF-8, no raw control characters).
bool ReadString(od::value value, std::string_view* out) {
  std::string_view token = value.raw_json_token();  // the string, then spaces to the next token
  if (token.empty() || token.front() != '"') return false;
  while (token.size() > 1 && token.back() != '"') token.remove_suffix(1);
  if (token.size() >= 2 && token.find('\\') == std::string_view::npos) {
    *out = token.substr(1, token.size() - 2);
    return true;
  }
  return value.get_string().get(*out) == simdjson::SUCCESS;
}

// ReadStringField() reads a string field that may hold another type (counted by the caller as
// missing: `have` false), but not a bare word.
simdjson::error_code ReadStringField(od::value value, std::string_view* out, bool* have) {
  const std::string_view raw = value.raw_json_token();
  *have = ReadString(value, out);
  return !*have && BareWord(raw) ? simdjson::TAPE_ERROR : simdjson::SUCCESS;
}

// OpArgSlot() is where a cpu_op's recorded argument named `key` goes (profiler
// record_shapes=True), nullptr for other keys: the perf models read them, once per distinct value.
std::string_view* OpArgSlot(od::raw_json_string key, EventFields* f) {
  return key == "Input Dims"        ? &f->input_dims
         : key == "Input type"      ? &f->input_types
         : key == "Concrete Inputs" ? &f->concrete_inputs
                                    : nullptr;
}

// ReadRawList() takes a list as raw JSON; anything else is left unread.
simdjson::error_code ReadRawList(od::value v, std::string_view* raw) {
  od::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) return simdjson::SUCCESS;
  // simdjson's view runs to the next token: the whitespace after the list goes, so that the same
  // shapes make the same key however the file is indented.
  const simdjson::error_code err = list.raw_json().get(*raw);
  *raw = TrimRight(*raw);
  return err;
}

// ReadArgs() takes, with `kernel_args`, correlation, external id, stream, device and the
// roctracer-only `kind` from a GPU event's or a launch's `args`, and with `op_args` a cpu_op's
// recorded arguments: an event whose `cat` comes after its args may be either.
simdjson::error_code ReadArgs(od::value value, bool kernel_args, bool op_args, EventFields* f) {
  od::object args;
  if (value.get_object().get(args) != simdjson::SUCCESS) return simdjson::SUCCESS;
  KernelEvent* k = &f->kernel;
  return ForEachField(args, [=](od::raw_json_string key, od::value v) {
    if (std::string_view* raw = op_args ? OpArgSlot(key, f) : nullptr) return ReadRawList(v, raw);
    if (!kernel_args) return simdjson::SUCCESS;
    int64_t n;
    if (key == "correlation") {
      if (ReadInteger(v, &n)) {
        k->correlation = n;
        k->flags |= KernelEvent::kHasCorrelation;
      }
    } else if (key == "External id" || key == "external id") {
      if (ReadInteger(v, &n)) {
        k->external_id = n;
        k->flags |= KernelEvent::kHasExternalId;
      }
    } else if (key == "stream") {
      if (ReadInteger(v, &n)) k->stream = static_cast<int32_t>(n);
    } else if (key == "device") {
      if (ReadInteger(v, &n)) k->device = static_cast<int32_t>(n);
    } else if (key == "kind") {
      k->flags |= KernelEvent::kHasKind;
    }
    return simdjson::SUCCESS;
  });
}

// ReadEvent() reads the fields tracefuse needs; `args` only when the event may be a GPU event or a
// launch (its `cat`, when it comes first, says so), since args are most of an event's bytes.
simdjson::error_code ReadEvent(od::object event, bool host, EventFields* f) {
  auto wants_args = [](const EventFields& f) {
    return !f.have_cat || f.kind == EventKind::kKernel || f.kind == EventKind::kTransfer ||
           IsLaunch(f.kind);
  };
  simdjson::error_code err = ForEachField(event, [&](od::raw_json_string key, od::value value) {
    if (key == "cat") {
      const simdjson::error_code read = ReadStringField(value, &f->cat, &f->have_cat);
      f->kind = f->have_cat ? EventKindOf(f->cat) : EventKind::kOther;
      return read;
    }
    if (key == "name") return ReadStringField(value, &f->name, &f->have_name);
    if (key == "ts") {
      f->ts_raw = value.raw_json_token();
    } else if (key == "dur") {
      f->dur_raw = value.raw_json_token();
    } else if (key == "args" && wants_args(*f)) {
      return ReadArgs(value, true, host && !f->have_cat, f);
    } else if (key == "args" && host && f->kind == EventKind::kOperator &&
               (!f->have_name || OpModelOf(f->name) != OpModel::kNone)) {
      // Only the ops a perf model reads have their args read: they are most of an op's bytes.
      return ReadArgs(value, false, true, f);
    } else if (key == "pid") {
      f->pid_raw = value.raw_json_token();
    } else if (host && key == "tid") {
      f->tid_raw = value.raw_json_token();
    }
    return simdjson::SUCCESS;
  });
  if (!f->have_cat) {
    f->cat = {};
    f->kind = EventKind::kOther;
  }
  if (!f->have_name) f->name = {};
  return err;
}

void CountRuntimeCall(const EventFields& f, EventEvidence* evidence) {
  if (StartsWith(f.name, "hip")) {
    ++evidence->hip_runtime_calls;
  } else if (StartsWith(f.name, "cuda")) {
    ++evidence->cuda_runtime_calls;
  }
}

}  // namespace

ChunkParser::ChunkParser(size_t initial_capacity) : impl_(std::make_unique<Impl>()) {
  impl_->Reserve(initial_capacity);
}
ChunkParser::~ChunkParser() = default;

absl::Status ChunkParser::Parse(const EventChunk& chunk, const std::string& display_name,
                                ParsedChunk* out, const ParseOptions& options) {
  absl::Status parsed = ParseInBuffers(chunk, display_name, out, options);
  impl_->ReleaseIfOversized();
  return parsed;
}

absl::Status ChunkParser::ParseInBuffers(const EventChunk& chunk, const std::string& display_name,
                                         ParsedChunk* out, const ParseOptions& options) {
  Impl& im = *impl_;
  out->Clear();
  out->seq = chunk.seq;
  out->begin = chunk.begin;
  out->bytes = chunk.bytes();
  im.read_cpu_seconds = 0;
  absl::StatusOr<size_t> laid_out = im.LayOut(chunk);
  out->read_cpu_seconds = im.read_cpu_seconds;
  if (!laid_out.ok()) return laid_out.status();
  const size_t len = *laid_out;

  od::document doc;
  simdjson::error_code err = im.parser.iterate(im.doc, len, im.doc_capacity).get(doc);
  if (err) {
    const std::string_view json(im.doc, len);
    return im.Malformed(chunk, len, display_name, err, FirstPassErrorAt(json, err));
  }
  od::array events;
  if ((err = doc.get_array().get(events))) {
    return im.Malformed(chunk, len, display_name, err, static_cast<const char*>(nullptr));
  }
  ClearKeepingCapacity(&im.local_names);
  ClearKeepingCapacity(&im.local_host_names);
  ClearKeepingCapacity(&im.local_launch_apis);
  ClearKeepingCapacity(&im.local_transfer_names);
  ClearKeepingCapacity(&im.local_threads);
  ClearKeepingCapacity(&im.local_shapes);
  im.host_name_model.clear();
  for (auto item : events) {
    od::object event;
    EventFields f;
    if ((err = item.get_object().get(event)) ||
        (err = ReadEvent(event, options.host_activity, &f))) {
      return im.Malformed(chunk, len, display_name, err, &doc);
    }
    ++out->events;
    ++CategorySlot(f.cat, out);
    if (f.kind == EventKind::kKernel) {
      absl::Status added = im.AddKernel(chunk, len, &f, display_name, out);
      if (!added.ok()) return added;
      continue;
    }
    if (f.kind == EventKind::kTransfer) {
      absl::Status added = im.AddTransfer(chunk, len, f, display_name, out);
      if (!added.ok()) return added;
      continue;
    }
    if (f.have_name && f.kind == EventKind::kRuntime) CountRuntimeCall(f, &out->evidence);
    absl::Status marked = im.AddStepMark(chunk, len, f, display_name, out);
    if (!marked.ok()) return marked;
    if (options.host_activity) {
      absl::Status added = im.AddHostEvent(chunk, len, f, display_name, out);
      if (!added.ok()) return added;
    }
  }
  // A chunk cut speculatively inside an event, or past the end of the events array, closes the
  // array early and leaves bytes after it.
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS) {
    return im.Malformed(chunk, len, display_name, simdjson::TAPE_ERROR, &doc);
  }
  return absl::OkStatus();
}

namespace {

bool PythonTruthy(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return false;
    case simdjson::dom::element_type::BOOL:
      return e.get_bool().value_unsafe();
    case simdjson::dom::element_type::INT64:
      return e.get_int64().value_unsafe() != 0;
    case simdjson::dom::element_type::UINT64:
      return e.get_uint64().value_unsafe() != 0;
    case simdjson::dom::element_type::DOUBLE:
      return e.get_double().value_unsafe() != 0.0;
    case simdjson::dom::element_type::STRING:
      return !e.get_string().value_unsafe().empty();
    case simdjson::dom::element_type::ARRAY:
      return e.get_array().value_unsafe().size() != 0;
    case simdjson::dom::element_type::OBJECT:
      return e.get_object().value_unsafe().size() != 0;
  }
  return false;
}

}  // namespace

absl::StatusOr<TraceMetadata> ParseTraceMetadata(std::string_view json,
                                                 const std::string& display_name) {
  TraceMetadata meta;
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    return absl::InvalidArgumentError(StrCat(
        display_name, ": malformed JSON in the top-level keys: ", simdjson::error_message(err)));
  }
  simdjson::dom::object top;
  if (root.get_object().get(top)) return meta;  // a bare array of events
  for (auto [key, value] : top) {
    meta.keys.emplace_back(key);
    if (key == "deviceProperties") {
      simdjson::dom::array devices;
      if (value.get_array().get(devices) == simdjson::SUCCESS) {
        simdjson::dom::object first;
        if (devices.size() > 0 && devices.at(0).get_object().get(first) == simdjson::SUCCESS) {
          std::string_view name;
          if (first["name"].get_string().get(name) == simdjson::SUCCESS)
            meta.gpu_name = std::string(name);
          int64_t warp;
          if (first["warpSize"].get_int64().get(warp) == simdjson::SUCCESS) meta.warp_size = warp;
        }
      }
    } else if (key == "roctracer_version") {
      meta.has_roctracer_version = true;
      meta.roctracer_version_truthy = PythonTruthy(value);
    } else if (key == "cupti_version") {
      meta.has_cupti_version = true;
    } else if (key == "cuda_runtime_version") {
      meta.has_cuda_runtime_version = true;
    } else if (key == "hip_runtime_version") {
      meta.has_hip_runtime_version = true;
    } else if (key == "distributedInfo") {
      int64_t rank;
      if (value["rank"].get_int64().get(rank) == simdjson::SUCCESS) meta.rank = rank;
    } else if (key == "baseTimeNanoseconds") {
      int64_t base;
      if (value.get_int64().get(base) == simdjson::SUCCESS) meta.base_time_ns = base;
    }
  }
  return meta;
}

}  // namespace tracefuse
