#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/scan/event_chunker.h"

namespace tracefuse {
namespace {

// Kernel names that break naive splitters, as they appear inside JSON strings.
const std::vector<std::string> kAdversarialNames = {
    R"(plain_kernel)",
    R"(quote \"inside\" name)",
    R"(backslash at end \\)",
    R"(escaped backslash then quote \\\" still inside)",
    R"(brace and comma },{ \"x\": [1, 2] })",
    R"(open bracket [ and {lambda()#1} and ]])",
    R"(unicode escape \u00e9 and surrogate pair \ud83d\ude00)",
    "raw UTF-8 \xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97",
    R"(control escapes \n \t \r \b \f \/)",
    std::string(5000, 'k') + R"(},{\"long)",
};

std::string Event(const std::string& escaped_name, int i) {
  return R"({"ph": "X", "cat": "kernel", "name": ")" + escaped_name + R"(", "ts": )" +
         std::to_string(1000 + i) + R"(.125, "dur": 2.5, "args": {"correlation": )" +
         std::to_string(i) + R"(, "grid": [1, 2, 3]}})";
}

std::string Trace(int repeat, const std::string& sep = ",\n  ") {
  std::string t = R"({"deviceProperties": [{"name": "GPU \"]x[\"", "warpSize": 64}],)"
                  R"( "traceEvents": [)";
  int i = 0;
  for (int r = 0; r < repeat; ++r) {
    for (const std::string& n : kAdversarialNames) {
      if (i > 0) t += sep;
      t += Event(n, i++);
    }
  }
  t += R"(], "traceName": "a \"traceEvents\": [ trap", "after": {"nested": [1, {"k": "}"}]}})";
  return t;
}

// Feeds `text` in blocks of `block_size` bytes (each in its own heap buffer, so no chunk can rely
// on bytes of a neighbouring block) and returns the chunks.
std::vector<EventChunk> Split(const std::string& text, size_t block_size, EventSplitter* splitter,
                              absl::Status* status) {
  std::vector<EventChunk> chunks;
  for (size_t off = 0; off < text.size(); off += block_size) {
    size_t n = std::min(block_size, text.size() - off);
    auto buf = std::shared_ptr<char>(new char[n], std::default_delete<char[]>());
    std::memcpy(buf.get(), text.data() + off, n);
    Block b{buf.get(), n, off, buf};
    *status = splitter->Feed(b, &chunks);
    if (!status->ok()) return chunks;
  }
  *status = splitter->Finish();
  return chunks;
}

std::vector<std::string> NamesByDom(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(simdjson::padded_string(text)).value();
  std::vector<std::string> names;
  simdjson::dom::array events = doc["traceEvents"].get_array().value();
  for (simdjson::dom::element e : events) {
    names.emplace_back(std::string_view(e["name"].get_string().value()));
  }
  return names;
}

std::vector<std::string> NamesByChunks(const std::vector<EventChunk>& chunks) {
  std::vector<std::string> names;
  ChunkParser parser(1024);
  ParsedChunk parsed;
  for (const EventChunk& c : chunks) {
    absl::Status s = parser.Parse(c, "t", &parsed);
    EXPECT_TRUE(s.ok()) << s;
    for (const KernelEvent& k : parsed.kernels) names.emplace_back(parsed.name(k.name));
  }
  return names;
}

class SplitterBoundaries : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(SplitterBoundaries, EveryEventSurvivesAnyBlockAndChunkBoundary) {
  auto [block_size, chunk_bytes] = GetParam();
  const std::string text = Trace(3);
  SplitterOptions options;
  options.chunk_bytes = chunk_bytes;
  EventSplitter splitter("t", options);
  absl::Status status;
  std::vector<EventChunk> chunks = Split(text, block_size, &splitter, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(NamesByChunks(chunks), NamesByDom(text));
  // Chunks tile the events exactly: each starts at '{', ends after '}', in order, seq 0, 1, ...
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].seq, i);
    EXPECT_EQ(text[chunks[i].begin], '{');
    EXPECT_EQ(text[chunks[i].end - 1], '}');
    std::string joined;
    for (const Block& p : chunks[i].pieces) joined.append(p.data, p.size);
    EXPECT_EQ(joined, text.substr(chunks[i].begin, chunks[i].end - chunks[i].begin));
  }
  // The metadata keeps every other top-level key, with the events array emptied.
  simdjson::dom::parser parser;
  simdjson::dom::element meta =
      parser.parse(simdjson::padded_string(splitter.metadata_json())).value();
  EXPECT_EQ(meta["traceEvents"].get_array().value().size(), 0u);
  EXPECT_EQ(std::string_view(meta["traceName"].get_string().value()), "a \"traceEvents\": [ trap");
  EXPECT_EQ(std::string_view(meta["deviceProperties"].at(0)["name"].get_string().value()),
            "GPU \"]x[\"");
  EXPECT_TRUE(meta["after"]["nested"].error() == simdjson::SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SplitterBoundaries,
                         ::testing::Combine(::testing::Values<size_t>(1, 2, 3, 7, 63, 64, 65, 127,
                                                                      4096, 1 << 20),
                                            ::testing::Values<size_t>(1, 300, 6000, 1 << 20)));

