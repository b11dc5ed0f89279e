// The rocprofv3 JSON importer: `rocprofv3 --output-format json` (rocprofiler-sdk), plain or
// compressed.
//
// The document is {"rocprofiler-sdk-tool": [one object per process]}, each process holding:
//   metadata.pid
//   agents                       id.handle, type (2: GPU), logical_node_type_id (the GPU's
//                                index), product_name ("AMD Instinct MI350X")
//   strings.buffer_records       [kind] -> {kind, operations: [name by operation]}: API names
//   strings.marker_api           [{key: correlation id, value: the roctx range's text}]
//   kernel_symbols               kernel_id -> formatted_kernel_name (as rocprofv3 displays it),
//                                demangled_kernel_name, kernel_name (mangled, with ".kd")
//   buffer_records.kernel_dispatch  start/end_timestamp (ns), correlation_id.internal,
//                                dispatch_info.{agent_id, queue_id, kernel_id}, stream_id
//   buffer_records.hip_api       kind, operation, correlation_id.internal, start/end_timestamp
//   buffer_records.memory_copy   start/end_timestamp, src/dst_agent_id, correlation_id.internal
//   buffer_records.marker_api    roctx ranges, their text in strings.marker_api
// A kernel and the HIP call that launched it share correlation_id.internal.
//
// Performance note: rocprofv3 writes one document whose records lie in one array per kind and
// process, in completion order. Rocprofv3Layout walks the brackets of the whole input once (on
// the calling thread, about 3 GB/s) and cuts those arrays into slices of whole records; each
// slice is parsed by a task on the pipeline's threads as soon as it is found (simdjson On-Demand)
// and sorted by start. The bytes are read once: the walk reads them into the buffer that its
// next slice is then parsed in, and buffers go back to a pool. Once the skeleton around them
// (agents, strings, symbols: small) is read, the slices are resolved, a task each, and Next()
// merges them by start. Only the records are held, in 64 bytes each, and a few slices' text.
// docs/performance.md, "The vendors' formats".
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "importers.h"
#include "json_errors.h"
#include "rocprofv3_layout.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {
namespace {

namespace od = simdjson::ondemand;

constexpr int64_t kGpuAgentType = 2;
// How many records are read between two looks at InterruptSignal() (a few milliseconds).
constexpr size_t kRecordsBetweenChecks = 64 << 10;

// Record is one activity, call or range. As read, `key` is the kernel_id or a copy's source agent,
// and `agent` a handle; Resolve() turns them into a name index (for a range, its text's index in
// range_texts_, found by its correlation id) and a device.
struct Record {
  int64_t start = 0, end = 0;
  int64_t correlation = -1;  // -1: none
  int64_t key = 0;
  int64_t agent = -1;  // for a call or range: the process's pid, once resolved
  int64_t thread = 0;
  int64_t operation = 0;  // a call's or range's kind << 32 | operation
  int32_t stream = -1;
  RecordType type = RecordType::kKernel;
  bool bad_times = false;  // a kernel without its times: kept at zero length, counted
  bool skipped = false;    // a roctx call that is no range (a mark, a thread's name): counted
};

struct Agent {
  int64_t type = 0;
  int64_t index = -1;
  std::string product_name;
};

// Process is what one process's object gives, until its records are resolved.
struct Process {
  int64_t pid = 0;
  absl::flat_hash_map<int64_t, Agent> agents;
  std::vector<std::vector<std::string>> operations;  // [kind][operation]
  absl::flat_hash_map<int64_t, std::string> kernel_names;
  // Filled once the skeleton is read, for the slices' threads to resolve records with.
  int64_t correlation_base = 0;                           // see ProcessCorrelations
  absl::flat_hash_map<int64_t, int64_t> kernel_name_ids;  // kernel_id -> name index
  std::vector<std::vector<int64_t>> operation_name_ids;   // [kind][operation] -> name index
  int64_t no_name = 0;                                    // the name index of ""
};

// SliceRecords is what one slice gives: its records, resolved and in start order.
struct SliceRecords {
  std::vector<Record> records;
  absl::Status status;
  uint64_t transfers_without_times = 0, calls_without_times = 0;
  uint64_t error_at = UINT64_MAX;          // the input offset of `status`'s error
  std::map<std::string, uint64_t> unread;  // roctx calls that are no ranges, by name
  std::vector<int64_t> kernel_agents;      // its kernels' agent handles, in document order, once
  // Of a slice of strings.marker_api: the texts, one after the other in range_text_bytes, as
  // (correlation id, end).
  std::vector<std::pair<int64_t, size_t>> range_texts;
  std::string range_text_bytes;
};

// Int() reads an integer into `out` and says so in `read`. A value of another type (null, a
// string, a float) is valid JSON, only not what the rocprofv3 versions known write: it is not
// read, and not an error.
simdjson::error_code Int(od::value value, int64_t* out, bool* read = nullptr) {
  int64_t v = 0;
  const simdjson::error_code err = value.get_int64().get(v);
  if (err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_OUT_OF_RANGE ||
      err == simdjson::NUMBER_ERROR) {
    return simdjson::SUCCESS;
  }
  if (err) return err;
  *out = v;
  if (read != nullptr) *read = true;
  return simdjson::SUCCESS;
}

// Text() reads a string into `out`; a value of another type is not read, as for Int().
simdjson::error_code Text(od::value value, std::string_view* out) {
  const simdjson::error_code err = value.get_string().get(*out);
  return err == simdjson::INCORRECT_TYPE ? simdjson::SUCCESS : err;
}

// AgentType() reads an agent's type: the enum's value (2: GPU), or its name in a version that
// writes names.
simdjson::error_code AgentType(od::value value, int64_t* out) {
  std::string_view name;
  if (value.get_string().get(name) == simdjson::SUCCESS) {
    *out = name == "GPU" ? kGpuAgentType : 0;
    return simdjson::SUCCESS;
  }
  return Int(value, out);
}

// KernelName() is a kernel symbol's name as rocprofv3 displays it (formatted_kernel_name, the
// rocpd database's display_name), else its demangled or mangled name less the ".kd" of its
// descriptor.
std::string KernelName(std::string_view formatted, std::string_view demangled,
                       std::string_view mangled) {
  if (!formatted.empty()) return std::string(formatted);
  std::string_view name = demangled.empty() ? mangled : demangled;
  if (name.size() > 3 && name.substr(name.size() - 3) == ".kd") name.remove_suffix(3);
  return std::string(name);
}

simdjson::error_code ReadMetadata(od::value& value, Process* p) {
  od::object metadata;
  if (auto err = value.get_object().get(metadata)) return err;
  for (auto field : metadata) {
    od::raw_json_string key;
    if (auto err = field.key().get(key)) return err;
    if (key == "pid") return Int(field.value(), &p->pid);
  }
  return simdjson::SUCCESS;
}

// Handle() reads {"handle": N}.
simdjson::error_code Handle(od::value value, int64_t* out) {
  od::object object;
  if (auto err = value.get_object().get(object)) {
    return err == simdjson::INCORRECT_TYPE ? simdjson::SUCCESS : err;  // not read, as Int()
  }
  for (auto field : object) {
    od::raw_json_string key;
    if (auto err = field.key().get(key)) return err;
    if (key == "handle" || key == "internal") return Int(field.value(), out);
  }
  return simdjson::SUCCESS;
}

simdjson::error_code ReadAgents(od::value& value, Process* p) {
  od::array agents;
  if (auto err = value.get_array().get(agents)) return err;
  for (auto element : agents) {
    od::object agent;
    if (auto err = element.get_object().get(agent)) return err;
    int64_t handle = -1;
    Agent a;
    for (auto field : agent) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return err;
      simdjson::error_code err = simdjson::SUCCESS;
      if (key == "id") {
        err = Handle(field.value(), &handle);
      } else if (key == "type") {
        err = AgentType(field.value(), &a.type);
      } else if (key == "logical_node_type_id") {
        err = Int(field.value(), &a.index);
      } else if (key == "product_name") {
        std::string_view name;
        err = Text(field.value(), &name);
        a.product_name = std::string(name);
      }
      if (err) return err;
    }
    p->agents[handle] = std::move(a);
  }
  return simdjson::SUCCESS;
}

