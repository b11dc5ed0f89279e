#include "report/common/formatting.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_split.h"
#include "tracefuse/analyze/op_work.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse {

double Millis(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string MillisText(int64_t ns) { return fmt::format("{:.3f}", Millis(ns)); }

std::string Shorten(std::string_view s, size_t n) {
  const std::string_view prefix = Utf8Prefix(s, n);
  return prefix.size() < s.size() ? StrCat(prefix, "...") : std::string(s);
}

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

double MillisAsMicros(int64_t ns) { return Millis(ns) * 1000; }

std::string MicrosText(int64_t ns) { return fmt::format("{:.1f}", Micros(ns)); }
std::string SignedMicrosText(int64_t ns) { return fmt::format("{:+.1f}", Micros(ns)); }

double Percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

namespace {

// LastModules() is `scope`'s last `n` modules after "…/", or the whole path when it has no more.
std::string LastModules(const std::string& scope, size_t n) {
  size_t cut = scope.size();
  for (size_t i = 0; i < n; ++i) {
    if (cut == 0) return scope;
    cut = scope.rfind('/', cut - 1);
    if (cut == std::string::npos || cut == 0) return scope;
  }
  return "…/" + scope.substr(cut + 1);
}

}  // namespace

std::string ShortScope(const std::string& scope) { return LastModules(scope, 2); }

std::map<std::string, std::string> DistinctShortScopes(const std::vector<std::string>& scopes) {
  std::map<std::string, size_t> modules;  // how many last modules each path shows
  for (const std::string& scope : scopes) modules.emplace(scope, 2);
  for (bool grew = true; grew;) {
    grew = false;
    std::map<std::string, std::vector<std::string>> by_text;
    for (const auto& [scope, n] : modules) by_text[LastModules(scope, n)].push_back(scope);
    for (const auto& [text, same] : by_text) {
      if (same.size() < 2) continue;
      for (const std::string& scope : same) {
        if (LastModules(scope, modules[scope]) == scope) continue;  // shown whole already
        ++modules[scope];
        grew = true;
      }
    }
  }
  std::map<std::string, std::string> shown;
  for (const auto& [scope, n] : modules) shown[scope] = LastModules(scope, n);
  return shown;
}

std::vector<std::string> DistinctOpLabels(
    const std::vector<std::pair<std::string, std::string>>& op_scopes) {
  std::vector<std::vector<std::string>> modules;
  std::map<std::string, std::vector<size_t>> entries_of;  // op -> its entries
  for (size_t i = 0; i < op_scopes.size(); ++i) {
    modules.push_back(absl::StrSplit(op_scopes[i].second, '/'));
    entries_of[op_scopes[i].first].push_back(i);
  }
  auto shared_prefix = [&](size_t i, size_t j) {
    size_t n = 0;
    while (n < modules[i].size() && n < modules[j].size() && modules[i][n] == modules[j][n]) ++n;
    return n;
  };
  std::vector<std::string> labels;
  for (size_t i = 0; i < op_scopes.size(); ++i) {
    const auto& [op, scope] = op_scopes[i];
    // The module after the longest path this entry shares with another of its op.
    size_t part = 0;
    bool shared = false;
    for (size_t j : entries_of[op]) {
      if (j == i) continue;
      shared = true;
      part = std::max(part, shared_prefix(i, j));
    }
    if (!shared) {
      labels.push_back(op);
    } else if (scope.empty()) {
      labels.push_back(StrCat(op, " (no module)"));
    } else {
      labels.push_back(StrCat(op, " (", modules[i][std::min(part, modules[i].size() - 1)], ")"));
    }
  }
  // Paths that differ only in their depth ("A/B" and "A/B/B") can still read alike: those take
  // their distinct short scopes instead.
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t i = 0; i < labels.size(); ++i) by_label[labels[i]].push_back(i);
  std::vector<std::string> scopes;
  for (const auto& [op, scope] : op_scopes) scopes.push_back(scope);
  const std::map<std::string, std::string> short_scopes = DistinctShortScopes(scopes);
  for (const auto& [label, same] : by_label) {
    if (same.size() < 2) continue;
    for (size_t i : same) {
      labels[i] = StrCat(op_scopes[i].first, " (", short_scopes.at(op_scopes[i].second), ")");
    }
  }
  return labels;
}

