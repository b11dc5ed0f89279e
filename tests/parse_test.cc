#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {
namespace {

TEST(MicrosToNanos, ExactForThreeFractionalDigits) {
  EXPECT_EQ(MicrosToNanos("1751410836123.456"), 1751410836123456LL);
  EXPECT_EQ(MicrosToNanos("2204338330237.582 "), 2204338330237582LL);
  EXPECT_EQ(MicrosToNanos("12"), 12000);
  EXPECT_EQ(MicrosToNanos("0.1"), 100);
  EXPECT_EQ(MicrosToNanos("3.08"), 3080);
  EXPECT_EQ(MicrosToNanos("-3.5"), -3500);
  EXPECT_EQ(MicrosToNanos("0"), 0);
}

TEST(MicrosToNanos, RoundsExtraDigitsAndAcceptsExponents) {
  EXPECT_EQ(MicrosToNanos("1.0004"), 1000);
  EXPECT_EQ(MicrosToNanos("1.0005"), 1001);
  EXPECT_EQ(MicrosToNanos("1.23456789"), 1235);
  EXPECT_EQ(MicrosToNanos("1.5e3"), 1500000);
  EXPECT_EQ(MicrosToNanos("2E-3"), 2);
}

// Every value written with up to three decimals, as profilers write them, reads back exactly:
// short and long integer parts, negative values, trailing zeros, whitespace after.
TEST(MicrosToNanos, ReadsBackEveryValueWrittenWithThreeDecimals) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const int digits = static_cast<int>(rng() % 19);  // up to 9.2e18 ns
    int64_t ns = static_cast<int64_t>(rng() % 9200000000000000000ULL);
    for (int d = digits; d < 19; ++d) ns /= 10;
    if (rng() % 4 == 0) ns = -ns;
    const int64_t micros = ns / 1000, frac = std::abs(ns % 1000);
    std::string text = (ns < 0 && micros == 0 ? "-" : "") + std::to_string(micros);
    switch (rng() % 4) {
      case 0:
        if (frac != 0) continue;  // the integer form only for whole microseconds
        break;
      case 1:
        text += fmt::format(".{:03d}", frac);
        break;
      default:
        text += fmt::format(".{:03d}", frac);
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text += '0';
    }
    if (rng() % 8 == 0) text += " \n";
    ASSERT_EQ(MicrosToNanos(text), ns) << text;
  }
}

TEST(MicrosToNanos, RejectsNonNumbers) {
  EXPECT_EQ(MicrosToNanos(""), std::nullopt);
  EXPECT_EQ(MicrosToNanos("\"12\""), std::nullopt);
  EXPECT_EQ(MicrosToNanos("null"), std::nullopt);
  EXPECT_EQ(MicrosToNanos("1."), std::nullopt);
  EXPECT_EQ(MicrosToNanos("99999999999999999999"), std::nullopt);
}

// A chunk over one in-memory string.
EventChunk ChunkOf(const std::string& text, uint64_t at = 0) {
  auto owner = std::make_shared<std::string>(text);
  EventChunk c;
  c.begin = at;
  c.end = at + text.size();
  c.pieces.push_back(Block{owner->data(), owner->size(), at, owner});
  return c;
}

TEST(ChunkParser, ExtractsKernelFieldsInAnyKeyOrder) {
  ChunkParser parser(64);
  ParsedChunk out;
  std::string events =
      R"({"args": {"External id": 7, "correlation": 42, "stream": 3, "device": 1, "kind": "Dispatch Kernel"}, )"
      R"("dur": 2.5, "ts": 10.125, "name": "k\"1", "cat": "kernel", "ph": "X"},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": {"correlation": 9}},)"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": 1, "dur": 2},)"
      R"({"ph": "X", "cat": "kernel", "name": "k\"1", "ts": 11, "dur": 1, "args": null},)"
      R"({"ph": "X", "cat": "Kernel", "name": "old", "ts": "bad", "args": {"correlation": 5.0}},)"
      R"({"name": "process_name", "ph": "M"})";
  ASSERT_TRUE(parser.Parse(ChunkOf(events), "t", &out).ok());
  EXPECT_EQ(out.events, 6u);
  ASSERT_EQ(out.kernels.size(), 3u);
  ASSERT_EQ(out.name_count(), 2u);  // names are de-duplicated per chunk
  EXPECT_EQ(out.name(0), "k\"1");
  EXPECT_EQ(out.name(1), "old");
  const KernelEvent& k = out.kernels[0];
  EXPECT_EQ(k.ts_ns, 10125);
  EXPECT_EQ(k.dur_ns, 2500);
  EXPECT_EQ(k.correlation, 42);
  EXPECT_EQ(k.external_id, 7);
  EXPECT_EQ(k.stream, 3);
  EXPECT_EQ(k.device, 1);
  EXPECT_EQ(k.flags,
            KernelEvent::kHasCorrelation | KernelEvent::kHasExternalId | KernelEvent::kHasKind);
  EXPECT_EQ(out.kernels[1].name, 0u);
  EXPECT_EQ(out.kernels[1].flags, 0);  // args: null
  EXPECT_EQ(out.kernels[2].correlation, 5);
  EXPECT_EQ(out.kernels_with_bad_times, 1u);
  EXPECT_EQ(out.kernels_without_name, 0u);
  EXPECT_EQ(out.evidence.kernels_with_kind, 1u);
  EXPECT_EQ(out.evidence.hip_runtime_calls, 1u);
  std::vector<std::pair<std::string, uint64_t>> cats = {
      {"kernel", 2}, {"cpu_op", 1}, {"cuda_runtime", 1}, {"Kernel", 1}, {"", 1}};
  EXPECT_EQ(out.categories, cats);
}