// ReadStrings() reads the API names (strings.buffer_records); the ranges' texts beside them are
// read in slices (ReadRangeText()), their array left empty here.
simdjson::error_code ReadStrings(od::value& value, Process* p) {
  od::object strings;
  if (auto err = value.get_object().get(strings)) return err;
  for (auto field : strings) {
    od::raw_json_string key;
    if (auto err = field.key().get(key)) return err;
    od::array array;
    if (key == "buffer_records") {
      if (auto err = field.value().get_array().get(array)) return err;
      for (auto kind : array) {
        std::vector<std::string>& names = p->operations.emplace_back();
        od::object object;
        if (auto err = kind.get_object().get(object)) return err;
        for (auto f : object) {
          od::raw_json_string k;
          if (auto err = f.key().get(k)) return err;
          if (k != "operations") continue;
          od::array operations;
          if (auto err = f.value().get_array().get(operations)) return err;
          for (auto op : operations) {
            std::string_view name;
            od::value text;
            if (auto err = op.get(text)) return err;
            if (auto err = Text(text, &name)) return err;
            names.emplace_back(name);
          }
        }
      }
    } else if (key == "marker_api") {  // an array, read in slices; anything else is an error
      if (auto err = field.value().get_array().get(array)) return err;
    }
  }
  return simdjson::SUCCESS;
}

simdjson::error_code ReadKernelSymbols(od::value& value, Process* p) {
  od::array symbols;
  if (auto err = value.get_array().get(symbols)) return err;
  for (auto element : symbols) {
    od::object symbol;
    if (auto err = element.get_object().get(symbol)) return err;
    int64_t id = -1;
    std::string mangled, demangled, formatted;
    for (auto field : symbol) {
      od::raw_json_string key;
      std::string_view text;
      if (auto err = field.key().get(key)) return err;
      if (key == "kernel_id") {
        if (auto err = Int(field.value(), &id)) return err;
      } else if (key == "kernel_name" || key == "demangled_kernel_name" ||
                 key == "formatted_kernel_name") {
        if (auto err = Text(field.value(), &text)) return err;
        std::string& name = key == "kernel_name"             ? mangled
                            : key == "demangled_kernel_name" ? demangled
                                                             : formatted;
        name = std::string(text);
      }
    }
    p->kernel_names[id] = KernelName(formatted, demangled, mangled);
  }
  return simdjson::SUCCESS;
}

