#include "tracefuse/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "fmt/ranges.h"
#include "tracefuse/strings.h"

namespace tracefuse {

std::string DumpJson(const Json& json, int indent) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

namespace {

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? StrCat(b, " B") : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

Json StatsJson(const TraceProfile& p, double elapsed) {
  Json j;
  j["trace"] = p.path;
  j["platform"] = std::string(PlatformName(p.platform));
  j["platform_evidence"] = p.platform_evidence;
  j["gpu"] = p.gpu;
  j["bytes"] = p.input_bytes;
  j["file_bytes"] = p.file_bytes;
  j["compressed"] = p.compressed;
  j["events"] = p.events;
  Json cats = Json::object();
  for (const auto& [cat, count] : p.event_categories) cats[cat.empty() ? "(none)" : cat] = count;
  j["events_by_category"] = cats;
  int64_t kernel_ns = 0;
  for (int64_t t : p.name_time_ns) kernel_ns += t;
  j["kernels"] = p.kernel_count;
  j["kernel_time_us"] = Micros(kernel_ns);
  j["distinct_kernel_names"] = p.names.size();
  j["correlation_groups"] = p.group_size.size();
  j["correlation_groups_50_plus"] = p.GroupsAtLeast(50);
  j["kernels_without_correlation"] = p.kernels_without_correlation;
  j["kernels_with_bad_times"] = p.kernels_with_bad_times;
  j["rule_set"] = p.classifier->rule_set().name();
  Json per = Json::array();
  std::vector<CategoryTotals> totals = p.PerCategory();
  for (size_t c = 0; c < totals.size(); ++c) {
    if (totals[c].kernels == 0) continue;
    per.push_back(Json{{"category", p.category_name(static_cast<CategoryId>(c))},
                       {"kernels", totals[c].kernels},
                       {"time_us", Micros(totals[c].time_ns)}});
  }
  j["categories"] = per;
  j["elapsed_seconds"] = elapsed;
  j["gb_per_second"] = elapsed > 0 ? static_cast<double>(p.input_bytes) / 1e9 / elapsed : 0.0;
  return j;
}

std::string StatsText(const TraceProfile& p, double elapsed) {
  Json j = StatsJson(p, elapsed);
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  line("trace", p.path);
  line("platform", StrCat(PlatformName(p.platform), " (", p.platform_evidence, ")"));
  line("gpu", p.gpu.empty() ? "(not named)" : p.gpu);
  line("bytes", StrCat(Thousands(p.input_bytes), " (", HumanBytes(p.input_bytes),
                       p.compressed ? StrCat(", ", HumanBytes(p.file_bytes), " gzip") : "", ")"));
  line("events", Thousands(p.events));
  for (const auto& [cat, count] : p.event_categories) {
    line(StrCat("  ", cat.empty() ? "(none)" : cat), Thousands(count));
  }
  line("kernels", Thousands(p.kernel_count));
  line("kernel time", fmt::format("{:.3f} ms", j["kernel_time_us"].get<double>() / 1000));
  line("distinct kernel names", Thousands(p.names.size()));
  line("correlation groups", StrCat(Thousands(p.group_size.size()), " (",
                                    Thousands(p.GroupsAtLeast(50)), " with >= 50 kernels)"));
  line("kernels w/o correlation", Thousands(p.kernels_without_correlation));
  if (p.kernels_with_bad_times > 0) {
    line("kernels with bad ts/dur", Thousands(p.kernels_with_bad_times));
  }
  line("elapsed", fmt::format("{:.3f} s ({:.2f} GB/s)", elapsed, j["gb_per_second"].get<double>()));
  return out;
}

absl::StatusOr<OutputFile> OutputFile::Open(const std::string& path) {
  OutputFile f;
  f.path_ = path;
  if (path == "-") {
    f.fd_ = STDOUT_FILENO;
    return f;
  }
  f.tmp_ = StrCat(path, ".tmp.", getpid());
  f.fd_ = open(f.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f.fd_ < 0) return absl::UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  return f;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(o.fd_), failed_(o.failed_) {
  o.fd_ = -1;
  o.tmp_.clear();
}

OutputFile::~OutputFile() {
  if (!tmp_.empty()) {  // not committed: leave nothing behind
    if (fd_ >= 0) close(fd_);
    unlink(tmp_.c_str());
  }
}

absl::Status OutputFile::Append(std::string_view data) {
  while (!data.empty() && !failed_) {
    ssize_t n = write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      return absl::UnavailableError(StrCat(path_, ": ", std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return failed_ ? absl::UnavailableError(StrCat(path_, ": write failed")) : absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (tmp_.empty()) return absl::OkStatus();  // standard output
  int err = 0;
  if (fsync(fd_) != 0 || close(fd_) != 0) err = errno;
  fd_ = -1;
  if (err == 0 && rename(tmp_.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) return absl::UnavailableError(StrCat(path_, ": ", std::strerror(err)));
  tmp_.clear();
  return absl::OkStatus();
}

absl::Status WriteOutput(const std::string& path, std::string_view content) {
  absl::StatusOr<OutputFile> out = OutputFile::Open(path);
  if (!out.ok()) return out.status();
  absl::Status st = out->Append(content);
  if (!st.ok()) return st;
  return out->Commit();
}

}  // namespace tracefuse

namespace tracefuse {
namespace {

double Millis(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// RFC 4180: quoted when it holds a separator, a quote or a line break; quotes doubled.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"') q += '"';
    q += ch;
  }
  return q + "\"";
}

std::string RatioText(double r) {
  if (std::isinf(r)) return "inf";
  return fmt::format("{:.2f}x", r);
}

const char* MappingKindName(FusionMapping::Kind k) {
  switch (k) {
    case FusionMapping::Kind::kSequence:
      return "sequence";
    case FusionMapping::Kind::kImbalance:
      return "count imbalance";
    case FusionMapping::Kind::kPartial:
      return "partial";
    case FusionMapping::Kind::kChain:
      return "chain";
  }
  return "";
}

int64_t KernelTimeNs(const TraceProfile& p) {
  int64_t t = 0;
  for (int64_t x : p.name_time_ns) t += x;
  return t;
}

}  // namespace

namespace {

// Writes JSON as Python's json.dumps(obj, indent=2) does: ", " / ": " separators with one
// value per line, empty containers as [] and {}, ASCII-only strings (\uXXXX escapes), floats
// in repr form (shortest round trip, "1.0" for integral values) and infinities as null (the
// reference sanitises them so). Streaming: a report with 100,000 mappings is written without
// building a document tree.
class PyJsonWriter {
 public:
  PyJsonWriter(std::string* out, OutputFile* sink) : out_(out), sink_(sink) {}

  // Hands what is buffered to the sink once it is large.
  absl::Status MaybeFlush() {
    if (out_->size() < (1u << 20)) return absl::OkStatus();
    absl::Status st = sink_->Append(*out_);
    out_->clear();
    return st;
  }

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view k) {
    NextItem();
    String(k);
    *out_ += ": ";
    after_key_ = true;
  }
  void Value(std::string_view s) {
    NextItem();
    String(s);
  }
  void Value(const char* s) { Value(std::string_view(s)); }
  void Value(const std::string& s) { Value(std::string_view(s)); }
  void Value(double d) {
    NextItem();
    if (!std::isfinite(d)) {
      *out_ += "null";
      return;
    }
    std::string r = fmt::format("{}", d);
    if (r.find_first_of(".e") == std::string::npos) r += ".0";
    *out_ += r;
  }
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  void Value(Int v) {
    NextItem();
    *out_ += std::to_string(v);
  }
  template <typename V>
  void Field(std::string_view key, const V& value) {
    Key(key);
    Value(value);
  }

 private:
  void Open(char c) {
    NextItem();
    *out_ += c;
    has_items_.push_back(false);
  }
  void Close(char c) {
    bool had = has_items_.back();
    has_items_.pop_back();
    if (had) Newline();
    *out_ += c;
  }
  void NextItem() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (has_items_.empty()) return;
    if (has_items_.back()) *out_ += ',';
    has_items_.back() = true;
    Newline();
  }
  void Newline() {
    *out_ += '\n';
    out_->append(2 * has_items_.size(), ' ');
  }
  void String(std::string_view s) {
    *out_ += '"';
    for (size_t i = 0; i < s.size();) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\') {
        *out_ += '\\';
        *out_ += static_cast<char>(c);
        ++i;
      } else if (c == '\n') {
        *out_ += "\\n", ++i;
      } else if (c == '\r') {
        *out_ += "\\r", ++i;
      } else if (c == '\t') {
        *out_ += "\\t", ++i;
      } else if (c == '\b') {
        *out_ += "\\b", ++i;
      } else if (c == '\f') {
        *out_ += "\\f", ++i;
      } else if (c < 0x20) {
        *out_ += fmt::format("\\u{:04x}", c), ++i;
      } else if (c < 0x80) {
        *out_ += static_cast<char>(c), ++i;
      } else {
        uint32_t cp = DecodeUtf8(s, &i);
        if (cp >= 0x10000) {
          cp -= 0x10000;
          *out_ += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
          *out_ += fmt::format("\\u{:04x}", cp);
        }
      }
    }
    *out_ += '"';
  }
  // One code point from UTF-8; an invalid byte becomes U+FFFD.
  static uint32_t DecodeUtf8(std::string_view s, size_t* i) {
    unsigned char c = static_cast<unsigned char>(s[*i]);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
    if (extra < 0 || *i + extra >= s.size() + (extra > 0 ? 0 : 1)) {
      ++*i;
      return 0xFFFD;
    }
    uint32_t cp = c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[*i + k]);
      if ((cc & 0xC0) != 0x80) {
        ++*i;
        return 0xFFFD;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    *i += extra + 1;
    return cp;
  }

  std::string* out_;
  OutputFile* sink_;
  std::vector<bool> has_items_;
  bool after_key_ = false;
};

}  // namespace

absl::Status WriteFusionJson(const FusionReport& r, const CompareContext& c, OutputFile* sink) {
  std::string out;
  PyJsonWriter w(&out, sink);
  w.BeginObject();
  w.Key("metadata");
  w.BeginObject();
  w.Field("trace1_gpu", ReferenceGpuName(c.traces[0]->metadata));
  w.Field("trace2_gpu", ReferenceGpuName(c.traces[1]->metadata));
  w.Field("trace1_total_kernels", r.total_kernels[0]);
  w.Field("trace2_total_kernels", r.total_kernels[1]);
  w.Field("trace1_correlation_groups", r.large_groups[0]);
  w.Field("trace2_correlation_groups", r.large_groups[1]);
  w.Field("matched_groups", r.matched_groups);
  w.EndObject();

  w.Key("global_counts");
  w.BeginObject();
  for (const GlobalCount& g : r.global_counts) {
    w.Key(g.type);
    w.BeginObject();
    w.Field("trace1_count", g.trace1);
    w.Field("trace2_count", g.trace2);
    w.Field("ratio", g.ratio);
    w.EndObject();
  }
  w.EndObject();

  w.Key("fusion_opportunities");
  w.BeginArray();
  for (const FusionOpportunity& o : r.opportunities) {
    w.BeginObject();
    w.Field("kernel_type", o.kernel_type);
    w.Field("trace1_total", o.trace1_total);
    w.Field("trace2_total", o.trace2_total);
    if (o.avg_is_integer_zero) {
      w.Field("trace1_avg_per_group", 0);
      w.Field("trace2_avg_per_group", 0);
    } else {
      w.Field("trace1_avg_per_group", o.trace1_avg_per_group);
      w.Field("trace2_avg_per_group", o.trace2_avg_per_group);
    }
    w.Field("trace1_time_ms", o.trace1_time_ms);
    w.Field("trace2_time_ms", o.trace2_time_ms);
    w.Field("time_ratio", o.time_ratio);
    w.Field("ratio", o.ratio);
    w.Field("fused_by", ReferenceLabels()[o.fused_by]);
    w.Field("groups_affected", o.groups_affected);
    w.Field("total_groups", o.total_groups);
    w.EndObject();
  }
  w.EndArray();

  w.Key("fusion_mappings");
  w.BeginArray();
  for (const FusionMapping& m : r.mappings) {
    w.BeginObject();
    w.Field("fused_platform", ReferenceLabels()[m.fused_side]);
    w.Field("fused_kernel_type", r.categories[m.fused_type]);
    w.Field("fused_count", m.fused_count);
    w.Field("unfused_platform", ReferenceLabels()[Opposite(m.fused_side)]);
    w.Key("unfused_sequence");
    w.BeginArray();
    for (CategoryId t : m.UnfusedSequence()) w.Value(r.categories[t]);
    w.EndArray();
    w.Key("unfused_count_per_type");
    w.BeginObject();
    for (const auto& [type, n] : m.UnfusedCountPerType()) w.Field(r.categories[type], n);
    w.EndObject();
    w.Field("pattern_count", m.pattern_count);
    w.Field("pattern_confidence", m.pattern_confidence);
    w.Field("evidence", Evidence(m, r.categories, ReferenceLabels()));
    if (m.correlation_groups) {
      w.Field("correlation_group_trace1", m.correlation_groups->first);
      w.Field("correlation_group_trace2", m.correlation_groups->second);
    }
    w.EndObject();
    absl::Status st = w.MaybeFlush();
    if (!st.ok()) return st;
  }
  w.EndArray();

  // What the reference does not report.
  w.Key("tracefuse");
  w.BeginObject();
  w.Field("version", TRACEFUSE_VERSION);
  w.Field("rule_set", c.traces[0]->classifier->rule_set().name());
  w.Field("min_group_size", c.min_group_size);
  w.Key("traces");
  w.BeginArray();
  for (int s = 0; s < 2; ++s) {
    const TraceProfile& p = *c.traces[s];
    w.BeginObject();
    w.Field("label", c.labels[s]);
    w.Field("path", p.path);
    w.Field("platform", PlatformName(p.platform));
    w.Field("platform_evidence", p.platform_evidence);
    w.Field("gpu", p.gpu);
    w.Field("bytes", p.input_bytes);
    w.Field("file_bytes", p.file_bytes);
    w.Field("kernels", p.kernel_count);
    w.Field("kernel_time_us", Millis(KernelTimeNs(p)) * 1000);
    w.Key("kernel_time_us_by_category");
    w.BeginObject();
    std::vector<CategoryTotals> totals = p.PerCategory();
    for (size_t t = 0; t < totals.size(); ++t) {
      if (totals[t].kernels > 0)
        w.Field(p.category_name(CategoryId(t)), Millis(totals[t].time_ns) * 1000);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.Key("timings_seconds");
  w.BeginObject();
  w.Field("read_and_reduce", c.read_seconds);
  w.Field("analyze", c.analyze_seconds);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  out += '\n';
  return sink->Append(out);
}

std::string FusionText(const FusionReport& r, const CompareContext& c, bool markdown) {
  const PerSide<std::string>& L = c.labels;
  const TraceProfile& a = *c.traces[0];
  const TraceProfile& b = *c.traces[1];
  std::string out;
  auto add = [&](const std::string& s) {
    out += s;
    out += '\n';
  };
  auto heading = [&](const std::string& title) {
    add("");
    add(markdown ? "## " + title : title);
    if (!markdown) add(std::string(title.size(), '-'));
  };

  add(markdown ? fmt::format("# Fusion comparison: {} vs {}", L[0], L[1])
               : fmt::format("FUSION COMPARISON: {} vs {}", L[0], L[1]));
  if (markdown) {
    add("");
    add("| | trace | platform | GPU | kernels | kernel time | groups >= " +
        std::to_string(c.min_group_size) + " |");
    add("|---|---|---|---|---:|---:|---:|");
  }
  const size_t label_width = std::max(L[0].size(), L[1].size());
  for (int s = 0; s < 2; ++s) {
    const TraceProfile& p = *c.traces[s];
    std::string gpu = p.gpu.empty() ? "(GPU not named)" : p.gpu;
    if (markdown) {
      add(fmt::format("| {} | `{}` | {} | {} | {} | {:.3f} ms | {} |", L[s], p.path,
                      PlatformName(p.platform), gpu, Thousands(p.kernel_count),
                      Millis(KernelTimeNs(p)), r.large_groups[s]));
    } else {
      add(fmt::format("  {:<{}}  {} [{}], {} kernels, {:.3f} ms kernel time, {} groups >= {}  ({})",
                      L[s], label_width, gpu, PlatformName(p.platform), Thousands(p.kernel_count),
                      Millis(KernelTimeNs(p)), r.large_groups[s], c.min_group_size, p.path));
    }
  }
  add(fmt::format("{}Matched correlation groups: {}; rule set: {}", markdown ? "\n" : "  ",
                  r.matched_groups, a.classifier->rule_set().name()));

  // Per-type table, by total count.
  heading("Kernel types");
  std::vector<CategoryTotals> ta = a.PerCategory(), tb = b.PerCategory();
  std::vector<size_t> order;
  for (size_t t = 0; t < ta.size(); ++t)
    if (ta[t].kernels + tb[t].kernels > 0) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return ta[x].kernels + tb[x].kernels > ta[y].kernels + tb[y].kernels;
  });
  const std::string h[6] = {L[0] + " count", L[1] + " count", "count ratio",
                            L[0] + " ms",    L[1] + " ms",    "time ratio"};
  size_t w[6];
  for (int i = 0; i < 6; ++i) w[i] = std::max<size_t>(h[i].size(), 10);
  size_t type_width = 4;
  for (size_t t : order) type_width = std::max(type_width, a.category_name(CategoryId(t)).size());
  if (markdown) {
    add(fmt::format("| type | {} | {} | {} | {} | {} | {} |", h[0], h[1], h[2], h[3], h[4], h[5]));
    add("|---|---:|---:|---:|---:|---:|---:|");
  } else {
    add(fmt::format("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}", "type", type_width,
                    h[0], w[0], h[1], w[1], h[2], w[2], h[3], w[3], h[4], w[4], h[5], w[5]));
  }
  for (size_t t : order) {
    const std::string& name = a.category_name(CategoryId(t));
    double count_ratio = tb[t].kernels ? double(ta[t].kernels) / double(tb[t].kernels)
                                       : std::numeric_limits<double>::infinity();
    double time_ratio = tb[t].time_ns ? double(ta[t].time_ns) / double(tb[t].time_ns)
                                      : std::numeric_limits<double>::infinity();
    const std::string cells[6] = {Thousands(ta[t].kernels),
                                  Thousands(tb[t].kernels),
                                  RatioText(count_ratio),
                                  fmt::format("{:.3f}", Millis(ta[t].time_ns)),
                                  fmt::format("{:.3f}", Millis(tb[t].time_ns)),
                                  RatioText(time_ratio)};
    if (markdown) {
      add(fmt::format("| {} | {} | {} | {} | {} | {} | {} |", name, cells[0], cells[1], cells[2],
                      cells[3], cells[4], cells[5]));
    } else {
      add(fmt::format("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}", name, type_width,
                      cells[0], w[0], cells[1], w[1], cells[2], w[2], cells[3], w[3], cells[4],
                      w[4], cells[5], w[5]));
    }
  }

  const size_t kTop = 10;
  heading("Fusion opportunities (by impact)");
  if (r.opportunities.empty()) add("  No significant fusion differences detected.");
  for (size_t i = 0; i < r.opportunities.size() && i < kTop; ++i) {
    const FusionOpportunity& o = r.opportunities[i];
    std::string where =
        o.from_groups ? fmt::format("in {} of {} matched groups", o.groups_affected, o.total_groups)
                      : "over the whole traces";
    add(
        fmt::format("{}{}: fused by {} ({} fewer calls) - {} {} vs {} {} kernels {}; {:.3f} vs "
                    "{:.3f} ms",
                    markdown ? "- " : "  ", o.kernel_type, L[o.fused_by], RatioText(o.ratio), L[0],
                    Thousands(o.trace1_total), L[1], Thousands(o.trace2_total), where,
                    o.trace1_time_ms, o.trace2_time_ms));
  }
  if (r.opportunities.size() > kTop)
    add(fmt::format("  ... and {} more", r.opportunities.size() - kTop));

  heading("Fusion mappings");
  if (r.mappings.empty()) add("  None found.");
  for (auto kind : {FusionMapping::Kind::kSequence, FusionMapping::Kind::kImbalance,
                    FusionMapping::Kind::kPartial, FusionMapping::Kind::kChain}) {
    // Per-group mappings repeat once per matched group: fold equal evidence together.
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>>
        folded;  // evidence, (groups, calls)
    absl::flat_hash_map<std::string, size_t> fold_index;
    for (const FusionMapping& m : r.mappings) {
      if (m.kind != kind) continue;
      std::string ev = Evidence(m, r.categories, L);
      auto [it, inserted] = fold_index.try_emplace(ev, folded.size());
      if (inserted) folded.push_back({std::move(ev), {0, 0}});
      std::pair<int64_t, int64_t>& n = folded[it->second].second;
      n.first += m.correlation_groups ? 1 : 0;
      n.second += m.pattern_count;
    }
    if (folded.empty()) continue;
    std::stable_sort(folded.begin(), folded.end(), [](const auto& x, const auto& y) {
      return x.second.second > y.second.second;
    });
    add(fmt::format("{}{} ({}):", markdown ? "\n**" : "  ", MappingKindName(kind), folded.size()) +
        (markdown ? "**" : ""));
    for (size_t i = 0; i < folded.size() && i < 5; ++i) {
      const auto& [ev, n] = folded[i];
      std::string groups =
          n.first > 0 ? fmt::format(" [{} groups, {} calls]", n.first, n.second) : "";
      add(fmt::format("{}{}{}", markdown ? "- " : "    ", ev, groups));
    }
    if (folded.size() > 5)
      add(fmt::format("{}... and {} more", markdown ? "- " : "    ", folded.size() - 5));
  }
  return out;
}

std::string FusionCsv(const FusionReport& r, const CompareContext& c) {
  const auto& quote = CsvField;
  auto num = [](double v) { return std::isinf(v) ? std::string("inf") : fmt::format("{}", v); };
  const TraceProfile& a = *c.traces[0];
  const TraceProfile& b = *c.traces[1];
  std::vector<CategoryTotals> ta = a.PerCategory(), tb = b.PerCategory();
  std::string out =
      "kernel_type,trace1_count,trace2_count,trace1_time_ms,trace2_time_ms,count_ratio,time_ratio,"
      "opportunity,fused_by,opportunity_ratio,groups_affected,total_groups\n";
  for (size_t t = 0; t < ta.size(); ++t) {
    if (ta[t].kernels + tb[t].kernels == 0) continue;
    const std::string& name = a.category_name(CategoryId(t));
    auto o = std::find_if(r.opportunities.begin(), r.opportunities.end(),
                          [&](const FusionOpportunity& x) { return x.kernel_type == name; });
    double count_ratio = tb[t].kernels ? double(ta[t].kernels) / double(tb[t].kernels)
                                       : std::numeric_limits<double>::infinity();
    double time_ratio = tb[t].time_ns ? double(ta[t].time_ns) / double(tb[t].time_ns)
                                      : std::numeric_limits<double>::infinity();
    out += fmt::format("{},{},{},{},{},{},{},", quote(name), ta[t].kernels, tb[t].kernels,
                       num(Millis(ta[t].time_ns)), num(Millis(tb[t].time_ns)), num(count_ratio),
                       num(time_ratio));
    if (o != r.opportunities.end()) {
      out += fmt::format("yes,{},{},{},{}\n", quote(c.labels[o->fused_by]), num(o->ratio),
                         o->groups_affected, o->total_groups);
    } else {
      out += "no,,,,\n";
    }
  }
  return out;
}

namespace {

struct KernelShare {
  uint32_t name;
  uint64_t count;
  int64_t time_ns;
};

struct CategoryBreakdown {
  CategoryId category;
  uint64_t count = 0;
  int64_t time_ns = 0;
  std::vector<KernelShare> top;  // by time, descending
};

// Per category (by time, descending) with its `top` kernels by time; categories without kernels
// are left out.
std::vector<CategoryBreakdown> Breakdown(const TraceProfile& p, size_t top) {
  std::vector<CategoryBreakdown> cats(p.category_count());
  for (size_t c = 0; c < cats.size(); ++c) cats[c].category = CategoryId(c);
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    CategoryBreakdown& c = cats[p.category_of_name(n)];
    c.count += p.name_kernels[n];
    c.time_ns += p.name_time_ns[n];
    c.top.push_back({n, p.name_kernels[n], p.name_time_ns[n]});
  }
  std::vector<CategoryBreakdown> out;
  for (CategoryBreakdown& c : cats) {
    if (c.count == 0) continue;
    std::stable_sort(c.top.begin(), c.top.end(), [](const KernelShare& a, const KernelShare& b) {
      return a.time_ns > b.time_ns;
    });
    if (c.top.size() > top) c.top.resize(top);
    out.push_back(std::move(c));
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const CategoryBreakdown& a, const CategoryBreakdown& b) { return a.time_ns > b.time_ns; });
  return out;
}

CategoryId UnclassifiedCategory(const TraceProfile& p) {
  return *p.classifier->rule_set().category_index(p.classifier->rule_set().fallback().category);
}

double Share(int64_t part, int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

std::string Shorten(const std::string& s, size_t n) {
  std::string_view p = Utf8Prefix(s, n);
  return p.size() < s.size() ? std::string(p) + "..." : s;
}

}  // namespace

std::string BreakdownJson(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  std::string out;
  PyJsonWriter w(&out, nullptr);
  auto kernel = [&](const KernelShare& k) {
    w.BeginObject();
    w.Field("name", p.names[k.name]);
    w.Field("count", k.count);
    w.Field("time_us", Millis(k.time_ns) * 1000);
    w.EndObject();
  };
  w.BeginObject();
  w.Field("trace", p.path);
  w.Field("platform", PlatformName(p.platform));
  w.Field("gpu", p.gpu);
  w.Field("rule_set", p.classifier->rule_set().name());
  w.Field("kernels", p.kernel_count);
  w.Field("kernel_time_us", Millis(total) * 1000);
  w.Key("categories");
  w.BeginArray();
  std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  for (const CategoryBreakdown& c : cats) {
    w.BeginObject();
    w.Field("category", p.category_name(c.category));
    w.Field("count", c.count);
    w.Field("time_us", Millis(c.time_ns) * 1000);
    w.Field("time_share", Share(c.time_ns, total));
    w.Field("avg_us", Millis(c.time_ns) * 1000 / double(c.count));
    w.Key("top_kernels");
    w.BeginArray();
    for (const KernelShare& k : c.top) kernel(k);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("unclassified");
  w.BeginArray();
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats)
    if (c.category == other)
      for (const KernelShare& k : c.top) kernel(k);
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

std::string BreakdownText(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  std::string out =
      fmt::format("{}: {} [{}], {} kernels, {:.3f} ms kernel time, rule set {}\n\n", p.path,
                  p.gpu.empty() ? "(GPU not named)" : p.gpu, PlatformName(p.platform),
                  Thousands(p.kernel_count), Millis(total), p.classifier->rule_set().name());
  std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  size_t width = 8;
  for (const CategoryBreakdown& c : cats)
    width = std::max(width, p.category_name(c.category).size());
  fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12}  {:>7}  {:>10}\n", "category",
                 width, "kernels", "time ms", "share", "avg us");
  for (const CategoryBreakdown& c : cats) {
    fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12.3f}  {:>6.1f}%  {:>10.2f}\n",
                   p.category_name(c.category), width, Thousands(c.count), Millis(c.time_ns),
                   100 * Share(c.time_ns, total), Millis(c.time_ns) * 1000 / double(c.count));
  }
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats) {
    out += fmt::format("\n{}{}:\n", p.category_name(c.category),
                       c.category == other ? " (unclassified: candidates for a rule file)" : "");
    for (const KernelShare& k : c.top) {
      fmt::format_to(std::back_inserter(out), "  {:>12.3f} ms  {:>8}x  {}\n", Millis(k.time_ns),
                     Thousands(k.count), Shorten(p.names[k.name], 120));
    }
  }
  return out;
}

