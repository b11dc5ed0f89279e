// The Perfetto writer (src/report/perfetto/trace_writer.h), decoded with the classes protoc
// generates from the same .proto: what a reader of the bytes sees, field by field.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "report/perfetto/perfetto_trace.pb.h"
#include "report/perfetto/trace_writer.h"

namespace tracefuse {
namespace {

namespace pb = perfetto::protos;

// Written() runs `write` on a TraceWriter over a temporary file and decodes what it wrote.
template <typename Write>
pb::Trace Written(Write write) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tracefuse_perfetto_test.pftrace").string();
  absl::StatusOr<OutputFile> out = OutputFile::Open(path);
  EXPECT_TRUE(out.ok()) << out.status();
  TraceSink sink(&*out);
  TraceWriter writer(&sink);
  write(writer);
  EXPECT_TRUE(writer.Finish().ok());
  EXPECT_TRUE(out->Commit().ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::filesystem::remove(path);
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes.str()));
  return trace;
}

// Names resolves interned names as trace_processor does: each packet's InternedData first.
struct Names {
  std::map<uint64_t, std::string> events, args, values;
  void Add(const pb::TracePacket& p) {
    for (const pb::EventName& n : p.interned_data().event_names()) {
      EXPECT_TRUE(events.emplace(n.iid(), n.name()).second) << "iid " << n.iid() << " twice";
    }
    for (const pb::DebugAnnotationName& n : p.interned_data().debug_annotation_names()) {
      EXPECT_TRUE(args.emplace(n.iid(), n.name()).second) << "iid " << n.iid() << " twice";
    }
    for (const pb::InternedString& v : p.interned_data().debug_annotation_string_values()) {
      EXPECT_TRUE(values.emplace(v.iid(), v.str()).second) << "iid " << v.iid() << " twice";
    }
  }
};