// ReadRangeText() reads one entry of strings.marker_api, a range's text, into `out`.
simdjson::error_code ReadRangeText(od::object& object, SliceRecords* out) {
  int64_t id = -1;
  const size_t begin = out->range_text_bytes.size();
  for (auto field : object) {
    od::raw_json_string key;
    if (auto err = field.key().get(key)) return err;
    if (key == "key") {
      if (auto err = Int(field.value(), &id)) return err;
    } else if (key == "value") {
      std::string_view text;
      if (auto err = Text(field.value(), &text)) return err;
      out->range_text_bytes.resize(begin);  // the last value given wins
      out->range_text_bytes.append(text);
    }
  }
  out->range_texts.emplace_back(id, out->range_text_bytes.size());
  return simdjson::SUCCESS;
}

// ReadRecord() reads one record of `type` into `out`.
simdjson::error_code ReadRecord(od::object& object, RecordType type, SliceRecords* out) {
  Record r;
  r.type = type;
  int64_t kind = 0, operation = 0, queue = -1, stream = -1, src = -1, dst = -1;
  bool start = false, end = false;
  for (auto field : object) {
    od::raw_json_string key;
    if (auto err = field.key().get(key)) return err;
    simdjson::error_code err = simdjson::SUCCESS;
    if (key == "start_timestamp") {
      err = Int(field.value(), &r.start, &start);
    } else if (key == "end_timestamp") {
      err = Int(field.value(), &r.end, &end);
    } else if (key == "correlation_id") {
      err = Handle(field.value(), &r.correlation);
    } else if (key == "kind") {
      err = Int(field.value(), &kind);
    } else if (key == "thread_id") {
      err = Int(field.value(), &r.thread);
    } else if (key == "operation") {
      err = Int(field.value(), &operation);
    } else if (key == "stream_id") {
      err = Handle(field.value(), &stream);
    } else if (key == "dst_agent_id") {
      err = Handle(field.value(), &dst);
    } else if (key == "src_agent_id") {
      err = Handle(field.value(), &src);
    } else if (key == "dispatch_info") {
      od::object info;
      if (auto e = field.value().get_object().get(info)) {
        if (e == simdjson::INCORRECT_TYPE) continue;  // not read, as Int()
        return e;
      }
      for (auto f : info) {
        od::raw_json_string k;
        if (auto e = f.key().get(k)) return e;
        if (k == "agent_id") {
          err = Handle(f.value(), &r.agent);
        } else if (k == "queue_id") {
          err = Handle(f.value(), &queue);
        } else if (k == "kernel_id") {
          err = Int(f.value(), &r.key);
        }
        if (err) return err;
      }
    }
    if (err) return err;
  }
  if (type == RecordType::kLaunch && start && (!end || r.end < r.start)) {
    r.end = r.start;  // a call without its end takes no time, as in Kineto's reader
    end = true;
  }
  if (!start || !end || r.end < r.start) {
    // Counted as Kineto's reader counts them: a kernel kept at zero length, other records
    // skipped.
    if (type != RecordType::kKernel) {
      ++(type == RecordType::kMemcpy ? out->transfers_without_times : out->calls_without_times);
      return simdjson::SUCCESS;
    }
    r.bad_times = true;
    r.start = r.end = 0;
  }
  // The HIP stream where the record names one, as Kineto's AMD traces do; else the queue.
  r.stream = static_cast<int32_t>(stream >= 0 ? stream : queue);
  if (type == RecordType::kLaunch || type == RecordType::kMarker) {
    r.operation = static_cast<int64_t>((static_cast<uint64_t>(kind) << 32) |
                                       static_cast<uint32_t>(operation));
  }

  if (type == RecordType::kMemcpy) {  // Resolve() takes the GPU end of the copy
    r.agent = dst;
    r.key = src;
  }
  out->records.push_back(r);
  return simdjson::SUCCESS;
}

// OperationName() is a call's or range's name (`operation`: kind << 32 | operation) through
// the process's strings.buffer_records; "" where they hold none.
std::string_view OperationName(const Process& p, int64_t operation) {
  const size_t kind = static_cast<size_t>(static_cast<uint64_t>(operation) >> 32);
  const size_t op = static_cast<size_t>(operation & 0xFFFFFFFF);
  if (kind < p.operations.size() && op < p.operations[kind].size()) {
    return p.operations[kind][op];
  }
  return {};
}

// BlockOf() is `size` bytes at `data`, input offset `offset`, that the caller keeps alive.
Block BlockOf(const char* data, size_t size, uint64_t offset) {
  Block block;
  block.data = data;
  block.size = size;
  block.offset = offset;
  return block;
}

// How much of a plain file the layout walks at a time.
constexpr size_t kWalkBytes = 256 << 10;
// How many slices found may wait for a thread before the walk parses one itself: their text is
// held meanwhile.
constexpr size_t kMaxWaitingSlices = 4;

class Rocprofv3JsonImporter : public TraceImporter {
 public:
  Rocprofv3JsonImporter(std::string path, const ImportOptions& options)
      : path_(std::move(path)), options_(options), builder_(options.host_activity) {
    metadata_.format = TraceFormat::kRocprofv3Json;
  }