TEST(ChunkParser, ReportsInputOffsetOfMalformedEvent) {
  ChunkParser parser(64);
  ParsedChunk out;
  // On-Demand validates what it reads: a structural error in any event, or a bad value of a
  // field tracefuse uses.
  absl::Status s = parser.Parse(ChunkOf(R"({"a": 1}, {"b": 1 "c": 2})", 1000), "f.json", &out);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(std::string(s.message()), "f.json: malformed JSON at byte 10"))
      << s.message();
}

// simdjson skips a missing value as a value that ends there, and a string value that a ':'
// follows as if it were a key: with an extra '}' after the event, the event parsed (found by
// fuzz_trace).
TEST(ChunkParser, RejectsAMissingValueAColonAfterAValueAndABareWord) {
  ChunkParser parser(64);
  ParsedChunk out;
  for (const char* events :
       {R"({"ph": "X": 7, "a": 1} })", R"({"ph": "X": 7})", R"({"pid":}})", R"({"a": , "b": 1}})",
        R"({"a": ]})", R"({"a": : 1}})", R"({"cat": "kernel", "args": {"stream": "7": 1}} })",
        R"({"cat": "kernel", "args": {"stream": }}})", R"({"cat": "kernel", "name": x})",
        R"({"cat": tru, "name": "k"})", R"({"cat": "kernel", "name": nulls})",
        R"({"cat": falsey})"}) {
    absl::Status s = parser.Parse(ChunkOf(events, 100), "f.json", &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << events;
    EXPECT_TRUE(absl::StartsWith(std::string(s.message()), "f.json: malformed JSON at byte 1"))
        << s.message();
  }
  const char* atoms = R"({"cat": "kernel", "name": null , "a": true, "b": false})";
  EXPECT_TRUE(parser.Parse(ChunkOf(atoms, 100), "f.json", &out).ok());
}

TEST(ChunkParser, GrowsForEventsLargerThanItsBuffer) {
  ChunkParser parser(16);
  ParsedChunk out;
  std::string name(100000, 'x');
  ASSERT_TRUE(
      parser.Parse(ChunkOf(R"({"cat": "kernel", "name": ")" + name + R"("})"), "t", &out).ok());
  EXPECT_EQ(out.name(0), name);
}

// The parser clears its per-chunk name tables with ClearKeepingCapacity(): Abseil's clear() would
// free a table of over 127 slots, and every chunk would grow it again under the heap's lock.
TEST(ClearKeepingCapacity, EmptiesATableAndKeepsItsSlotsForTheNextChunk) {
  absl::flat_hash_map<int64_t, uint32_t> table;
  for (uint32_t i = 0; i < 1000; ++i) table[i] = i;
  const size_t capacity = table.capacity();
  ClearKeepingCapacity(&table);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.capacity(), capacity);
  for (uint32_t i = 0; i < 1000; ++i) table[5000 + i] = i;
  EXPECT_EQ(table.capacity(), capacity);
  EXPECT_EQ(table.size(), 1000u);
  EXPECT_EQ(table.at(5999), 999u);
  EXPECT_FALSE(table.contains(999));
}

TEST(TraceMetadata, ReadsWhatPlatformDetectionNeeds) {
  auto m = ParseTraceMetadata(
      R"({"schemaVersion": 1, "deviceProperties": [{"name": "AMD Instinct MI300X", "warpSize": 64}],)"
      R"( "roctracer_version": "", "cupti_version": 22, "traceEvents": [], "baseTimeNanoseconds": 17})",
      "t");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->keys,
            (std::vector<std::string>{"schemaVersion", "deviceProperties", "roctracer_version",
                                      "cupti_version", "traceEvents", "baseTimeNanoseconds"}));
  EXPECT_EQ(m->gpu_name, "AMD Instinct MI300X");
  EXPECT_EQ(m->warp_size, 64);
  EXPECT_TRUE(m->has_roctracer_version);
  EXPECT_FALSE(m->roctracer_version_truthy);  // "" is falsy in Python
  EXPECT_TRUE(m->has_cupti_version);
  EXPECT_EQ(m->base_time_ns, 17);
}

}  // namespace
}  // namespace tracefuse
