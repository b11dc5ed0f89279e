// The benchmark's inputs: which files are traces and which hold names, and the names they give.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "simdjson.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/benchmark/classification.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/parse/importer.h"

namespace tracefuse {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// NameLine() is what one line of a JSON-lines names file names: the string itself, or the
// "name" of an object; false for anything else.
bool NameLine(simdjson::dom::parser& parser, std::string_view line, std::string* name) {
  simdjson::dom::element row;
  if (parser.parse(simdjson::padded_string(line)).get(row) != simdjson::SUCCESS) return false;
  std::string_view s;
  if (row.get_string().get(s) != simdjson::SUCCESS &&
      row["name"].get_string().get(s) != simdjson::SUCCESS) {
    return false;
  }
  *name = std::string(s);
  return true;
}

// ReadAll() is the whole input of `source`, inflated: names files are small.
absl::StatusOr<std::string> ReadAll(ByteSource& source) {
  std::string text;
  Block block;
  while (true) {
    absl::StatusOr<bool> more = source.Next(&block);
    if (!more.ok()) return more.status();
    if (!*more) return text;
    text.append(block.data, block.size);
  }
}

// ParseNamesFile() appends the names of a names file's `text` to `names`, in order, repeats
// included. Blank lines are skipped.
absl::Status ParseNamesFile(const std::string& path, NamesInputKind kind, std::string_view text,
                            std::vector<std::string>* names) {
  simdjson::dom::parser parser;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (kind == NamesInputKind::kLines) {
      names->emplace_back(line);
      continue;
    }
    std::string name;
    if (!NameLine(parser, line, &name)) {
      return absl::InvalidArgumentError(
          StrCat(path, ":", line_no, ": not a JSON string or an object with a \"name\" string"));
    }
    names->push_back(std::move(name));
  }
  return absl::OkStatus();
}

// DistinctNames collects (name, platform) pairs once each, in the order first seen.
class DistinctNames {
 public:
  explicit DistinctNames(BenchmarkNames* out) : out_(out) {}

  void Add(std::string_view name, Platform platform) {
    if (!seen_[static_cast<size_t>(platform)].emplace(name).second) return;
    out_->names.push_back(BenchmarkName{std::string(name), platform});
    out_->name_bytes += name.size();
  }

 private:
  BenchmarkNames* out_;
  absl::flat_hash_set<std::string, StringHash, StringEq> seen_[3];  // per Platform
};

// ReadNamesFile() reads the names file `source` into `input` (its distinct names) and
// `distinct`.
absl::Status ReadNamesFile(ByteSource& source, BenchmarkInput* input, DistinctNames* distinct) {
  absl::StatusOr<std::string> text = ReadAll(source);
  if (!text.ok()) return text.status();
  std::vector<std::string> names;
  absl::Status parsed = ParseNamesFile(input->path, input->kind, *text, &names);
  if (!parsed.ok()) return parsed;
  absl::flat_hash_set<std::string_view, StringHash, StringEq> own(names.begin(), names.end());
  input->names = own.size();
  for (const std::string& name : names) distinct->Add(name, Platform::kUnknown);
  return absl::OkStatus();
}

// KindFromName() is what `path`'s name says it holds (a trailing ".gz" or ".zst" set aside), if
// anything.
std::optional<NamesInputKind> KindFromName(std::string_view path) {
  if (EndsWith(path, ".gz")) path.remove_suffix(3);
  if (EndsWith(path, ".zst")) path.remove_suffix(4);
  if (EndsWith(path, ".json")) return NamesInputKind::kTrace;
  if (EndsWith(path, ".txt")) return NamesInputKind::kLines;
  if (EndsWith(path, ".jsonl") || EndsWith(path, ".ndjson")) return NamesInputKind::kJsonLines;
  return std::nullopt;
}