  absl::Status Open() {
    absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(path_);
    if (!source.ok()) return source.status();
    source_ = std::move(*source);
    file_bytes_ = source_->file_bytes();
    compression_ = std::string(source_->compression());
    if (options_.new_task_group) tasks_ = options_.new_task_group();
    // The slices are parsed as the walk finds them, the skeleton while the last ones are; every
    // task is waited for before an error is returned.
    absl::Status read = WalkLayout();
    if (read.ok()) read = ReadSkeleton();
    if (read.ok()) PrepareNames();
    WaitForTasks();
    window_ = std::string();  // every slice is read
    free_texts_.clear();
    if (InterruptSignal() != 0) return InterruptedError(StrCat("while reading ", path_));
    if (absl::Status st = FirstError(read); !st.ok()) return st;
    IndexRangeTexts();
    ResolveSlices();
    source_.reset();
    for (size_t i = 0; i < slices_.size(); ++i) {
      if (!slices_[i].records.empty()) heads_.emplace(slices_[i].records[0].start, i);
      records_ += slices_[i].records.size();
    }
    cursors_.assign(slices_.size(), 0);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Next(ParsedChunk* chunk) override {
    if (InterruptSignal() != 0) {
      return InterruptedError(StrCat("after ", handed_out_, " records of ", path_));
    }
    builder_.Start(chunk, seq_++);
    if (seq_ == 1) {
      chunk->transfers_with_bad_times = transfers_without_times_;
      chunk->host_events_without_times = calls_without_times_;
    }
    auto text = [this](int64_t name) { return names_[static_cast<size_t>(name)]; };
    for (size_t n = 0; n < options_.chunk_records && !Done(); ++n) {
      // The slices merged by start, ties to the slice first in the document: the current slice
      // goes on while its next record comes before every other slice's.
      if (current_ == kNoSlice) {
        current_ = heads_.top().second;
        heads_.pop();
      }
      const std::vector<Record>& records = slices_[current_].records;
      const Record& r = records[cursors_[current_]++];
      ++handed_out_;
      if (!r.skipped) Add(r, text);
      if (cursors_[current_] == records.size()) {
        current_ = kNoSlice;
      } else if (std::pair next(records[cursors_[current_]].start, current_);
                 !heads_.empty() && heads_.top() < next) {
        heads_.push(next);
        current_ = kNoSlice;
      }
    }
    builder_.Finish();
    if (seq_ == 1) {  // the records of the kinds not read, counted once
      for (const auto& [kind, count] : unread_) {
        chunk->categories.emplace_back(kind, count);
        chunk->events += count;
      }
    }
    if (Done()) slices_.clear();  // handed out: their memory goes back
    return builder_.records() > 0 ||
           (seq_ == 1 && (!unread_.empty() || transfers_without_times_ + calls_without_times_ > 0));
  }

  const TraceMetadata& metadata() const override { return metadata_; }
  uint64_t bytes_read() const override { return Done() ? bytes_ : 0; }
  uint64_t file_bytes_covered() const override {
    if (records_ == 0 || Done()) return file_bytes_;
    return static_cast<uint64_t>(double(file_bytes_) * double(handed_out_) / double(records_));
  }
  uint64_t file_bytes() const override { return file_bytes_; }
  std::string_view compression() const override { return compression_; }

 private:
  bool Done() const { return current_ == kNoSlice && heads_.empty(); }

  template <typename TextOf>
  void Add(const Record& r, TextOf& text) {
    std::optional<int64_t> correlation;
    if (r.correlation >= 0) correlation = r.correlation;
    const int32_t device = static_cast<int32_t>(r.agent);
    switch (r.type) {
      case RecordType::kKernel:
        builder_.AddKernel(r.start, r.end, r.key, text, device, r.stream, correlation, r.bad_times);
        break;
      case RecordType::kMemcpy:
        builder_.AddTransfer(false, r.start, r.end, device, r.stream, correlation);
        break;
      case RecordType::kLaunch:
        builder_.AddLaunch(r.start, r.end, r.correlation, r.key, text,
                           HostThread{r.agent, r.thread});
        break;
      case RecordType::kMarker:
        builder_.AddRange(r.start, r.end, r.key >= 0 ? range_texts_[r.key] : "",
                          HostThread{r.agent, r.thread});
        break;
      case RecordType::kRangeText:  // their slices hold texts, no records
        break;
    }
  }

  // WalkLayout() finds the records' slices, each parsed by a task as soon as it is found, and
  // copies the skeleton.
  absl::Status WalkLayout() {
    layout_.emplace(path_, options_.slice_bytes);
    window_ = NewText();
    window_.push_back(' ');  // where the next slice's '[' goes
    for (uint64_t at = 0;;) {
      absl::StatusOr<size_t> size = ReadMore();
      if (!size.ok()) return size.status();
      if (*size == 0) break;
      absl::Status fed = layout_->Feed(BlockOf(WindowAt(at), *size, at));
      StartNewSlices();  // those before an error too: one of them may hold an earlier one
      if (!fed.ok()) {
        read_error_at_ = layout_->error_at();
        return fed;
      }
      if (InterruptSignal() != 0) return InterruptedError(StrCat("while reading ", path_));
      at += *size;
      DropBefore(layout_->open_slice_begin().value_or(at));
    }
    bytes_ = WindowEnd();
    read_error_at_ = bytes_;  // where Finish() finds its errors, and after any other
    return layout_->Finish(bytes_);
  }

  // ReadMore() appends the input's next bytes to window_, and says how many: a piece of a plain
  // file, read in place, or the next block of a compressed one, decompressed; 0 at its end.
  absl::StatusOr<size_t> ReadMore() {
    const uint64_t at = WindowEnd();
    if (source_->random_access()) {
      const size_t size = static_cast<size_t>(std::min<uint64_t>(kWalkBytes, file_bytes_ - at));
      char* into = GrowWindow(size);
      if (absl::Status st = source_->ReadAt(at, size, into); !st.ok()) return st;
      return size;
    }
    Block block;
    absl::StatusOr<bool> more = source_->Next(&block);
    if (!more.ok()) return more.status();
    if (!*more) return 0;
    std::memcpy(GrowWindow(block.size), block.data, block.size);
    return block.size;
  }

  // GrowWindow() makes the window `size` bytes longer, and says where they go. The bytes dropped
  // are let go of here, where the window would grow past its buffer.
  char* GrowWindow(size_t size) {
    if (window_.size() + size + 1 + simdjson::SIMDJSON_PADDING > window_.capacity()) {
      window_.erase(1, window_at_ - 1);
      window_at_ = 1;
    }
    Reserve(&window_, window_.size() + size);
    window_.resize(window_.size() + size);
    return window_.data() + window_.size() - size;
  }

  // WindowAt() is where input offset `offset` (at least window_begin_) lies in the window, and
  // WindowEnd() the input offset after its last byte.
  char* WindowAt(uint64_t offset) {
    return window_.data() + window_at_ + static_cast<size_t>(offset - window_begin_);
  }
  uint64_t WindowEnd() const { return window_begin_ + (window_.size() - window_at_); }

  // Reserve() makes room in `text` for `size` bytes, a ']' and simdjson's padding.
  static void Reserve(std::string* text, size_t size) {
    const size_t capacity = size + 1 + simdjson::SIMDJSON_PADDING;
    if (text->capacity() < capacity) text->reserve(std::max(capacity, 2 * text->capacity()));
  }

  // DropBefore() drops the window's bytes before input offset `offset` (GrowWindow() lets go of
  // them).
  void DropBefore(uint64_t offset) {
    if (offset <= window_begin_) return;
    window_at_ += static_cast<size_t>(offset - window_begin_);
    window_begin_ = offset;
  }

  // TakeSliceText() is `slice`'s bytes within '[' and ']'. Whichever is less is copied: the
  // slice (into a new buffer), or the bytes after it (then the slice keeps the buffer they were
  // read into, and the window goes on in a new one).
  std::string TakeSliceText(const RecordSlice& slice) {
    DropBefore(slice.begin);
    const size_t size = static_cast<size_t>(slice.end - slice.begin);
    const size_t after = window_.size() - window_at_ - size;
    std::string text = NewText();
    if (size <= after) {
      text.push_back('[');
      text.append(window_, window_at_, size);
      DropBefore(slice.end);
    } else {
      text.push_back(' ');
      text.append(window_, window_at_ + size, after);
      std::swap(text, window_);
      text.erase(0, window_at_ - 1);  // nothing where the slice is the buffer's first
      text.resize(1 + size);
      text.front() = '[';
      window_at_ = 1;
      window_begin_ = slice.end;
    }
    text.push_back(']');
    return text;
  }

  // NewText() is an empty buffer for a slice's text, from the pool where one is free.
  std::string NewText() {
    std::lock_guard<std::mutex> lock(texts_mutex_);
    if (free_texts_.empty()) {
      std::string text;
      Reserve(&text, options_.slice_bytes + 2 * kWalkBytes);  // a record past the slice's size too
      return text;
    }
    std::string text = std::move(free_texts_.back());
    free_texts_.pop_back();
    return text;
  }

  // StartNewSlices() starts a task for each slice the layout found since the last call, and
  // reads slices itself while more than kMaxWaitingSlices wait.
  void StartNewSlices() {
    for (size_t i = slices_.size(); i < layout_->slices().size(); ++i) {
      const RecordSlice slice = layout_->slices()[i];
      SliceRecords* out = &slices_.emplace_back();  // a deque's elements stay where they are
      std::string text = TakeSliceText(slice);
      {
        std::lock_guard<std::mutex> lock(texts_mutex_);
        waiting_.push_back(WaitingSlice{slice, out, std::move(text)});
      }
      RunTask([this] { ReadWaitingSlice(); });
      while (WaitingSlices() > kMaxWaitingSlices) ReadWaitingSlice();
    }
  }

  size_t WaitingSlices() {
    std::lock_guard<std::mutex> lock(texts_mutex_);
    return waiting_.size();
  }

  // ReadWaitingSlice() reads the slice that has waited longest, if any. As many run as slices
  // are started, on the tasks' threads or the walk's: every slice is read once they have all
  // run.
  void ReadWaitingSlice() {
    WaitingSlice next;
    {
      std::lock_guard<std::mutex> lock(texts_mutex_);
      if (waiting_.empty()) return;
      next = std::move(waiting_.front());
      waiting_.pop_front();
    }
    ReadSlice(next.slice, &next.text, next.out);
    next.text.clear();
    std::lock_guard<std::mutex> lock(texts_mutex_);
    free_texts_.push_back(std::move(next.text));
  }

  void RunTask(std::function<void()> task) {
    if (tasks_) {
      tasks_->Run(std::move(task));
    } else {
      task();
    }
  }

  void WaitForTasks() {
    if (tasks_) tasks_->Wait();
  }

  // ReadSkeleton() reads the processes' objects, their buffer_records arrays left empty.
  absl::Status ReadSkeleton() {
    const std::string& skeleton = layout_->skeleton();
    std::string padded = skeleton;  // simdjson reads past the end
    padded.reserve(skeleton.size() + simdjson::SIMDJSON_PADDING);
    od::parser parser;
    od::document doc;
    if (auto err = parser
                       .iterate(simdjson::padded_string_view(padded.data(), padded.size(),
                                                             padded.capacity()))
                       .get(doc)) {
      return Malformed(err, nullptr, padded.data(), FirstPassErrorAt(padded, err));
    }
    if (auto err = ReadProcesses(doc)) return Malformed(err, &doc, padded.data());
    // Text after the document (two files run together, say) is not read as if it were not there.
    const char* after = nullptr;  // a location only where tokens are left
    if (doc.current_location().get(after) == simdjson::SUCCESS) {
      return Malformed(simdjson::TRAILING_CONTENT, &doc, padded.data());
    }
    return absl::OkStatus();
  }

  // Malformed() is simdjson's `err`, at the input byte where `doc` (over the skeleton, read from
  // `begin`) stands, or at `where` in the skeleton when given.
  absl::Status Malformed(simdjson::error_code err, od::document* doc, const char* begin,
                         const char* where = nullptr) {
    std::string at;
    if (where == nullptr &&
        (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::EMPTY)) {
      read_error_at_ = bytes_;  // found before any value is read: the input's end
      at = StrCat(" at byte ", bytes_);
    } else if (where != nullptr ||
               (doc != nullptr && doc->current_location().get(where) == simdjson::SUCCESS)) {
      read_error_at_ = layout_->InputOffset(static_cast<uint64_t>(where - begin));
      at = StrCat(" at byte ", read_error_at_);
    }
    return absl::InvalidArgumentError(
        StrCat(path_, ": malformed JSON", at, ": ", simdjson::error_message(err)));
  }

  simdjson::error_code ReadProcesses(od::document& doc) {
    od::object root;
    if (auto err = doc.get_object().get(root)) return err;
    for (auto field : root) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return err;
      if (key != "rocprofiler-sdk-tool") continue;
      od::array processes;
      if (auto err = field.value().get_array().get(processes)) return err;
      for (auto process : processes) {
        od::object object;
        if (auto err = process.get_object().get(object)) return err;
        if (auto err = ReadProcess(object, &processes_.emplace_back())) return err;
      }
    }
    return simdjson::SUCCESS;
  }

