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
// Performance note: rocprofv3 writes one document with the records of each kind in arrays of
// their own, in completion order, so the file is read whole (simdjson On-Demand over the
// decompressed bytes), its records kept in 64 bytes each and sorted by start, then handed out in
// chunks. Memory grows with the file: for long runs, rocprofv3's rocpd database (its default
// output since ROCm 7) streams in bounded memory.
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "importers.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {
namespace {

namespace od = simdjson::ondemand;

constexpr int64_t kGpuAgentType = 2;
// How many records are read between two looks at InterruptSignal() (a few milliseconds).
constexpr size_t kRecordsBetweenChecks = 64 << 10;

enum class RecordType : uint8_t { kKernel, kMemcpy, kLaunch, kMarker };

// Record is one activity, call or range, until the whole process is read: `key` is then the
// kernel_id, (kind << 32 | operation) or the marker's correlation id, and `agent` a handle;
// Resolve() turns them into a name index and a device.
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
  absl::flat_hash_map<int64_t, std::string> marker_texts;
  absl::flat_hash_map<int64_t, std::string> kernel_names;
  size_t first_record = 0;
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

class Rocprofv3JsonImporter : public TraceImporter {
 public:
  Rocprofv3JsonImporter(std::string path, const ImportOptions& options)
      : path_(std::move(path)), options_(options), builder_(options.host_activity) {
    metadata_.format = TraceFormat::kRocprofv3Json;
  }

  absl::Status Open() {
    std::string json;
    if (absl::Status st = ReadWhole(&json); !st.ok()) return st;
    if (json.size() > simdjson::SIMDJSON_MAXSIZE_BYTES) return TooLarge(json.size());
    bytes_ = json.size();
    json.reserve(json.size() + simdjson::SIMDJSON_PADDING);  // read in place, not copied
    od::parser parser;
    od::document doc;
    if (auto err =
            parser.iterate(simdjson::padded_string_view(json.data(), json.size(), json.capacity()))
                .get(doc)) {
      return Malformed(err, nullptr);
    }
    if (absl::Status st = ReadDocument(doc); !st.ok()) return st;
    if (InterruptSignal() != 0) {
      return InterruptedError(StrCat("after ", records_.size(), " records of ", path_));
    }
    std::stable_sort(records_.begin(), records_.end(),
                     [](const Record& a, const Record& b) { return a.start < b.start; });
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Next(ParsedChunk* chunk) override {
    if (InterruptSignal() != 0) {
      return InterruptedError(StrCat("after ", next_, " records of ", path_));
    }
    builder_.Start(chunk, seq_++);
    if (seq_ == 1) {
      chunk->transfers_with_bad_times = transfers_without_times_;
      chunk->host_events_without_times = calls_without_times_;
    }
    const size_t end = std::min(records_.size(), next_ + options_.chunk_records);
    auto text = [this](int64_t name) { return names_[static_cast<size_t>(name)]; };
    for (; next_ < end; ++next_) {
      const Record& r = records_[next_];
      if (r.skipped) continue;
      std::optional<int64_t> correlation;
      if (r.correlation >= 0) correlation = r.correlation;
      const int32_t device = static_cast<int32_t>(r.agent);
      switch (r.type) {
        case RecordType::kKernel:
          builder_.AddKernel(r.start, r.end, r.key, text, device, r.stream, correlation,
                             r.bad_times);
          break;
        case RecordType::kMemcpy:
          builder_.AddTransfer(false, r.start, r.end, device, r.stream, correlation);
          break;
        case RecordType::kLaunch:
          builder_.AddLaunch(r.start, r.end, r.correlation, r.key, text,
                             HostThread{r.agent, r.thread});
          break;
        case RecordType::kMarker:
          builder_.AddRange(r.start, r.end, text(r.key), HostThread{r.agent, r.thread});
          break;
      }
    }
    builder_.Finish();
    if (seq_ == 1) {  // the records of the kinds not read, counted once
      for (const auto& [kind, count] : unread_) {
        chunk->categories.emplace_back(kind, count);
        chunk->events += count;
      }
    }
    return builder_.records() > 0 ||
           (seq_ == 1 && (!unread_.empty() || transfers_without_times_ + calls_without_times_ > 0));
  }

  const TraceMetadata& metadata() const override { return metadata_; }
  uint64_t bytes_read() const override { return next_ == records_.size() ? bytes_ : 0; }
  uint64_t file_bytes() const override { return file_bytes_; }
  std::string_view compression() const override { return compression_; }

 private:
  absl::Status ReadWhole(std::string* out) {
    absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(path_);
    if (!source.ok()) return source.status();
    file_bytes_ = (*source)->file_bytes();
    compression_ = std::string((*source)->compression());
    if ((*source)->random_access()) {  // a plain file: read at once into its place
      const uint64_t size = (*source)->file_bytes();
      if (size > simdjson::SIMDJSON_MAXSIZE_BYTES) return TooLarge(size);
      out->reserve(size + simdjson::SIMDJSON_PADDING);
      out->resize(size);
      return (*source)->ReadAt(0, size, out->data());
    }
    Block block;
    while (true) {
      absl::StatusOr<bool> more = (*source)->Next(&block);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
      out->append(block.data, block.size);
    }
  }

  // TooLarge() refuses a document larger than simdjson reads at once (4 GiB).
  absl::Status TooLarge(uint64_t bytes) const {
    return UnsupportedTraceError(
        StrCat(path_, ": a rocprofv3 JSON document of ", bytes,
               " bytes: tracefuse reads one of at most 4 GiB; write the rocpd database instead "
               "(rocprofv3 --output-format rocpd), which it streams"));
  }

  absl::Status Malformed(simdjson::error_code err, od::document* doc) const {
    const char* where = nullptr;
    std::string at;
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::EMPTY) {
      at = StrCat(" at byte ", bytes_);  // found before any value is read: the input's end
    } else if (doc != nullptr && doc->current_location().get(where) == simdjson::SUCCESS) {
      at = StrCat(" at byte ", static_cast<uint64_t>(where - json_begin_));
    }
    return absl::InvalidArgumentError(
        StrCat(path_, ": malformed JSON", at, ": ", simdjson::error_message(err)));
  }