// InspectInput() opens `path` to learn its size and its kind: from its name, else from its first
// bytes.
absl::StatusOr<BenchmarkInput> InspectInput(const std::string& path) {
  absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(path);
  if (!source.ok()) return source.status();
  BenchmarkInput input;
  input.path = path;
  input.bytes = (*source)->file_bytes();
  // A vendor's profile (docs/formats.md) is a trace whatever its name: nsys, rocpd, rocprofv3.
  if (absl::StatusOr<TraceFormat> format = DetectTraceFormat(path);
      format.ok() && *format != TraceFormat::kKineto) {
    input.kind = NamesInputKind::kTrace;
    return input;
  }
  Block head;
  if (!KindFromName(path)) {
    absl::StatusOr<bool> more = (*source)->Next(&head);
    if (!more.ok()) return more.status();
  }
  input.kind = DetectNamesInputKind(path, std::string_view(head.data, head.size));
  return input;
}

}  // namespace

std::string_view NamesInputKindName(NamesInputKind kind) {
  switch (kind) {
    case NamesInputKind::kTrace:
      return "trace";
    case NamesInputKind::kLines:
      return "lines";
    case NamesInputKind::kJsonLines:
      return "jsonl";
  }
  return "trace";
}

NamesInputKind DetectNamesInputKind(std::string_view path, std::string_view head) {
  if (std::optional<NamesInputKind> kind = KindFromName(path)) return *kind;
  const size_t start = head.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return NamesInputKind::kLines;
  head.remove_prefix(start);
  if (head[0] == '[') return NamesInputKind::kTrace;
  if (head[0] == '"') return NamesInputKind::kJsonLines;
  if (head[0] != '{') return NamesInputKind::kLines;
  const size_t end = head.find('\n');
  if (end == std::string_view::npos) return NamesInputKind::kTrace;  // a long first line
  simdjson::dom::parser parser;
  simdjson::dom::object first;
  if (parser.parse(simdjson::padded_string(head.substr(0, end))).get(first) != simdjson::SUCCESS) {
    return NamesInputKind::kTrace;
  }
  std::string_view name;
  const bool named = first["name"].get_string().get(name) == simdjson::SUCCESS;
  return named && first["traceEvents"].error() != simdjson::SUCCESS ? NamesInputKind::kJsonLines
                                                                    : NamesInputKind::kTrace;
}

absl::StatusOr<BenchmarkNames> ReadBenchmarkNames(const std::vector<std::string>& paths,
                                                  std::shared_ptr<const Classifier> classifier,
                                                  const PipelineOptions& options) {
  BenchmarkNames out;
  DistinctNames distinct(&out);
  std::vector<std::string> traces;
  for (const std::string& path : paths) {
    absl::StatusOr<BenchmarkInput> input = InspectInput(path);
    if (!input.ok()) return input.status();
    if (input->kind == NamesInputKind::kTrace) traces.push_back(path);
    out.inputs.push_back(std::move(*input));
  }
  // Traces stream together, sharing the threads; names files are read as they come, each
  // input's names then joining in the inputs' order.
  PipelineOptions reading = options;
  reading.keep_kernel_records = false;  // names are all it needs
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileTraces(traces, std::move(classifier), reading);
  if (!profiles.ok()) return profiles.status();
  size_t next_trace = 0;
  for (BenchmarkInput& input : out.inputs) {
    if (input.kind == NamesInputKind::kTrace) {
      const TraceProfile& p = (*profiles)[next_trace++];
      input.platform = p.platform;
      input.names = p.names.size();
      for (const std::string& name : p.names) distinct.Add(name, p.platform);
      continue;
    }
    absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(input.path);
    if (!source.ok()) return source.status();
    absl::Status read = ReadNamesFile(**source, &input, &distinct);
    if (!read.ok()) return read;
  }
  if (out.names.empty()) {
    return absl::InvalidArgumentError(
        StrCat("no kernel name in ", paths.size() == 1 ? paths[0] : "the inputs"));
  }
  return out;
}

}  // namespace tracefuse
