// Stage 7, report: the Perfetto writer. TraceWriter streams one packet sequence of a Perfetto
// trace (a `Trace`: one length-delimited `TracePacket` after another, perfetto_trace.proto) to an
// OutputFile: track descriptors, slices, counters and flows, with event names, argument names
// and string values interned as Perfetto's own SDK does, so that a trace of millions of kernels
// names each kernel once.
//
// Performance: a slice is two packets (Perfetto's TrackEvent has no duration), encoded straight
// into one buffer with libprotobuf's wire-format functions, field numbers taken from the classes
// protoc generates from perfetto_trace.proto; building a message object per packet costs several
// times more. Callers intern what repeats (a kernel's name, category, role) once and pass the
// ids, so that writing a slice hashes no string.
#ifndef TRACEFUSE_SRC_REPORT_PERFETTO_TRACE_WRITER_H_
#define TRACEFUSE_SRC_REPORT_PERFETTO_TRACE_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

// InternedText is a string argument value interned by TraceWriter::Text().
struct InternedText {
  uint64_t iid = 0;
};

// TraceArg is one argument of a slice, shown in Perfetto's "Arguments" panel: its name interned
// by TraceWriter::ArgName(), and its value.
struct TraceArg {
  uint64_t name = 0;
  std::variant<InternedText, int64_t, uint64_t, double> value;
};

// TraceSink is where the writers of one trace append their packets: an OutputFile, shared by
// writers on `lanes` threads, each appending whole packets on its lane. The lanes append in turn
// (0, 1, 0, ...; a lane that is closed gives up its turns), so that the file's bytes do not
// depend on which thread runs faster.
class TraceSink {
 public:
  explicit TraceSink(OutputFile* out, int lanes = 1) : out_(out), open_(lanes, true) {}
  absl::Status Append(std::string_view packets, int lane = 0);
  // Close() ends `lane`: it appends nothing more.
  void Close(int lane);

 private:
  void PassTurn();  // with mutex_ held

  std::mutex mutex_;
  std::condition_variable turn_changed_;
  OutputFile* out_;
  std::vector<bool> open_;
  int turn_ = 0;
  absl::Status status_;
};

// TraceWriter writes one packet sequence. Tracks are declared before their first event; events
// may come in any order (trace_processor sorts them by time; packets of equal time keep their
// order).
class TraceWriter {
 public:
  // `sequence`: the sequence id, one per writer of a trace; track uuids are numbered from
  // `first_uuid`, so that writers of one trace give distinct ranges; `lane`: the sink's lane.
  explicit TraceWriter(TraceSink* sink, uint32_t sequence = 1, uint64_t first_uuid = 1,
                       int lane = 0);

  // AddProcess() declares a process track (a side of a comparison), its child tracks shown in
  // the order of their ranks, and returns its uuid. `description` shows in its details.
  uint64_t AddProcess(int32_t pid, std::string_view name, std::string_view description = {});
  // AddTrack() declares a slice track under `parent` (0: none), shown in `rank` order among its
  // siblings and never merged with a sibling of the same name.
  uint64_t AddTrack(uint64_t parent, std::string_view name, int32_t rank,
                    std::string_view description = {});
  // AddCounterTrack() declares a counter track under `parent`; `unit_name` labels its values.
  uint64_t AddCounterTrack(uint64_t parent, std::string_view name, std::string_view unit_name,
                           int32_t rank);

  // EventName(), ArgName() and Text() intern a slice name, an argument name and a string value:
  // the first packet written after carries its text, the others its iid.
  uint64_t EventName(std::string_view name);
  uint64_t ArgName(std::string_view name);
  InternedText Text(std::string_view value);
  // Arg() is the argument `name` = `value`, both interned as needed.
  TraceArg Arg(std::string_view name, std::string_view value) {
    return TraceArg{ArgName(name), Text(value)};
  }
  template <typename Number, typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
  TraceArg Arg(std::string_view name, Number value) {
    if constexpr (std::is_floating_point_v<Number>) {
      return TraceArg{ArgName(name), static_cast<double>(value)};
    } else if constexpr (std::is_signed_v<Number>) {
      return TraceArg{ArgName(name), static_cast<int64_t>(value)};
    } else {
      return TraceArg{ArgName(name), static_cast<uint64_t>(value)};
    }
  }

  // Slice() writes [start_ns, end_ns) on `track` as a begin and an end event, named `name`
  // (EventName()). `flows` starts flows from it (or continues them), `terminating_flows` ends
  // flows at it.
  void Slice(uint64_t track, int64_t start_ns, int64_t end_ns, uint64_t name,
             absl::Span<const TraceArg> args, absl::Span<const uint64_t> flows = {},
             absl::Span<const uint64_t> terminating_flows = {});
  void Slice(uint64_t track, int64_t start_ns, int64_t end_ns, std::string_view name,
             absl::Span<const TraceArg> args, absl::Span<const uint64_t> flows = {},
             absl::Span<const uint64_t> terminating_flows = {}) {
    Slice(track, start_ns, end_ns, EventName(name), args, flows, terminating_flows);
  }
  // Counter() sets `track`'s value from `ts_ns` on.
  void Counter(uint64_t track, int64_t ts_ns, int64_t value);

  // Flush() appends what is buffered: the packets so far reach the file before any that another
  // writer appends after.
  absl::Status Flush();
  // Finish() is Flush(); the writer writes nothing after it.
  absl::Status Finish() { return Flush(); }

  // The packets written so far, for tests and the summary line.
  uint64_t packets() const { return packets_; }

 private:
  static uint64_t Intern(std::string_view text, int table_field, int iid_field, int text_field,
                         absl::flat_hash_map<std::string, uint64_t>* ids, std::string* interned);
  void AppendPacket(int64_t ts_ns, const uint8_t* event, size_t event_bytes);
  void AppendDescriptor(const std::string& descriptor);
  void FlushIfFull();

  TraceSink* sink_;
  uint32_t sequence_;
  int lane_;
  absl::Status status_;
  std::string buffer_;          // encoded packets not yet appended to the sink
  std::vector<uint8_t> event_;  // the TrackEvent being encoded
  std::string interned_;        // the names the next packet interns (InternedData), encoded
  absl::flat_hash_map<std::string, uint64_t> event_names_;  // name -> iid
  absl::flat_hash_map<std::string, uint64_t> arg_names_;
  absl::flat_hash_map<std::string, uint64_t> texts_;
  uint64_t next_uuid_;
  uint64_t packets_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_PERFETTO_TRACE_WRITER_H_