  absl::Status ReadDocument(od::document& doc) {
    if (absl::Status st = ReadRoot(doc); !st.ok()) return st;
    // Text after the document (two files run together, say) is not read as if it were not there.
    const char* after = nullptr;  // a location only where tokens are left
    if (InterruptSignal() == 0 && doc.current_location().get(after) == simdjson::SUCCESS) {
      return Malformed(simdjson::TRAILING_CONTENT, &doc);
    }
    return absl::OkStatus();
  }

  absl::Status ReadRoot(od::document& doc) {
    doc_ = &doc;
    const char* begin = nullptr;
    if (doc.current_location().get(begin) == simdjson::SUCCESS) json_begin_ = begin;
    od::object root;
    if (auto err = doc.get_object().get(root)) return Malformed(err, &doc);
    for (auto field : root) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return Malformed(err, &doc);
      if (key != "rocprofiler-sdk-tool") continue;
      od::array processes;
      if (auto err = field.value().get_array().get(processes)) return Malformed(err, &doc);
      for (auto process : processes) {
        od::object object;
        if (auto err = process.get_object().get(object)) return Malformed(err, &doc);
        if (absl::Status st = ReadProcess(object); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadProcess(od::object& object) {
    Process p;
    p.first_record = records_.size();
    for (auto field : object) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return Malformed(err, doc_);
      od::value value;
      if (auto err = field.value().get(value)) return Malformed(err, doc_);
      simdjson::error_code err = simdjson::SUCCESS;
      if (key == "metadata") {
        err = ReadMetadata(value, &p);
      } else if (key == "agents") {
        err = ReadAgents(value, &p);
      } else if (key == "strings") {
        err = ReadStrings(value, &p);
      } else if (key == "kernel_symbols") {
        err = ReadKernelSymbols(value, &p);
      } else if (key == "buffer_records") {
        err = ReadBufferRecords(value);
      }
      if (err) return Malformed(err, doc_);
    }
    Resolve(p);
    return absl::OkStatus();
  }

  static simdjson::error_code ReadMetadata(od::value& value, Process* p) {
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
  static simdjson::error_code Handle(od::value value, int64_t* out) {
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

  static simdjson::error_code ReadAgents(od::value& value, Process* p) {
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

  static simdjson::error_code ReadStrings(od::value& value, Process* p) {
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
      } else if (key == "marker_api") {
        if (auto err = field.value().get_array().get(array)) return err;
        for (auto entry : array) {
          od::object object;
          if (auto err = entry.get_object().get(object)) return err;
          int64_t id = -1;
          std::string_view text;
          std::string value;  // kept until the key is read, whichever comes first
          for (auto f : object) {
            od::raw_json_string k;
            if (auto err = f.key().get(k)) return err;
            if (k == "key") {
              if (auto err = Int(f.value(), &id)) return err;
            } else if (k == "value") {
              if (auto err = Text(f.value(), &text)) return err;
              value = std::string(text);
            }
          }
          p->marker_texts[id] = std::move(value);
        }
      }
    }
    return simdjson::SUCCESS;
  }

  static simdjson::error_code ReadKernelSymbols(od::value& value, Process* p) {
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

  simdjson::error_code ReadBufferRecords(od::value& value) {
    od::object kinds;
    if (auto err = value.get_object().get(kinds)) return err;
    for (auto field : kinds) {
      od::raw_json_string key;
      if (auto err = field.key().get(key)) return err;
      RecordType type;
      if (key == "kernel_dispatch") {
        type = RecordType::kKernel;
      } else if (key == "hip_api") {
        type = RecordType::kLaunch;
      } else if (key == "memory_copy") {
        type = RecordType::kMemcpy;
      } else if (key == "marker_api") {
        type = RecordType::kMarker;
      } else {  // not read (HSA calls, allocations…): counted, as events of their kind
        od::array others;
        size_t count = 0;
        if (field.value().get_array().get(others) == simdjson::SUCCESS) {
          if (auto err = others.count_elements().get(count)) return err;
        }
        if (count > 0) {
          const char* begin = key.raw();  // the key's text, up to its closing quote
          const char* end = begin;
          while (*end != '"') ++end;
          unread_[std::string(begin, end)] += count;
        }
        continue;
      }
      od::array records;
      if (auto err = field.value().get_array().get(records)) return err;
      for (auto element : records) {
        // Stopped here by a signal, the document is not read further (Open() says why).
        if (records_.size() % kRecordsBetweenChecks == 0 && InterruptSignal() != 0) {
          return simdjson::SUCCESS;
        }
        od::object record;
        if (auto err = element.get_object().get(record)) return err;
        if (auto err = ReadRecord(record, type)) return err;
      }
    }
    return simdjson::SUCCESS;
  }

  simdjson::error_code ReadRecord(od::object& object, RecordType type) {
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
        ++(type == RecordType::kMemcpy ? transfers_without_times_ : calls_without_times_);
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

    if (type == RecordType::kMarker) r.key = r.correlation;
    if (type == RecordType::kMemcpy) r.agent = dst;
    memcpy_sources_.push_back(type == RecordType::kMemcpy ? src : -1);
    records_.push_back(r);
    return simdjson::SUCCESS;
  }

  // Resolve() gives the process's records their names, devices and process-wide correlation
  // ids.
  void Resolve(const Process& p) {
    auto device_of = [&p](int64_t handle) -> int64_t {
      auto it = p.agents.find(handle);
      if (it == p.agents.end() || it->second.type != kGpuAgentType) return -1;
      return it->second.index;
    };
    for (size_t i = p.first_record; i < records_.size(); ++i) {
      Record& r = records_[i];
      if (r.correlation >= 0) r.correlation = correlations_.Of(p.pid, r.correlation);
      switch (r.type) {
        case RecordType::kKernel: {
          auto it = p.kernel_names.find(r.key);
          r.key = Name(it == p.kernel_names.end() ? std::string_view() : it->second);
          // The GPU is named by the first that ran a kernel.
          if (auto a = p.agents.find(r.agent); !metadata_.gpu_name && a != p.agents.end()) {
            metadata_.gpu_name = a->second.product_name;
          }
          r.agent = device_of(r.agent);
          break;
        }
        case RecordType::kMemcpy: {
          // The GPU end of the copy.
          const int64_t dst = device_of(r.agent);
          r.agent = dst >= 0 ? dst : device_of(memcpy_sources_[i - p.first_record]);
          break;
        }
        case RecordType::kLaunch:
          r.key = Name(OperationName(p, r.operation));
          r.agent = p.pid;
          break;
        case RecordType::kMarker: {
          // Ranges only (roctxRangePushA, roctxRangeStartA, roctxThreadRangeA…): a mark or a
          // control call (a thread's name, a pause) is counted by its name, not read.
          const std::string_view op = OperationName(p, r.operation);
          if (op.find("Range") == std::string_view::npos) {
            r.skipped = true;
            ++unread_[op.empty() ? std::string("marker_api") : std::string(op)];
            break;
          }
          auto it = p.marker_texts.find(r.key);
          r.key = Name(it == p.marker_texts.end() ? std::string_view() : it->second);
          r.agent = p.pid;
          break;
        }
      }
    }
    memcpy_sources_.clear();
  }

  // OperationName() is a call's or range's name (`operation`: kind << 32 | operation) through
  // the process's strings.buffer_records; "" where they hold none.
  static std::string_view OperationName(const Process& p, int64_t operation) {
    const size_t kind = static_cast<size_t>(static_cast<uint64_t>(operation) >> 32);
    const size_t op = static_cast<size_t>(operation & 0xFFFFFFFF);
    if (kind < p.operations.size() && op < p.operations[kind].size()) {
      return p.operations[kind][op];
    }
    return {};
  }

  int64_t Name(std::string_view text) {
    auto [it, inserted] = name_ids_.try_emplace(text, static_cast<uint32_t>(names_.size()));
    if (inserted) names_.Append(text);
    return it->second;
  }

  std::string path_;
  ImportOptions options_;
  TraceMetadata metadata_;
  od::document* doc_ = nullptr;
  const char* json_begin_ = nullptr;
  uint64_t bytes_ = 0;  // the document's, decompressed
  uint64_t file_bytes_ = 0;
  std::string compression_;
  std::vector<Record> records_;
  std::vector<int64_t> memcpy_sources_;  // per record of the process being read
  uint64_t transfers_without_times_ = 0, calls_without_times_ = 0;
  std::map<std::string, uint64_t> unread_;  // records of the kinds not read, by kind
  ProcessCorrelations correlations_;
  InternedStrings names_;
  StringMap<uint32_t> name_ids_;
  ImportedChunk builder_;
  uint64_t seq_ = 0;
  size_t next_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TraceImporter>> OpenRocprofv3Json(const std::string& path,
                                                                 const ImportOptions& options) {
  auto importer = std::make_unique<Rocprofv3JsonImporter>(path, options);
  if (absl::Status st = importer->Open(); !st.ok()) return st;
  return importer;
}

}  // namespace tracefuse
