// Internal to the report stage: the small formatting helpers its outputs share, so that a
// number reads the same in every format.
#ifndef TRACEFUSE_SRC_REPORT_COMMON_FORMATTING_H_
#define TRACEFUSE_SRC_REPORT_COMMON_FORMATTING_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "report/common/py_json_writer.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// Millis() converts nanoseconds to milliseconds, the unit of the people-facing reports.
double Millis(int64_t ns);

// MillisText() is nanoseconds as the reports print milliseconds: "12.345".
std::string MillisText(int64_t ns);

// Shorten() cuts `s` to `n` characters (at a UTF-8 boundary) and marks the cut with "...".
std::string Shorten(std::string_view s, size_t n);

// Micros() converts nanoseconds to microseconds directly (`stats`).
double Micros(int64_t ns);

// MicrosText() is nanoseconds as the op reports print microseconds: "12.3"; SignedMicrosText()
// with its sign: "+12.3", "-0.5".
std::string MicrosText(int64_t ns);
std::string SignedMicrosText(int64_t ns);

// Percent() is `part` as a percentage of `whole`, 0 when `whole` is not positive.
double Percent(int64_t part, int64_t whole);

// ShortScope() is a module path's last two modules, "…/" before them when there are more: paths
// of nested models run to a hundred characters and more.
std::string ShortScope(const std::string& scope);

// DistinctShortScopes() shortens the module paths of one list or table as ShortScope() does,
// but as many more modules as it takes for two different paths to read differently
// ("…/Owlv2TextTransformer/…" against "…/Owlv2VisionTransformer/…": the last modules kept, and
// the first where they part): full path -> what to show.
std::map<std::string, std::string> DistinctShortScopes(const std::vector<std::string>& scopes);

// DistinctOpLabels() names each (op, scope) of a chart in a few words: the op alone where no
// other entry has its name, else the op and the first module where its scope parts from the
// others of that name, "aten::linear (Owlv2TextTransformer)" against "aten::linear
// (Owlv2VisionTransformer)"; "(no module)" for an empty scope.
std::vector<std::string> DistinctOpLabels(
    const std::vector<std::pair<std::string, std::string>>& op_scopes);

// MillisAsMicros() is Millis(ns) * 1000: `breakdown` and the fusion JSON report microseconds
// computed so, which can differ from Micros() in the last bit, and their outputs are pinned.
double MillisAsMicros(int64_t ns);

// KernelTimeNs() is the summed duration of every kernel of `profile`.
int64_t KernelTimeNs(const TraceProfile& profile);

// GpuText() is the trace's GPU name, or "(GPU not named)" when the trace names none.
std::string GpuText(const TraceProfile& profile);

// HumanBytes() is a byte count in binary units with one decimal: "1.5 GiB", "12 B".
std::string HumanBytes(uint64_t bytes);

// RatioText() is a ratio as "1.25x", or "inf" for the reference's float('inf').
std::string RatioText(double ratio);

// FlopRateText() and ByteRateText() are rates given in TFLOP/s and TB/s as people read them:
// "12.3 TFLOP/s", "0.04 TFLOP/s", "1.23 TB/s"; below 0.01 in GFLOP/s or GB/s, to three
// significant digits ("4.56 GFLOP/s", "0.0123 GB/s"), never "0.00".
std::string FlopRateText(double tflops_per_s);
std::string ByteRateText(double tb_per_s);
// FlopRateCell() is a rate in a column headed "TFLOP/s": "12.3", "0.04"; below 0.01 with its
// unit, "4.56 GFLOP/s".
std::string FlopRateCell(double tflops_per_s);

// CsvNumber() is a number in full precision (shortest round trip), "inf" for an infinite ratio.
std::string CsvNumber(double v);

// Page is a text or markdown report being laid out: the two formats share every line and differ
// in markup only. The pages of each command's report derive from it.
class Page {
 protected:
  explicit Page(bool markdown) : markdown_(markdown) {}

  void Line(const std::string& line) {
    out_ += line;
    out_ += '\n';
  }
  // A section title after a blank line: "## title" in markdown, else the title underlined.
  void Heading(const std::string& title) {
    Line("");
    Line(markdown_ ? "## " + title : title);
    if (!markdown_) Line(std::string(title.size(), '-'));
  }
  // How a list item starts: a bullet in markdown, `indent` in text.
  std::string Bullet(const char* indent) const { return markdown_ ? "- " : indent; }

  const bool markdown_;
  std::string out_;
};

// ForEachTruncationField() calls field(key, value) for each field of a salvaged trace's
// "truncated" object in the JSON reports (see TraceProfile::truncated).
template <typename Field>
void ForEachTruncationField(const TruncatedInput& t, Field&& field) {
  field("cut", Describe(t));
  field("input_bytes", t.input_bytes);
  field("kept_bytes", t.kept_bytes);
  field("dropped_bytes", t.dropped_bytes());
  field("dropped_events", t.dropped_events());
}

// WriteTruncation() writes the "truncated" field of a trace's JSON object: null for a complete
// trace.
void WriteTruncation(const TraceProfile& profile, PyJsonWriter* w);

// CsvField() quotes a field as RFC 4180 wants: when it holds a separator, a quote or a line
// break, with quotes doubled. Kernel names hold commas.
std::string CsvField(const std::string& field);

// AchievedText() is what an ops row's side's work reached on `peak`: "41.2 TFLOP/s bf16, 4.2% of
// peak (compute)", "1.90 TB/s bf16, 36.0% of peak (memory)"; "" without FLOPs or bytes.
std::string AchievedText(const OpRow& row, Side side, const std::optional<GpuPeak>& peak);

// PeakSentence() says what a trace's ops are measured against: "peaks of MI300X (TFLOP/s): fp64
// 81.7, ...; HBM 5.3 TB/s", or why there is no percent of peak; "" when its ops have no FLOPs or
// bytes.
std::string PeakSentence(const OpTraceSummary& trace);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_COMMON_FORMATTING_H_