  static simdjson::error_code ReadProcess(od::object& object, Process* p) {
    for (auto field : object) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return err;
      od::value value;
      if (auto err = field.value().get(value)) return err;
      simdjson::error_code err = simdjson::SUCCESS;
      if (key == "metadata") {
        err = ReadMetadata(value, p);
      } else if (key == "agents") {
        err = ReadAgents(value, p);
      } else if (key == "strings") {
        err = ReadStrings(value, p);
      } else if (key == "kernel_symbols") {
        err = ReadKernelSymbols(value, p);
      }
      if (err) return err;
    }
    return simdjson::SUCCESS;
  }

  // PrepareNames() interns every name the records can take, so that the slices' threads only
  // look them up.
  void PrepareNames() {
    for (Process& p : processes_) {
      p.correlation_base = correlations_.Of(p.pid, 0);
      p.no_name = Name("");
      for (const auto& [id, name] : p.kernel_names) p.kernel_name_ids[id] = Name(name);
      for (const std::vector<std::string>& kind : p.operations) {
        std::vector<int64_t>& ids = p.operation_name_ids.emplace_back();
        for (const std::string& name : kind) ids.push_back(Name(name));
      }
    }
  }

  // IndexRangeTexts() indexes the ranges' texts that the slices of strings.marker_api hold by
  // file-wide correlation id, in document order (the last text given for an id wins). They are
  // kept as they are (one text per range, as emit_nvtx writes them), not interned.
  void IndexRangeTexts() {
    const std::vector<RecordSlice>& slices = layout_->slices();
    size_t texts = 0;
    for (const SliceRecords& slice : slices_) texts += slice.range_texts.size();
    range_texts_.reserve(texts);
    range_text_ids_.reserve(texts);
    for (size_t i = 0; i < slices_.size(); ++i) {
      if (slices[i].process >= processes_.size()) continue;  // not an object: not read
      const int64_t base = processes_[slices[i].process].correlation_base;
      const std::string_view bytes = slices_[i].range_text_bytes;
      size_t begin = 0;
      for (const auto& [id, end] : slices_[i].range_texts) {
        range_text_ids_.insert_or_assign(base + id, range_texts_.size());
        range_texts_.push_back(bytes.substr(begin, end - begin));
        begin = end;
      }
    }
  }

  // FirstError() is the error that comes first in the document: a slice's, or `read`, the walk's
  // or the skeleton's (at read_error_at_).
  absl::Status FirstError(const absl::Status& read) const {
    for (const SliceRecords& slice : slices_) {
      if (!slice.status.ok()) {
        return read.ok() || slice.error_at < read_error_at_ ? slice.status : read;
      }
    }
    return read;
  }

  // ResolveSlices() resolves the slices' records, a task each, once the skeleton is read, and
  // adds up what they counted.
  void ResolveSlices() {
    const std::vector<RecordSlice>& slices = layout_->slices();
    for (size_t i = 0; i < slices_.size(); ++i) {
      if (slices[i].process >= processes_.size()) {  // not an object: not read
        slices_[i].records.clear();
        continue;
      }
      RunTask([this, i, &slices] {
        const Process& p = processes_[slices[i].process];
        for (Record& r : slices_[i].records) Resolve(p, &r, &slices_[i]);
      });
    }
    WaitForTasks();
    for (size_t i = 0; i < slices_.size(); ++i) {
      SliceRecords& slice = slices_[i];
      transfers_without_times_ += slice.transfers_without_times;
      calls_without_times_ += slice.calls_without_times;
      for (const auto& [name, count] : slice.unread) unread_[name] += count;
      if (slices[i].process >= processes_.size()) continue;
      const Process& p = processes_[slices[i].process];
      for (int64_t agent : slice.kernel_agents) {  // named by the first known agent to run one
        if (auto a = p.agents.find(agent); !metadata_.gpu_name && a != p.agents.end()) {
          metadata_.gpu_name = a->second.product_name;
        }
      }
    }
    for (const auto& [kind, count] : layout_->unread()) unread_[kind] += count;
    range_text_ids_ = {};
  }

  // ReadSlice() reads one slice's records, `text` (within '[' and ']'), into `out`, sorted by
  // start (ResolveSlices() resolves them).
  void ReadSlice(const RecordSlice& slice, std::string* text, SliceRecords* out) const {
    if (InterruptSignal() != 0) return;
    thread_local od::parser parser;
    std::string& buffer = *text;
    Reserve(&buffer, buffer.size());
    if (!StripSeparator(slice, &buffer, out)) return;
    if (slice.type == RecordType::kRangeText) {
      out->range_texts.reserve(slice.records);
    } else {
      out->records.reserve(slice.records);
    }
    od::document doc;
    simdjson::error_code err =
        parser
            .iterate(simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()))
            .get(doc);
    const bool iterated = !err;  // else `doc` has no location to ask for
    if (iterated) err = ReadRecords(doc, slice.type, out);
    if (err) {
      const char* where = iterated ? nullptr : FirstPassErrorAt(buffer, err);
      uint64_t at = slice.end;
      if (where != nullptr ||
          (iterated && doc.current_location().get(where) == simdjson::SUCCESS)) {
        at = slice.begin + static_cast<uint64_t>(where - buffer.data()) - 1;
      }
      Malformed(at, err, out);
      return;
    }
    auto by_start = [](const Record& a, const Record& b) { return a.start < b.start; };
    if (!std::is_sorted(out->records.begin(), out->records.end(), by_start)) {
      std::stable_sort(out->records.begin(), out->records.end(), by_start);
    }
  }

  // StripSeparator() blanks the ',' that a slice after the first of its array begins with; false
  // (and `out` says why) where it has none.
  bool StripSeparator(const RecordSlice& slice, std::string* buffer, SliceRecords* out) const {
    if (slice.first_of_array) return true;
    const size_t at = buffer->find_first_not_of(" \t\r\n", 1);
    if (at == buffer->size() - 1) return true;  // the array's end
    const size_t next = buffer->find_first_not_of(" \t\r\n", at + 1);
    if ((*buffer)[at] != ',' || next == buffer->size() - 1) {  // no ',', or one before ']'
      Malformed(slice.begin + at - 1, simdjson::TAPE_ERROR, out);
      return false;
    }
    (*buffer)[at] = ' ';
    return true;
  }

  void Malformed(uint64_t at, simdjson::error_code err, SliceRecords* out) const {
    out->status = absl::InvalidArgumentError(
        StrCat(path_, ": malformed JSON at byte ", at, ": ", simdjson::error_message(err)));
    out->error_at = at;
  }

  static simdjson::error_code ReadRecords(od::document& doc, RecordType type, SliceRecords* out) {
    od::array records;
    if (auto err = doc.get_array().get(records)) return err;
    for (auto element : records) {
      // Stopped here by a signal, the slice is not read further (Open() says why).
      if (out->records.size() % kRecordsBetweenChecks == 0 && InterruptSignal() != 0) {
        return simdjson::SUCCESS;
      }
      od::object record;
      if (auto err = element.get_object().get(record)) return err;
      if (type == RecordType::kRangeText) {
        if (auto err = ReadRangeText(record, out)) return err;
        continue;
      }
      if (auto err = ReadRecord(record, type, out)) return err;
      if (type == RecordType::kKernel) {
        const int64_t agent = out->records.back().agent;
        std::vector<int64_t>& agents = out->kernel_agents;  // a few: searched, not hashed
        if (std::find(agents.begin(), agents.end(), agent) == agents.end()) agents.push_back(agent);
      }
    }
    const char* after = nullptr;
    if (doc.current_location().get(after) == simdjson::SUCCESS) {
      return simdjson::TRAILING_CONTENT;
    }
    return simdjson::SUCCESS;
  }

  // Resolve() gives a record of process `p` its name index (a range its text's), device and
  // file-wide correlation id.
  void Resolve(const Process& p, Record* r, SliceRecords* out) const {
    auto device_of = [&p](int64_t handle) -> int64_t {
      auto it = p.agents.find(handle);
      if (it == p.agents.end() || it->second.type != kGpuAgentType) return -1;
      return it->second.index;
    };
    if (r->correlation >= 0) r->correlation += p.correlation_base;
    switch (r->type) {
      case RecordType::kKernel: {
        auto it = p.kernel_name_ids.find(r->key);
        r->key = it == p.kernel_name_ids.end() ? p.no_name : it->second;
        r->agent = device_of(r->agent);
        break;
      }
      case RecordType::kMemcpy: {
        const int64_t dst = device_of(r->agent);  // the GPU end of the copy
        r->agent = dst >= 0 ? dst : device_of(r->key);
        break;
      }
      case RecordType::kLaunch:
        r->key = OperationNameId(p, r->operation);
        r->agent = p.pid;
        break;
      case RecordType::kMarker: {
        // Ranges only (roctxRangePushA, roctxRangeStartA, roctxThreadRangeA…): a mark or a
        // control call (a thread's name, a pause) is counted by its name, not read.
        const std::string_view op = OperationName(p, r->operation);
        if (op.find("Range") == std::string_view::npos) {
          r->skipped = true;
          ++out->unread[op.empty() ? std::string("marker_api") : std::string(op)];
          break;
        }
        r->agent = p.pid;
        auto text = range_text_ids_.find(r->correlation);  // its text, by its correlation id
        r->key = text == range_text_ids_.end() ? -1 : static_cast<int64_t>(text->second);
        break;
      }
      case RecordType::kRangeText:
        break;
    }
  }

  // OperationNameId() is the name index of OperationName().
  static int64_t OperationNameId(const Process& p, int64_t operation) {
    const size_t kind = static_cast<size_t>(static_cast<uint64_t>(operation) >> 32);
    const size_t op = static_cast<size_t>(operation & 0xFFFFFFFF);
    if (kind < p.operation_name_ids.size() && op < p.operation_name_ids[kind].size()) {
      return p.operation_name_ids[kind][op];
    }
    return p.no_name;
  }

  int64_t Name(std::string_view text) {
    auto [it, inserted] = name_ids_.try_emplace(text, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.Append(text);
    return it->second;
  }

  std::string path_;
  ImportOptions options_;
  TraceMetadata metadata_;
  std::unique_ptr<ByteSource> source_;
  std::optional<Rocprofv3Layout> layout_;
  uint64_t bytes_ = 0;  // the document's, decompressed
  uint64_t file_bytes_ = 0;
  std::string compression_;
  std::vector<Process> processes_;
  // The ranges' texts (in their slices' range_text_bytes), and their indexes by file-wide
  // correlation id until the records are resolved: a range's `key` is then its text's index.
  std::vector<std::string_view> range_texts_;
  absl::flat_hash_map<int64_t, size_t> range_text_ids_;
  std::deque<SliceRecords> slices_;  // one per layout slice, filled by its task
  // The input walked, from input offset window_begin_ on, at window_at_ (at least 1: a slice's
  // '[' goes before its first byte).
  std::string window_;
  uint64_t window_begin_ = 0;
  size_t window_at_ = 1;
  // The slices found, with their text, that no thread has begun to read; and the buffers free.
  struct WaitingSlice {
    RecordSlice slice;
    SliceRecords* out = nullptr;
    std::string text;
  };
  std::mutex texts_mutex_;
  std::deque<WaitingSlice> waiting_;
  std::vector<std::string> free_texts_;
  // Where the error of the walk or the skeleton's parse lies, for FirstError(); 0 for errors
  // without a place (reading the file), which come first.
  uint64_t read_error_at_ = 0;
  uint64_t transfers_without_times_ = 0, calls_without_times_ = 0;
  std::map<std::string, uint64_t> unread_;  // records of the kinds not read, by kind
  ProcessCorrelations correlations_;
  InternedStrings names_;
  StringMap<uint32_t> name_ids_;
  ImportedChunk builder_;
  // The merge: each slice's next record but the current slice's, the earliest start (then the
  // first slice) on top.
  std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>,
                      std::greater<>>
      heads_;
  std::vector<size_t> cursors_;
  static constexpr size_t kNoSlice = SIZE_MAX;
  size_t current_ = kNoSlice;  // the slice being handed out, off the heap
  uint64_t seq_ = 0;
  uint64_t records_ = 0, handed_out_ = 0;
  // Last, so that it goes first: should Open() be left by an exception, its destructor waits for
  // the tasks still writing into the members above.
  std::unique_ptr<TaskGroup> tasks_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceImporter>> OpenRocprofv3Json(const std::string& path,
                                                                 const ImportOptions& options) {
  auto importer = std::make_unique<Rocprofv3JsonImporter>(path, options);
  if (absl::Status st = importer->Open(); !st.ok()) return st;
  return importer;
}

}  // namespace tracefuse
