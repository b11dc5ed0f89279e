#include "tracefuse/parse.h"

#include <cmath>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "simdjson.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

namespace od = simdjson::ondemand;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool IsKernelCategory(std::string_view cat) { return cat == "kernel" || cat == "Kernel"; }
bool IsRuntimeCategory(std::string_view cat) { return cat == "cuda_runtime" || cat == "Runtime"; }

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

}  // namespace

std::optional<int64_t> MicrosToNanos(std::string_view s) {
  s = TrimRight(s);
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

void ParsedChunk::Clear() {
  events = 0;
  kernels.clear();
  name_bytes.clear();
  name_offsets.assign(1, 0);
  categories.clear();
  kernels_with_bad_times = 0;
  evidence = EventEvidence();
}

struct ChunkParser::Impl {
  od::parser parser;
  std::vector<char> buffer;
  size_t capacity = 0;
  absl::flat_hash_map<std::string_view, uint32_t, StringHash, StringEq> local_names;

  void Reserve(size_t bytes) {
    if (bytes <= capacity) return;
    capacity = std::max(bytes, capacity + capacity / 2);
    buffer.assign(capacity + simdjson::SIMDJSON_PADDING, ' ');
    if (parser.allocate(capacity) != simdjson::SUCCESS) throw std::bad_alloc();
  }
};

ChunkParser::ChunkParser(size_t initial_capacity) : impl_(std::make_unique<Impl>()) {
  impl_->Reserve(initial_capacity);
}
ChunkParser::~ChunkParser() = default;

absl::Status ChunkParser::Parse(const EventChunk& chunk, const std::string& display_name,
                                ParsedChunk* out) {
  Impl& im = *impl_;
  out->Clear();
  out->seq = chunk.seq;
  out->begin = chunk.begin;
  out->bytes = chunk.bytes();

  // The chunk's events with their separators, wrapped into one JSON array.
  const size_t len = chunk.bytes() + 2;
  im.Reserve(len);
  char* buf = im.buffer.data();
  buf[0] = '[';
  size_t at = 1;
  for (const Block& piece : chunk.pieces) {
    std::memcpy(buf + at, piece.data, piece.size);
    at += piece.size;
  }
  buf[at++] = ']';

  auto fail = [&](simdjson::error_code err, const char* where) {
    uint64_t offset = chunk.begin;
    if (where != nullptr && where > buf && where < buf + len) {
      offset = chunk.begin + static_cast<uint64_t>(where - buf - 1);
    }
    return absl::InvalidArgumentError(StrCat(display_name, ": malformed JSON at byte ", offset,
                                             ": ", simdjson::error_message(err)));
  };

  od::document doc;
  simdjson::error_code err = im.parser.iterate(buf, len, im.buffer.size()).get(doc);
  if (err) return fail(err, nullptr);
  od::array events;
  if ((err = doc.get_array().get(events))) return fail(err, nullptr);

  im.local_names.clear();
  auto category_slot = [&](std::string_view cat) -> uint64_t& {
    for (auto& entry : out->categories)
      if (entry.first == cat) return entry.second;
    out->categories.emplace_back(std::string(cat), 0);
    return out->categories.back().second;
  };

  for (auto item : events) {
    od::object event;
    if ((err = item.get_object().get(event))) {
      const char* where = nullptr;
      if (doc.current_location().get(where) == simdjson::SUCCESS) return fail(err, where);
      return fail(err, nullptr);
    }
    ++out->events;
    std::string_view cat, name, ts_raw, dur_raw;
    bool have_cat = false, have_name = false;
    KernelEvent k;
    for (auto field : event) {
      od::raw_json_string key;
      if ((err = field.key().get(key))) break;
      od::value value;
      if ((err = field.value().get(value))) break;
      if (key == "cat") {
        have_cat = value.get_string().get(cat) == simdjson::SUCCESS;
      } else if (key == "name") {
        have_name = value.get_string().get(name) == simdjson::SUCCESS;
      } else if (key == "ts") {
        ts_raw = value.raw_json_token();
      } else if (key == "dur") {
        dur_raw = value.raw_json_token();
      } else if (key == "args" && (!have_cat || IsKernelCategory(cat))) {
        od::object args;
        if (value.get_object().get(args) != simdjson::SUCCESS) continue;
        for (auto arg : args) {
          od::raw_json_string akey;
          if ((err = arg.key().get(akey))) break;
          od::value av;
          if ((err = arg.value().get(av))) break;
          int64_t n;
          if (akey == "correlation") {
            if (ReadInteger(av, &n)) {
              k.correlation = n;
              k.flags |= KernelEvent::kHasCorrelation;
            }
          } else if (akey == "External id" || akey == "external id") {
            if (ReadInteger(av, &n)) {
              k.external_id = n;
              k.flags |= KernelEvent::kHasExternalId;
            }
          } else if (akey == "stream") {
            if (ReadInteger(av, &n)) k.stream = static_cast<int32_t>(n);
          } else if (akey == "device") {
            if (ReadInteger(av, &n)) k.device = static_cast<int32_t>(n);
          } else if (akey == "kind") {
            k.flags |= KernelEvent::kHasKind;
          }
        }
        if (err) break;
      }
    }
    if (err) {
      const char* where = nullptr;
      if (doc.current_location().get(where) == simdjson::SUCCESS) return fail(err, where);
      return fail(err, nullptr);
    }
    if (!have_cat) cat = {};
    ++category_slot(cat);
    if (IsKernelCategory(cat)) {
      std::optional<int64_t> ts = MicrosToNanos(ts_raw);
      std::optional<int64_t> dur = MicrosToNanos(dur_raw);
      if (!ts || !dur) {
        // On-Demand hands out raw tokens unvalidated: tell a malformed number from a value of
        // another type (a string, null), which is counted, not fatal.
        for (std::string_view raw : {ts_raw, dur_raw}) {
          if (!raw.empty() && !MicrosToNanos(raw) && !IsNonNumericJsonValue(raw)) {
            return absl::InvalidArgumentError(
                StrCat(display_name, ": malformed JSON at byte ",
                       chunk.begin + static_cast<uint64_t>(raw.data() - buf - 1),
                       ": invalid number '", TrimRight(raw.substr(0, 32)), "'"));
          }
        }
        ++out->kernels_with_bad_times;
      }
      k.ts_ns = ts.value_or(0);
      k.dur_ns = dur.value_or(0);
      if (!have_name) name = {};
      auto [slot, inserted] = im.local_names.try_emplace(name, 0);
      if (inserted) {
        slot->second = static_cast<uint32_t>(out->name_count());
        out->name_bytes.append(name);
        out->name_offsets.push_back(static_cast<uint32_t>(out->name_bytes.size()));
      }
      k.name = slot->second;
      if (k.flags & KernelEvent::kHasKind) ++out->evidence.kernels_with_kind;
      out->kernels.push_back(k);
    } else if (have_name && IsRuntimeCategory(cat)) {
      if (StartsWith(name, "hip")) {
        ++out->evidence.hip_runtime_calls;
      } else if (StartsWith(name, "cuda")) {
        ++out->evidence.cuda_runtime_calls;
      }
    }
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
      meta.has_device_properties = true;
      simdjson::dom::array devices;
      if (value.get_array().get(devices) == simdjson::SUCCESS) {
        meta.device_count = static_cast<int>(devices.size());
        simdjson::dom::object first;
        if (meta.device_count > 0 && devices.at(0).get_object().get(first) == simdjson::SUCCESS) {
          meta.first_device_is_object = true;
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
    } else if (key == "traceName") {
      std::string_view s;
      if (value.get_string().get(s) == simdjson::SUCCESS) meta.trace_name = std::string(s);
    } else if (key == "baseTimeNanoseconds") {
      int64_t base;
      if (value.get_int64().get(base) == simdjson::SUCCESS) meta.base_time_ns = base;
    }
  }
  return meta;
}

}  // namespace tracefuse
