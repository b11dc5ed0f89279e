// The classification benchmark's outputs: JSON (a stable schema) and text.
#include <iterator>

#include "tracefuse/base/strings.h"
#include "tracefuse/benchmark/classification.h"

namespace tracefuse {
namespace {

constexpr char kSchema[] = "tracefuse.bench.classify/1";

Json SpreadJson(const Spread& s) {
  return Json{{"median", s.median}, {"min", s.min}, {"max", s.max}};
}

Json InputJson(const BenchmarkInput& input) {
  return Json{{"path", input.path},
              {"kind", std::string(NamesInputKindName(input.kind))},
              {"platform", std::string(PlatformName(input.platform))},
              {"names", input.names},
              {"bytes", input.bytes}};
}

Json MeasurementJson(const ClassifyMeasurement& m) {
  return Json{{"rule_set", m.rule_set},
              {"compile_seconds", m.compile_seconds},
              {"database_bytes", m.database_bytes},
              {"threads", m.threads},
              {"method", std::string(ClassifyMethodName(m.method))},
              {"names_per_second", SpreadJson(m.names_per_second)},
              {"mb_per_second", SpreadJson(m.mb_per_second)}};
}

// Figure() prints `v` / `unit` with three significant digits (two decimals at most).
std::string Figure(double v, double unit) {
  const double x = v / unit;
  if (x >= 100) return fmt::format("{:.0f}", x);
  if (x >= 10) return fmt::format("{:.1f}", x);
  return fmt::format("{:.2f}", x);
}

// SpreadText() is "2.32 (2.30-2.41) M": the median and range in one unit, the median's.
std::string SpreadText(const Spread& s, bool names) {
  double unit = 1;
  std::string suffix;
  if (names && s.median >= 1e6) {
    unit = 1e6;
    suffix = " M";
  } else if (names && s.median >= 1e3) {
    unit = 1e3;
    suffix = " k";
  }
  return StrCat(Figure(s.median, unit), " (", Figure(s.min, unit), "-", Figure(s.max, unit), ")",
                suffix);
}

// SubstringMedian() is the substring baseline's median names per second for `m`'s rule set and
// thread count, 0 when it was not measured.
double SubstringMedian(const ClassificationBenchmark& b, const ClassifyMeasurement& m) {
  for (const ClassifyMeasurement& o : b.results) {
    if (o.rule_set == m.rule_set && o.threads == m.threads &&
        o.method == ClassifyMethod::kSubstring) {
      return o.names_per_second.median;
    }
  }
  return 0;
}

void AppendHeader(const ClassificationBenchmark& b, std::string* out) {
  auto to = std::back_inserter(*out);
  fmt::format_to(to, "tracefuse {} bench classify, {}, on {} ({}, {} logical cores)\n",
                 b.tracefuse_version, b.date, b.machine.hostname, b.machine.cpu_model,
                 b.machine.logical_cores);
  fmt::format_to(to, "{} input{}: {} distinct name{}, {} bytes of names\n", b.names.inputs.size(),
                 b.names.inputs.size() == 1 ? "" : "s", Thousands(b.names.names.size()),
                 b.names.names.size() == 1 ? "" : "s", Thousands(b.names.name_bytes));
  for (const BenchmarkInput& input : b.names.inputs) {
    fmt::format_to(to, "  {:<5}  {:<7}  {:>7} names  {:>13} bytes  {}\n",
                   NamesInputKindName(input.kind), PlatformName(input.platform),
                   Thousands(input.names), Thousands(input.bytes), input.path);
  }
  fmt::format_to(to, "Figures: median (min-max) of {} repetitions of at least {} s each.\n",
                 b.repetitions, b.min_seconds);
}

}  // namespace

Json ClassificationBenchmarkJson(const ClassificationBenchmark& b) {
  Json j;
  j["schema"] = kSchema;
  j["tracefuse_version"] = b.tracefuse_version;
  j["date"] = b.date;
  j["machine"] = Json{{"hostname", b.machine.hostname},
                      {"cpu_model", b.machine.cpu_model},
                      {"logical_cores", b.machine.logical_cores}};
  Json inputs = Json::array();
  for (const BenchmarkInput& input : b.names.inputs) inputs.push_back(InputJson(input));
  j["inputs"] = inputs;
  j["names"] = b.names.names.size();
  j["name_bytes"] = b.names.name_bytes;
  j["repetitions"] = b.repetitions;
  j["min_seconds"] = b.min_seconds;
  Json results = Json::array();
  for (const ClassifyMeasurement& m : b.results) results.push_back(MeasurementJson(m));
  j["results"] = results;
  return j;
}

std::string ClassificationBenchmarkText(const ClassificationBenchmark& b) {
  std::string out;
  AppendHeader(b, &out);
  auto to = std::back_inserter(out);
  const std::string* rule_set = nullptr;
  for (const ClassifyMeasurement& m : b.results) {
    if (rule_set == nullptr || *rule_set != m.rule_set) {
      rule_set = &m.rule_set;
      fmt::format_to(to,
                     "\nrule set {}: Hyperscan database of {} bytes, compiled in {:.3f} s\n"
                     "{:>7}  {:<9}  {:>26}  {:>22}  {:>12}\n",
                     m.rule_set, Thousands(m.database_bytes), m.compile_seconds, "threads",
                     "method", "names/s", "MB/s", "vs substring");
    }
    const double substring = SubstringMedian(b, m);
    const std::string ratio =
        m.method == ClassifyMethod::kSubstring || substring <= 0
            ? ""
            : fmt::format("{}x", Figure(m.names_per_second.median / substring, 1));
    std::string row = fmt::format(
        "{:>7}  {:<9}  {:>26}  {:>22}  {:>12}", m.threads, ClassifyMethodName(m.method),
        SpreadText(m.names_per_second, true), SpreadText(m.mb_per_second, false), ratio);
    row.erase(row.find_last_not_of(' ') + 1);  // the baseline's row has no ratio
    out += row + "\n";
  }
  return out;
}

}  // namespace tracefuse