int64_t KernelTimeNs(const TraceProfile& profile) {
  int64_t total = 0;
  for (int64_t ns : profile.name_time_ns) total += ns;
  return total;
}

std::string GpuText(const TraceProfile& profile) {
  return profile.gpu.empty() ? "(GPU not named)" : profile.gpu;
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? StrCat(bytes, " B") : fmt::format("{:.1f} {}", value, units[unit]);
}

std::string RatioText(double ratio) {
  if (std::isinf(ratio)) return "inf";
  return fmt::format("{:.2f}x", ratio);
}

std::string CsvNumber(double v) { return std::isinf(v) ? "inf" : fmt::format("{}", v); }

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char ch : field) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

void WriteTruncation(const TraceProfile& profile, PyJsonWriter* w) {
  w->Key("truncated");
  if (!profile.truncated) {
    w->Null();
    return;
  }
  w->BeginObject();
  ForEachTruncationField(*profile.truncated,
                         [w](const char* key, const auto& value) { w->Field(key, value); });
  w->EndObject();
}

std::string PeakSentence(const OpTraceSummary& trace) {
  if (!trace.work.flops && !trace.work.bytes) return "";
  if (trace.gpu.empty()) {
    return "the trace names no GPU (deviceProperties): rates without percent of peak";
  }
  if (!trace.peak) {
    return fmt::format("GPU \"{}\" is not in the peak table: rates without percent of peak",
                       trace.gpu);
  }
  std::string out = fmt::format("peaks of {} (TFLOP/s):", trace.peak->name);
  const char* separator = " ";
  for (size_t d = 1; d < kDTypes; ++d) {
    const auto dtype = static_cast<DType>(d);
    if (const std::optional<double> tflops = trace.peak->Tflops(dtype)) {
      out += fmt::format("{}{} {:g}{}", separator, DTypeName(dtype), *tflops,
                         dtype == DType::kInt8 ? " (TOPS)" : "");
      separator = ", ";
    }
  }
  if (trace.peak->hbm_tb_per_s) out += fmt::format("; HBM {:g} TB/s", *trace.peak->hbm_tb_per_s);
  return out;
}

namespace {

// RateText() is `rate` in `unit` (T...), one decimal from 0.1, two from 0.01, else in G... to
// three significant digits; `with_unit` false leaves the T unit out.
std::string RateText(double rate, std::string_view unit, bool with_unit) {
  const std::string_view suffix = with_unit ? unit : std::string_view();
  const char* space = with_unit ? " " : "";
  if (rate >= 0.1 || rate <= 0) return fmt::format("{:.1f}{}{}", rate, space, suffix);
  if (rate >= 0.01) return fmt::format("{:.2f}{}{}", rate, space, suffix);
  return fmt::format("{:.3g} G{}", rate * 1000, unit.substr(1));
}

}  // namespace

std::string FlopRateText(double tflops_per_s) { return RateText(tflops_per_s, "TFLOP/s", true); }
std::string ByteRateText(double tb_per_s) {
  return tb_per_s >= 0.01 ? fmt::format("{:.2f} TB/s", tb_per_s) : RateText(tb_per_s, "TB/s", true);
}
std::string FlopRateCell(double tflops_per_s) { return RateText(tflops_per_s, "TFLOP/s", false); }

std::string AchievedText(const OpRow& row, Side side, const std::optional<GpuPeak>& peak) {
  const WorkTotals& work = row.work[side];
  const Achieved a = AchievedOf(work, row.sides[side].time_ns, peak ? &*peak : nullptr);
  std::string out;
  if (a.tflops_per_s) {
    out = FlopRateText(*a.tflops_per_s);
  } else if (a.tb_per_s) {
    out = ByteRateText(*a.tb_per_s);
  } else {
    return out;
  }
  if (const DType dtype = work.dtype(); dtype != DType::kUnknown) {
    out += fmt::format(" {}", DTypeName(dtype));
  }
  if (a.percent_of_peak) {
    out += fmt::format(", {:.1f}% of {}", *a.percent_of_peak, RoofText(*a.roof, work.dtype()));
  }
  if (a.bound) out += fmt::format(" ({})", BoundName(*a.bound));
  return out;
}

}  // namespace tracefuse
