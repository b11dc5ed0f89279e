#include "report/perfetto/trace_writer.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "google/protobuf/io/coded_stream.h"
#include "report/perfetto/perfetto_trace.pb.h"

namespace tracefuse {
namespace {

using google::protobuf::io::CodedOutputStream;
namespace pb = perfetto::protos;

// The wire types a field's tag carries (the protobuf encoding).
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

constexpr size_t kFlushBytes = size_t{1} << 20;  // buffered before each append to the file

void PutTag(int field, WireType type, std::string* out) {
  uint8_t bytes[8];
  const uint8_t* end =
      CodedOutputStream::WriteTagToArray((static_cast<uint32_t>(field) << 3) | type, bytes);
  out->append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

void PutVarint(int field, uint64_t value, std::string* out) {
  PutTag(field, kVarint, out);
  uint8_t bytes[10];
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out->append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

// PutBytes() writes a string or an encoded message.
void PutBytes(int field, std::string_view bytes, std::string* out) {
  PutTag(field, kLengthDelimited, out);
  uint8_t length[10];
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(bytes.size(), length);
  out->append(reinterpret_cast<const char*>(length), static_cast<size_t>(end - length));
  out->append(bytes);
}

// The raw encoders write at `p` and return the end: a slice's event is encoded into a buffer
// sized for its worst case, then appended at once.
uint8_t* RawTag(uint8_t* p, int field, WireType type) {
  return CodedOutputStream::WriteVarint32ToArray((static_cast<uint32_t>(field) << 3) | type, p);
}
uint8_t* RawVarint(uint8_t* p, int field, uint64_t value) {
  return CodedOutputStream::WriteVarint64ToArray(value, RawTag(p, field, kVarint));
}
uint8_t* RawFixed64(uint8_t* p, int field, uint64_t value) {
  return CodedOutputStream::WriteLittleEndian64ToArray(value, RawTag(p, field, kFixed64));
}
uint8_t* RawLength(uint8_t* p, int field, size_t bytes) {
  return CodedOutputStream::WriteVarint64ToArray(bytes, RawTag(p, field, kLengthDelimited));
}
constexpr size_t kMaxFieldBytes = 5 + 10;  // a tag and a varint, or a tag and a fixed64

// A negative time (a side shifted before the trace's start) has no place on Perfetto's clock.
uint64_t Timestamp(int64_t ns) { return static_cast<uint64_t>(std::max<int64_t>(ns, 0)); }

}  // namespace

absl::Status TraceSink::Append(std::string_view packets, int lane) {
  std::unique_lock<std::mutex> lock(mutex_);
  turn_changed_.wait(lock, [&] { return turn_ == lane; });
  if (status_.ok()) status_ = out_->Append(packets);
  PassTurn();
  return status_;
}

void TraceSink::Close(int lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_[static_cast<size_t>(lane)] = false;
  if (turn_ == lane) PassTurn();
}

void TraceSink::PassTurn() {
  const int lanes = static_cast<int>(open_.size());
  for (int next = 1; next <= lanes; ++next) {
    const int lane = (turn_ + next) % lanes;
    if (open_[static_cast<size_t>(lane)]) {
      turn_ = lane;
      break;
    }
  }
  turn_changed_.notify_all();
}

TraceWriter::TraceWriter(TraceSink* sink, uint32_t sequence, uint64_t first_uuid, int lane)
    : sink_(sink), sequence_(sequence), lane_(lane), next_uuid_(first_uuid) {}

uint64_t TraceWriter::AddProcess(int32_t pid, std::string_view name, std::string_view description) {
  const uint64_t uuid = next_uuid_++;
  std::string process, descriptor;
  PutVarint(pb::ProcessDescriptor::kPidFieldNumber, static_cast<uint64_t>(int64_t{pid}), &process);
  PutBytes(pb::ProcessDescriptor::kProcessNameFieldNumber, name, &process);
  PutVarint(pb::TrackDescriptor::kUuidFieldNumber, uuid, &descriptor);
  PutBytes(pb::TrackDescriptor::kProcessFieldNumber, process, &descriptor);
  PutVarint(pb::TrackDescriptor::kChildOrderingFieldNumber, pb::TrackDescriptor::EXPLICIT,
            &descriptor);
  if (!description.empty()) {
    PutBytes(pb::TrackDescriptor::kDescriptionFieldNumber, description, &descriptor);
  }
  AppendDescriptor(descriptor);
  return uuid;
}

uint64_t TraceWriter::AddTrack(uint64_t parent, std::string_view name, int32_t rank,
                               std::string_view description) {
  const uint64_t uuid = next_uuid_++;
  std::string descriptor;
  PutVarint(pb::TrackDescriptor::kUuidFieldNumber, uuid, &descriptor);
  if (parent != 0) PutVarint(pb::TrackDescriptor::kParentUuidFieldNumber, parent, &descriptor);
  PutBytes(pb::TrackDescriptor::kNameFieldNumber, name, &descriptor);
  if (!description.empty()) {
    PutBytes(pb::TrackDescriptor::kDescriptionFieldNumber, description, &descriptor);
  }
  PutVarint(pb::TrackDescriptor::kSiblingOrderRankFieldNumber, static_cast<uint64_t>(int64_t{rank}),
            &descriptor);
  // Lanes of one stream have names of their own, but a merge by name is the default.
  PutVarint(pb::TrackDescriptor::kSiblingMergeBehaviorFieldNumber,
            pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE, &descriptor);
  AppendDescriptor(descriptor);
  return uuid;
}

uint64_t TraceWriter::AddCounterTrack(uint64_t parent, std::string_view name,
                                      std::string_view unit_name, int32_t rank) {
  const uint64_t uuid = next_uuid_++;
  std::string counter, descriptor;
  PutBytes(pb::CounterDescriptor::kUnitNameFieldNumber, unit_name, &counter);
  PutVarint(pb::TrackDescriptor::kUuidFieldNumber, uuid, &descriptor);
  if (parent != 0) PutVarint(pb::TrackDescriptor::kParentUuidFieldNumber, parent, &descriptor);
  PutBytes(pb::TrackDescriptor::kNameFieldNumber, name, &descriptor);
  PutBytes(pb::TrackDescriptor::kCounterFieldNumber, counter, &descriptor);
  PutVarint(pb::TrackDescriptor::kSiblingOrderRankFieldNumber, static_cast<uint64_t>(int64_t{rank}),
            &descriptor);
  AppendDescriptor(descriptor);
  return uuid;
}

void TraceWriter::Slice(uint64_t track, int64_t start_ns, int64_t end_ns, uint64_t name,
                        absl::Span<const TraceArg> args, absl::Span<const uint64_t> flows,
                        absl::Span<const uint64_t> terminating_flows) {
  event_.resize(3 * kMaxFieldBytes + args.size() * (5 + 3 * kMaxFieldBytes) +
                (flows.size() + terminating_flows.size()) * kMaxFieldBytes);
  uint8_t* p = event_.data();
  p = RawVarint(p, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_BEGIN);
  p = RawVarint(p, pb::TrackEvent::kTrackUuidFieldNumber, track);
  p = RawVarint(p, pb::TrackEvent::kNameIidFieldNumber, name);
  for (const TraceArg& arg : args) {
    uint8_t annotation[3 * kMaxFieldBytes];
    uint8_t* a = RawVarint(annotation, pb::DebugAnnotation::kNameIidFieldNumber, arg.name);
    if (const auto* text = std::get_if<InternedText>(&arg.value)) {
      a = RawVarint(a, pb::DebugAnnotation::kStringValueIidFieldNumber, text->iid);
    } else if (const auto* i = std::get_if<int64_t>(&arg.value)) {
      a = RawVarint(a, pb::DebugAnnotation::kIntValueFieldNumber, static_cast<uint64_t>(*i));
    } else if (const auto* u = std::get_if<uint64_t>(&arg.value)) {
      a = RawVarint(a, pb::DebugAnnotation::kUintValueFieldNumber, *u);
    } else {
      uint64_t bits;
      const double value = std::get<double>(arg.value);
      static_assert(sizeof(bits) == sizeof(value));
      std::memcpy(&bits, &value, sizeof(bits));
      a = RawFixed64(a, pb::DebugAnnotation::kDoubleValueFieldNumber, bits);
    }
    p = RawLength(p, pb::TrackEvent::kDebugAnnotationsFieldNumber,
                  static_cast<size_t>(a - annotation));
    p = std::copy(annotation, a, p);
  }
  for (uint64_t flow : flows) p = RawFixed64(p, pb::TrackEvent::kFlowIdsFieldNumber, flow);
  for (uint64_t flow : terminating_flows) {
    p = RawFixed64(p, pb::TrackEvent::kTerminatingFlowIdsFieldNumber, flow);
  }
  AppendPacket(start_ns, event_.data(), static_cast<size_t>(p - event_.data()));
  uint8_t end[2 * kMaxFieldBytes];
  p = RawVarint(end, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_SLICE_END);
  p = RawVarint(p, pb::TrackEvent::kTrackUuidFieldNumber, track);
  AppendPacket(end_ns, end, static_cast<size_t>(p - end));
}

void TraceWriter::Counter(uint64_t track, int64_t ts_ns, int64_t value) {
  uint8_t event[3 * kMaxFieldBytes];
  uint8_t* p = RawVarint(event, pb::TrackEvent::kTypeFieldNumber, pb::TrackEvent::TYPE_COUNTER);
  p = RawVarint(p, pb::TrackEvent::kTrackUuidFieldNumber, track);
  p = RawVarint(p, pb::TrackEvent::kCounterValueFieldNumber, static_cast<uint64_t>(value));
  AppendPacket(ts_ns, event, static_cast<size_t>(p - event));
}

absl::Status TraceWriter::Flush() {
  if (status_.ok() && !buffer_.empty()) status_ = sink_->Append(buffer_, lane_);
  buffer_.clear();
  return status_;
}

uint64_t TraceWriter::EventName(std::string_view name) {
  return Intern(name, pb::InternedData::kEventNamesFieldNumber, pb::EventName::kIidFieldNumber,
                pb::EventName::kNameFieldNumber, &event_names_, &interned_);
}

uint64_t TraceWriter::ArgName(std::string_view name) {
  return Intern(name, pb::InternedData::kDebugAnnotationNamesFieldNumber,
                pb::DebugAnnotationName::kIidFieldNumber, pb::DebugAnnotationName::kNameFieldNumber,
                &arg_names_, &interned_);
}

InternedText TraceWriter::Text(std::string_view value) {
  return InternedText{Intern(value, pb::InternedData::kDebugAnnotationStringValuesFieldNumber,
                             pb::InternedString::kIidFieldNumber,
                             pb::InternedString::kStrFieldNumber, &texts_, &interned_)};
}

// An interned string goes into the InternedData of the next packet, at or before its first use;
// the packets after refer to it by iid alone.
uint64_t TraceWriter::Intern(std::string_view text, int table_field, int iid_field, int text_field,
                             absl::flat_hash_map<std::string, uint64_t>* ids,
                             std::string* interned) {
  auto [it, added] = ids->try_emplace(absl::string_view(text.data(), text.size()), ids->size() + 1);
  if (added) {
    std::string entry;
    PutVarint(iid_field, it->second, &entry);
    PutBytes(text_field, text, &entry);
    PutBytes(table_field, entry, interned);
  }
  return it->second;
}

void TraceWriter::AppendPacket(int64_t ts_ns, const uint8_t* event, size_t event_bytes) {
  uint8_t head[5 * kMaxFieldBytes];
  uint8_t* p = RawVarint(head, pb::TracePacket::kTimestampFieldNumber, Timestamp(ts_ns));
  p = RawVarint(p, pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, sequence_);
  // The first packet starts the sequence's interned names afresh. The others read them without
  // saying so: SEQ_NEEDS_INCREMENTAL_STATE only lets a reader drop packets whose state was lost
  // (a ring buffer that wrapped), which a file written whole never has; 2 bytes a packet.
  if (packets_ == 0) {
    p = RawVarint(p, pb::TracePacket::kSequenceFlagsFieldNumber,
                  pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED |
                      pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  }
  if (!interned_.empty())
    p = RawLength(p, pb::TracePacket::kInternedDataFieldNumber, interned_.size());
  const size_t head_bytes = static_cast<size_t>(p - head);
  uint8_t event_tag[kMaxFieldBytes];
  const size_t event_tag_bytes = static_cast<size_t>(
      RawLength(event_tag, pb::TracePacket::kTrackEventFieldNumber, event_bytes) - event_tag);
  const size_t packet_bytes = head_bytes + interned_.size() + event_tag_bytes + event_bytes;
  uint8_t packet_tag[kMaxFieldBytes];
  const size_t packet_tag_bytes = static_cast<size_t>(
      RawLength(packet_tag, pb::Trace::kPacketFieldNumber, packet_bytes) - packet_tag);
  buffer_.append(reinterpret_cast<const char*>(packet_tag), packet_tag_bytes);
  buffer_.append(reinterpret_cast<const char*>(head), head_bytes);
  buffer_.append(interned_);
  interned_.clear();
  buffer_.append(reinterpret_cast<const char*>(event_tag), event_tag_bytes);
  buffer_.append(reinterpret_cast<const char*>(event), event_bytes);
  ++packets_;
  FlushIfFull();
}

void TraceWriter::AppendDescriptor(const std::string& descriptor) {
  std::string packet;
  PutVarint(pb::TracePacket::kTrustedPacketSequenceIdFieldNumber, sequence_, &packet);
  if (packets_ == 0) {
    PutVarint(pb::TracePacket::kSequenceFlagsFieldNumber,
              pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED, &packet);
  }
  PutBytes(pb::TracePacket::kTrackDescriptorFieldNumber, descriptor, &packet);
  PutBytes(pb::Trace::kPacketFieldNumber, packet, &buffer_);
  ++packets_;
  FlushIfFull();
}

void TraceWriter::FlushIfFull() {
  if (buffer_.size() < kFlushBytes) return;
  if (status_.ok()) status_ = sink_->Append(buffer_, lane_);
  buffer_.clear();
}

}  // namespace tracefuse