TEST(Splitter, OneLineAndPrettyLayoutsGiveTheSameEvents) {
  for (const char* sep : {",", ",\n", " ,\r\n\t "}) {
    const std::string text = Trace(2, sep);
    EventSplitter splitter("t");
    absl::Status status;
    auto chunks = Split(text, 100, &splitter, &status);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(NamesByChunks(chunks), NamesByDom(text));
  }
}

// The array closes in another block than it opened in: under UBSan (scripts/test's build-asan)
// this also checks that no pointer is formed to where the array began (found by fuzz_trace).
TEST(Splitter, BareArrayOfEvents) {
  const std::string text = "\xEF\xBB\xBF [" + Event("a", 1) + ", " + Event("b}", 2) + "]\n";
  EventSplitter splitter("t");
  absl::Status status;
  auto chunks = Split(text, 5, &splitter, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(splitter.bare_array());
  EXPECT_EQ(NamesByChunks(chunks), (std::vector<std::string>{"a", "b}"}));
  EXPECT_EQ(splitter.metadata_json(), "[]");
}

TEST(Splitter, EmptyEventsArray) {
  EventSplitter splitter("t");
  absl::Status status;
  auto chunks = Split(R"({"traceEvents": [ ], "x": 1})", 3, &splitter, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(splitter.events_started());
  EXPECT_TRUE(chunks.empty());
}

// The keys before the events stay readable however far the input has been read: pairing and
// early platform detection read them after whole small files went through the splitter.
TEST(Splitter, LeadingMetadataSurvivesTheRestOfTheInput) {
  for (size_t block : {size_t{4}, size_t{1} << 20}) {
    EventSplitter splitter("t");
    absl::Status status;
    Split(R"({"a": [1], "traceEvents": [{"x": 1}], "after": 2})", block, &splitter, &status);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(splitter.leading_metadata_json(), R"({"a": [1], "traceEvents": [)") << block;
    EXPECT_EQ(splitter.metadata_json(), R"({"a": [1], "traceEvents": [], "after": 2})") << block;
  }
}

struct BadInput {
  const char* text;
  const char* message;
};

class SplitterErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(SplitterErrors, ExactMessage) {
  for (size_t block : {1, 4, 1 << 20}) {
    EventSplitter splitter("f.json");
    absl::Status status;
    Split(GetParam().text, block, &splitter, &status);
    EXPECT_EQ(status.message(), GetParam().message) << "block size " << block;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Messages, SplitterErrors,
    ::testing::Values(
        BadInput{"", "f.json: empty input"},
        BadInput{" \n ", "f.json: not a JSON trace: the input holds only whitespace"},
        BadInput{"GIF89a", "f.json: not a JSON trace: expected '{' or '[' at byte 0, found 'G'"},
        BadInput{R"({"traceEvents": [{"name": "a"})",
                 "f.json: truncated JSON: the input ends at byte 30 inside the events array"},
        BadInput{R"({"traceEvents": [{"name": "a)",
                 "f.json: truncated JSON: the input ends at byte 28 inside a string"},
        BadInput{R"({"traceEvents": [{"a": 1} {"b": 2}]})",
                 "f.json: malformed JSON at byte 26: missing ',' between two events"},
        BadInput{R"({"traceEvents": [{"a": 1},]})",
                 "f.json: malformed JSON at byte 26: trailing ',' before ']'"},
        BadInput{R"({"traceEvents": [{"a": 1}, 5]})",
                 "f.json: malformed JSON at byte 27: unexpected '5' in the events array "
                 "(expected an event object)"},
        BadInput{R"({"traceEvents": [[1]]})",
                 "f.json: malformed JSON at byte 17: an element of the events array is an array, "
                 "not an object"},
        BadInput{R"({"traceEvents": [{"a": 1]})",
                 "f.json: malformed JSON at byte 24: unexpected ']' (expected '}')"},
        BadInput{R"({"traceEvents": [{"a": 1}}]})",
                 "f.json: malformed JSON at byte 25: unexpected '}' (expected ']')"},
        BadInput{R"({"traceEvents": []}} )",
                 "f.json: malformed JSON at byte 19: unexpected '}' after the top-level value"},
        BadInput{R"({"traceEvents": []} x)",
                 "f.json: malformed JSON at byte 20: unexpected 'x' after the top-level value"}));

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

TEST(Splitter, FlagsMetadataBeyondItsCap) {
  SplitterOptions o;
  o.max_metadata_bytes = 16;
  EventSplitter splitter("t", o);
  absl::Status status;
  auto chunks = Split(R"({"traceEvents": [{"a": 1}], "big": "0123456789012345678901234567"})", 8,
                      &splitter, &status);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(chunks.size(), 1u);  // the events are still all there
  EXPECT_TRUE(splitter.metadata_truncated());
  EventSplitter roomy("t");
  Split(R"({"traceEvents": [], "x": 1})", 8, &roomy, &status);
  EXPECT_FALSE(roomy.metadata_truncated());
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// Cuts are found between two objects of an array in every writer's layout, with where the next
// object's '{' stands on its line.
TEST(EventCut, FoundBetweenObjects) {
  struct Case {
    std::string text;
    size_t event_end, next_event;
    uint32_t line_position;
  };
  const std::vector<Case> cases = {
      {"  {\n    \"ph\": \"X\"\n  },\n  {\n    \"ph\": \"X\"\n  }", 21, 25, 2},  // Kineto
      {"{\"a\": 1},\n{\"b\": 2}", 8, 10, 0},                                     // one per line
      {"{\"a\": 1}\n, {\"b\": 2}", 8, 11, 2},                                    // comma first
      {"{\"a\": 1},\r\n\t{\"b\": 2}", 8, 12, 1},                                 // CRLF, tab
      {"{\"a\": 1}, {\"b\": 2}", 8, 10, kSameLine},                              // one line
      {"{\"a\":{\"x\":1}},{\"b\":2}", 13, 14, kSameLine},                        // compact
  };
  for (const Case& c : cases) {
    for (auto find : {FindLastEventCut, FindFirstEventCut}) {
      std::optional<EventCut> cut = find(c.text, 100, kAnyPosition);
      ASSERT_TRUE(cut.has_value()) << c.text;
      EXPECT_EQ(cut->event_end, 100 + c.event_end) << c.text;
      EXPECT_EQ(cut->next_event, 100 + c.next_event) << c.text;
      EXPECT_EQ(cut->line_position, c.line_position) << c.text;
      EXPECT_EQ(find(c.text, 0, int(c.line_position == kSameLine ? 7 : c.line_position + 1)),
                std::nullopt)
          << c.text;
    }
  }
  for (const std::string no_cut : {
           "\"key\":\n{\"b\": 2}",    // a value
           "[\n{\"b\": 2}",           // the first element
           "{\"n\": \"},\\n{\"}",     // an escaped newline between
           "{\"a\": 1},\n\"b\"",      // not an object
           "{\"a\": 1},,{\"b\": 2}",  // two commas
       }) {
    EXPECT_EQ(FindLastEventCut(no_cut, 0), std::nullopt) << no_cut;
    EXPECT_EQ(FindFirstEventCut(no_cut, 0), std::nullopt) << no_cut;
  }
}

TEST(EventCut, FirstAndLastOfSeveral) {
  const std::string text = "{\"a\": 1},\n{\"b\": 2},\n{\"c\": 3}";
  EXPECT_EQ(FindFirstEventCut(text, 0)->next_event, 10u);
  EXPECT_EQ(FindLastEventCut(text, 0)->next_event, 20u);
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// SplitWithChunker() feeds `text` to an EventChunker in blocks of `block_size` bytes.
std::vector<EventChunk> SplitWithChunker(const std::string& text, size_t block_size,
                                         const ChunkerOptions& options, absl::Status* status,
                                         std::optional<TruncatedInput>* truncated = nullptr) {
  EventChunker chunker("t", options);
  std::vector<EventChunk> chunks;
  for (size_t off = 0; off < text.size(); off += block_size) {
    const size_t n = std::min(block_size, text.size() - off);
    auto buf = std::shared_ptr<char>(new char[n], std::default_delete<char[]>());
    std::memcpy(buf.get(), text.data() + off, n);
    *status = chunker.Feed(Block{buf.get(), n, off, buf}, &chunks);
    if (!status->ok()) return chunks;
  }
  *status = chunker.Finish(&chunks);
  if (truncated != nullptr) *truncated = chunker.truncated();
  return chunks;
}

// The first and the largest event of Trace() whose name holds 5000 'k's (the last: its
// correlation id is the longest).
uint64_t FirstGiantStart(const std::string& text) {
  return text.rfind('{', text.find(std::string(5000, 'k')));
}
uint64_t LargestEventSize(const std::string& text) {
  const uint64_t start = text.rfind('{', text.rfind(std::string(5000, 'k')));
  return text.find("}}", start) + 2 - start;
}

// SplitWithUnread() feeds `text` to an EventChunker that cuts at block ends, in padded blocks of
// `block_size` bytes, each next block starting where TakeUnread() says (as ByteSource::Unread()
// does for a decompressing source).
std::vector<EventChunk> SplitWithUnread(const std::string& text, size_t block_size,
                                        const ChunkerOptions& options, absl::Status* status) {
  EventChunker chunker("t", options);
  chunker.CutAtBlockEnds();
  std::vector<EventChunk> chunks;
  for (size_t off = 0; off < text.size();) {
    const size_t n = std::min(block_size, text.size() - off);
    auto buf =
        std::shared_ptr<char>(new char[1 + n + kBlockTailroom], std::default_delete<char[]>());
    std::memcpy(buf.get() + 1, text.data() + off, n);
    *status = chunker.Feed(Block{buf.get() + 1, n, off, buf, /*padded=*/true}, &chunks);
    if (!status->ok()) return chunks;
    const std::optional<uint64_t> unread = chunker.TakeUnread();
    if (unread) {
      EXPECT_GT(*unread, off);
      EXPECT_LT(*unread, off + n);
      // What an in-place parse does to the block: the bytes after the chunk are not read again.
      std::memset(buf.get() + 1 + (*unread - off), '#', n - (*unread - off));
    }
    off = unread ? *unread : off + n;
  }
  *status = chunker.Finish(&chunks);
  return chunks;
}

// EventsIn() is the events of `chunks`, in order, by name: each chunk parsed as an array.
std::vector<std::string> EventsIn(const std::string& text, const std::vector<EventChunk>& chunks) {
  std::vector<std::string> names;
  simdjson::dom::parser parser;
  for (const EventChunk& c : chunks) {
    simdjson::dom::element array;
    EXPECT_EQ(parser.parse("[" + text.substr(c.begin, c.bytes()) + "]").get(array),
              simdjson::SUCCESS);
    for (simdjson::dom::element e : array.get_array()) {
      names.emplace_back(std::string_view(e["name"].get_string()));
    }
  }
  return names;
}

// Cutting at block ends hands out every event once, in order, whatever the block and chunk
// sizes; each in-place chunk is one padded piece holding its own bytes, and most chunks are in
// place once blocks are smaller than chunks.
TEST(EventChunker, InPlaceChunksEndAtTheirBlocksLastCut) {
  const std::string text = Trace(300);
  absl::Status st;
  ChunkerOptions exact_options;
  exact_options.speculate = false;
  const std::vector<std::string> expected =
      EventsIn(text, SplitWithChunker(text, 1 << 20, exact_options, &st));
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(expected.size(), 300 * kAdversarialNames.size());
  for (size_t block : {size_t{3000}, size_t{16} << 10, size_t{100} << 10}) {
    for (size_t chunk : {size_t{1000}, size_t{8} << 10, size_t{1} << 20}) {
      SCOPED_TRACE("block " + std::to_string(block) + " chunk " + std::to_string(chunk));
      ChunkerOptions options;
      options.chunk_bytes = chunk;
      const std::vector<EventChunk> chunks = SplitWithUnread(text, block, options, &st);
      ASSERT_TRUE(st.ok()) << st;
      size_t in_place = 0;
      for (const EventChunk& c : chunks) {
        std::string bytes;
        for (const Block& piece : c.pieces) bytes.append(piece.data, piece.size);
        ASSERT_EQ(bytes, text.substr(c.begin, c.bytes()));
        if (!c.in_place) continue;
        ++in_place;
        ASSERT_EQ(c.pieces.size(), 1u);
        EXPECT_TRUE(c.pieces[0].padded);
      }
      EXPECT_EQ(EventsIn(text, chunks), expected);
      // A block with no cut (3000 bytes, in an event of 5 KB) leaves the chunk to span blocks.
      if (block < LargestEventSize(text)) continue;
      EXPECT_GT(in_place, 0u);
      if (block < chunk) {
        EXPECT_GT(in_place * 2, chunks.size());
      }
    }
  }
}

TEST(MaxEventBytes, ALargerEventIsAnErrorAtItsStartHoweverTheInputIsCut) {
  const std::string text = Trace(2, ",\n");
  const std::string message = StrCat("t: the event at byte ", FirstGiantStart(text),
                                     " is larger than the limit of 1000 bytes on one event "
                                     "(--max-event-bytes)");
  for (size_t block : {1, 64, 4096, 1 << 20}) {
    for (bool speculate : {false, true}) {
      ChunkerOptions options;
      options.chunk_bytes = 256;
      options.speculate = speculate;
      options.max_event_bytes = 1000;
      absl::Status status;
      SplitWithChunker(text, block, options, &status);
      EXPECT_EQ(status.message(), message) << "block " << block << " speculate " << speculate;
      options.max_event_bytes = LargestEventSize(text);  // every event is read
      std::vector<EventChunk> chunks = SplitWithChunker(text, block, options, &status);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(NamesByChunks(chunks), NamesByDom(text));
    }
  }
}

// Each event's [begin, end) in `text`, from the exact splitter with one event per chunk.
std::vector<std::pair<uint64_t, uint64_t>> EventRanges(const std::string& text) {
  SplitterOptions one_per_chunk;
  one_per_chunk.chunk_bytes = 1;
  EventSplitter splitter("t", one_per_chunk);
  absl::Status status;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const EventChunk& c : Split(text, text.size(), &splitter, &status)) {
    ranges.emplace_back(c.begin, c.end);
  }
  EXPECT_TRUE(status.ok()) << status;
  return ranges;
}

// A trace cut anywhere after its events array began is salvaged: the chunks hold exactly the
// events that closed before the cut, and TruncatedInput says where the cut fell.
TEST(Salvage, KeepsExactlyTheEventsBeforeTheCut) {
  const std::string text = Trace(1);
  const std::vector<std::pair<uint64_t, uint64_t>> events = EventRanges(text);
  const std::vector<std::string> names = NamesByDom(text);
  const uint64_t array_open = text.find('[', text.find("traceEvents"));
  const uint64_t array_close = text.find(']', events.back().second);
  for (uint64_t cut = 1; cut < text.size(); cut += 3) {
    const std::string head = text.substr(0, cut);
    for (bool speculate : {false, true}) {
      ChunkerOptions options;
      options.chunk_bytes = 512;
      options.speculate = speculate;
      options.salvage_truncated = true;
      absl::Status status;
      std::optional<TruncatedInput> t;
      std::vector<EventChunk> chunks = SplitWithChunker(head, 97, options, &status, &t);
      if (cut <= array_open) {
        EXPECT_TRUE(IsTruncatedInput(status)) << cut << ": " << status;
        continue;
      }
      ASSERT_TRUE(status.ok()) << cut << ": " << status;
      ASSERT_TRUE(t.has_value()) << cut;
      size_t complete = 0;
      while (complete < events.size() && events[complete].second <= cut) ++complete;
      EXPECT_EQ(NamesByChunks(chunks),
                std::vector<std::string>(names.begin(), names.begin() + complete))
          << cut;
      const bool inside = complete < events.size() && events[complete].first < cut;
      EXPECT_EQ(t->input_bytes, cut);
      EXPECT_EQ(t->kept_bytes, cut > array_close ? array_close + 1
                               : complete > 0    ? events[complete - 1].second
                                                 : array_open + 1)
          << cut;
      EXPECT_EQ(t->position, cut > array_close ? CutPosition::kAfterEvents
                             : inside          ? CutPosition::kInsideEvent
                                               : CutPosition::kBetweenEvents)
          << cut;
      EXPECT_EQ(t->dropped_events(), inside ? 1u : 0u) << cut;
    }
  }
  absl::Status status;
  EventSplitter strict("t");
  Split(text.substr(0, text.size() - 1), 64, &strict, &status);
  EXPECT_TRUE(IsTruncatedInput(status)) << status;
}

}  // namespace
}  // namespace tracefuse