std::string BreakdownCsv(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  std::string out = "category,kernel,count,time_us,time_share\n";
  for (const CategoryBreakdown& c : Breakdown(p, top)) {
    const std::string& cat = p.category_name(c.category);
    out += fmt::format("{},,{},{},{}\n", CsvField(cat), c.count, Millis(c.time_ns) * 1000,
                       Share(c.time_ns, total));
    for (const KernelShare& k : c.top) {
      out += fmt::format("{},{},{},{},{}\n", CsvField(cat), CsvField(p.names[k.name]), k.count,
                         Millis(k.time_ns) * 1000, Share(k.time_ns, total));
    }
  }
  return out;
}

namespace {

std::string DescribePredicate(const Predicate& p) {
  auto lit = [&](const char* kind) {
    return fmt::format("{} \"{}\"{}", kind, p.text, p.caseless ? "" : " (case-sensitive)");
  };
  auto list = [&](const char* op) {
    std::string s = std::string(op) + "(";
    for (size_t i = 0; i < p.children.size(); ++i) {
      if (i > 0) s += ", ";
      s += DescribePredicate(p.children[i]);
    }
    return s + ")";
  };
  switch (p.kind) {
    case Predicate::Kind::kContains:
      return lit("contains");
    case Predicate::Kind::kPrefix:
      return lit("prefix");
    case Predicate::Kind::kRegex:
      return lit("regex");
    case Predicate::Kind::kPlatform:
      return fmt::format("platform {}", PlatformName(p.platform));
    case Predicate::Kind::kNot:
      return "not " + DescribePredicate(p.children[0]);
    case Predicate::Kind::kAll:
      return list("all");
    case Predicate::Kind::kAny:
      return list("any");
  }
  return "";
}

}  // namespace

std::string RulesText(const RuleSet& rules) {
  std::string out =
      fmt::format("rule set {}: {}\ncategories ({}): {}\n\n", rules.name(), rules.description(),
                  rules.categories().size(), fmt::join(rules.categories(), ", "));
  for (size_t i = 0; i < rules.rules().size(); ++i) {
    const Rule& r = rules.rules()[i];
    out += fmt::format("{:>3}. {}{} <- {}\n", i + 1, r.category,
                       r.pattern.empty() ? "" : fmt::format(" [{}]", r.pattern),
                       DescribePredicate(r.when));
  }
  out += fmt::format(
      "     otherwise {}{}\n", rules.fallback().category,
      rules.fallback().pattern.empty() ? "" : fmt::format(" [{}]", rules.fallback().pattern));
  return out;
}

}  // namespace tracefuse