TEST(TraceWriter, WritesTracksSlicesArgsFlowsAndCountersAsPerfettoReadsThem) {
  uint64_t process = 0, stream = 0, busy = 0;
  const pb::Trace trace = Written([&](TraceWriter& w) {
    process = w.AddProcess(1, "MI300X (AMD Instinct MI300X)");
    stream = w.AddTrack(process, "GPU 0, stream 7", 2);
    busy = w.AddCounterTrack(process, "busy", "kernels running", 0);
    const std::vector<TraceArg> args = {w.Arg("full name", "gemm<128, 64>"),
                                        w.Arg("correlation", int64_t{-5}),
                                        w.Arg("step", uint64_t{3}), w.Arg("ratio", 1.25)};
    w.Slice(stream, 1000, 1500, "gemm<#, #>", args, {42});
    w.Slice(stream, 1600, 1700, "gemm<#, #>", {w.Arg("full name", "gemm<8, 8>")}, {}, {42});
    w.Counter(busy, 1000, 1);
    w.Slice(stream, -10, 5, "early", {});  // before the clock's zero: clamped
  });
  ASSERT_EQ(trace.packet_size(), 3 + 2 * 3 + 1);
  // Descriptors: a process, a slice track under it, a counter track under it.
  const pb::TrackDescriptor& p = trace.packet(0).track_descriptor();
  EXPECT_EQ(trace.packet(0).sequence_flags(), pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  EXPECT_EQ(p.uuid(), process);
  EXPECT_EQ(p.process().pid(), 1);
  EXPECT_EQ(p.process().process_name(), "MI300X (AMD Instinct MI300X)");
  EXPECT_EQ(p.child_ordering(), pb::TrackDescriptor::EXPLICIT);
  const pb::TrackDescriptor& s = trace.packet(1).track_descriptor();
  EXPECT_EQ(s.uuid(), stream);
  EXPECT_EQ(s.parent_uuid(), process);
  EXPECT_EQ(s.name(), "GPU 0, stream 7");
  EXPECT_EQ(s.sibling_order_rank(), 2);
  EXPECT_EQ(s.sibling_merge_behavior(), pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  const pb::TrackDescriptor& c = trace.packet(2).track_descriptor();
  EXPECT_EQ(c.uuid(), busy);
  EXPECT_TRUE(c.has_counter());
  EXPECT_EQ(c.counter().unit_name(), "kernels running");
  // Events: every packet on the writer's sequence, whose state the first packet cleared; no
  // other packet clears it again.
  Names names;
  for (int i = 3; i < trace.packet_size(); ++i) {
    const pb::TracePacket& packet = trace.packet(i);
    EXPECT_EQ(packet.trusted_packet_sequence_id(), trace.packet(0).trusted_packet_sequence_id());
    EXPECT_EQ(packet.sequence_flags() & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED, 0u);
    names.Add(packet);
  }
  const pb::TracePacket& begin = trace.packet(3);
  EXPECT_EQ(begin.timestamp(), 1000u);
  EXPECT_EQ(begin.track_event().type(), pb::TrackEvent::TYPE_SLICE_BEGIN);
  EXPECT_EQ(begin.track_event().track_uuid(), stream);
  EXPECT_EQ(names.events.at(begin.track_event().name_iid()), "gemm<#, #>");
  const auto& annotations = begin.track_event().debug_annotations();
  ASSERT_EQ(annotations.size(), 4);
  EXPECT_EQ(names.args.at(annotations[0].name_iid()), "full name");
  EXPECT_EQ(names.values.at(annotations[0].string_value_iid()), "gemm<128, 64>");
  EXPECT_EQ(names.args.at(annotations[1].name_iid()), "correlation");
  EXPECT_EQ(annotations[1].int_value(), -5);
  EXPECT_EQ(annotations[2].uint_value(), 3u);
  EXPECT_EQ(annotations[3].double_value(), 1.25);
  EXPECT_EQ(std::vector<uint64_t>(begin.track_event().flow_ids().begin(),
                                  begin.track_event().flow_ids().end()),
            std::vector<uint64_t>{42});
  const pb::TracePacket& end = trace.packet(4);
  EXPECT_EQ(end.timestamp(), 1500u);
  EXPECT_EQ(end.track_event().type(), pb::TrackEvent::TYPE_SLICE_END);
  EXPECT_EQ(end.track_event().track_uuid(), stream);
  // The second slice of the same name refers to it by iid alone, and ends the flow.
  const pb::TracePacket& second = trace.packet(5);
  EXPECT_FALSE(second.has_interned_data() && second.interned_data().event_names_size() > 0);
  EXPECT_EQ(second.track_event().name_iid(), begin.track_event().name_iid());
  EXPECT_EQ(second.track_event().terminating_flow_ids_size(), 1);
  EXPECT_EQ(second.track_event().terminating_flow_ids(0), 42u);
  const pb::TracePacket& counter = trace.packet(7);
  EXPECT_EQ(counter.track_event().type(), pb::TrackEvent::TYPE_COUNTER);
  EXPECT_EQ(counter.track_event().counter_value(), 1);
  EXPECT_EQ(trace.packet(8).timestamp(), 0u);
  EXPECT_EQ(names.events.size(), 2u);  // "gemm<#, #>" and "early", each once
  EXPECT_EQ(names.values.size(), 2u);  // the two full names, each once
}

// A trace larger than the writer's buffer is appended in pieces, every packet whole.
TEST(TraceWriter, StreamsTracesLargerThanItsBuffer) {
  constexpr int kSlices = 40000;
  const pb::Trace trace = Written([&](TraceWriter& w) {
    const uint64_t track = w.AddTrack(0, "stream", 0);
    for (int i = 0; i < kSlices; ++i) {
      w.Slice(track, i * 10, i * 10 + 5, "kernel",
              {w.Arg("full name", "a kernel name of some length <int, float>")});
    }
  });
  ASSERT_EQ(trace.packet_size(), 1 + 2 * kSlices);
  EXPECT_EQ(trace.packet(2 * kSlices - 1).timestamp(), uint64_t{(kSlices - 1) * 10});
  EXPECT_EQ(trace.packet(2 * kSlices).timestamp(), uint64_t{(kSlices - 1) * 10 + 5});
}

}  // namespace
}  // namespace tracefuse
