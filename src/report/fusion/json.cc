// `tracefuse compare --format json`: the reference's schema, streamed, plus "tracefuse".
#include <string>
#include <string_view>
#include <vector>

#include "report/breakdown/view.h"
#include "report/common/formatting.h"
#include "report/common/py_json_writer.h"
#include "report/fusion/view.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/gpu_timeline.h"

namespace tracefuse {
namespace {

// The reference's key of a per-trace value: "trace1_gpu", "trace2_gpu".
std::string TraceKey(Side side, std::string_view key) {
  return std::string(side == Side::kTrace1 ? "trace1_" : "trace2_").append(key);
}

template <typename T>
void PerTraceFields(std::string_view key, const PerSide<T>& values, PyJsonWriter* w) {
  for (Side s : kSides) w->Field(TraceKey(s, key), values[s]);
}

void MetadataJson(const FusionReport& r, const CompareContext& c, PyJsonWriter* w) {
  PerSide<std::string> gpus;
  for (Side s : kSides) gpus[s] = ReferenceGpuName(c.traces[s]->metadata);
  w->Key("metadata");
  w->BeginObject();
  PerTraceFields("gpu", gpus, w);
  PerTraceFields("total_kernels", r.total_kernels, w);
  PerTraceFields("correlation_groups", r.large_groups, w);
  w->Field("matched_groups", r.matched_groups);
  w->EndObject();
}

void GlobalCountsJson(const FusionReport& r, PyJsonWriter* w) {
  w->Key("global_counts");
  w->BeginObject();
  for (const GlobalCount& g : r.global_counts) {
    w->Key(g.type);
    w->BeginObject();
    w->Field("trace1_count", g.trace1);
    w->Field("trace2_count", g.trace2);
    w->Field("ratio", g.ratio);
    w->EndObject();
  }
  w->EndObject();
}

void OpportunityJson(const FusionOpportunity& o, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("kernel_type", o.kernel_type);
  w->Field("trace1_total", o.trace1_total);
  w->Field("trace2_total", o.trace2_total);
  if (o.avg_is_integer_zero) {
    w->Field("trace1_avg_per_group", 0);
    w->Field("trace2_avg_per_group", 0);
  } else {
    w->Field("trace1_avg_per_group", o.trace1_avg_per_group);
    w->Field("trace2_avg_per_group", o.trace2_avg_per_group);
  }
  w->Field("trace1_time_ms", o.trace1_time_ms);
  w->Field("trace2_time_ms", o.trace2_time_ms);
  w->Field("time_ratio", o.time_ratio);
  w->Field("ratio", o.ratio);
  w->Field("fused_by", ReferenceLabels()[o.fused_by]);
  w->Field("groups_affected", o.groups_affected);
  w->Field("total_groups", o.total_groups);
  w->EndObject();
}

void MappingJson(const FusionMapping& m, const std::vector<std::string>& categories,
                 PyJsonWriter* w) {
  w->BeginObject();
  w->Field("fused_platform", ReferenceLabels()[m.fused_side]);
  w->Field("fused_kernel_type", categories[m.fused_type]);
  w->Field("fused_count", m.fused_count);
  w->Field("unfused_platform", ReferenceLabels()[Opposite(m.fused_side)]);
  w->Key("unfused_sequence");
  w->BeginArray();
  for (CategoryId t : m.UnfusedSequence()) w->Value(categories[t]);
  w->EndArray();
  w->Key("unfused_count_per_type");
  w->BeginObject();
  for (const auto& [type, n] : m.UnfusedCountPerType()) w->Field(categories[type], n);
  w->EndObject();
  w->Field("pattern_count", m.pattern_count);
  w->Field("pattern_confidence", m.pattern_confidence);
  w->Field("evidence", Evidence(m, categories, ReferenceLabels()));
  if (m.correlation_groups) {
    w->Field("correlation_group_trace1", m.correlation_groups->first);
    w->Field("correlation_group_trace2", m.correlation_groups->second);
  }
  w->EndObject();
}

// StageCpuJson() writes a trace's per-stage CPU seconds, as `stats --format json` does.
void StageCpuJson(const StageCpuSeconds& cpu, PyJsonWriter* w) {
  w->Key("cpu_seconds");
  w->BeginObject();
  cpu.ForEach([&](const char* stage, double seconds, bool) { w->Field(stage, seconds); });
  w->Key("serial_stages");
  w->BeginArray();
  cpu.ForEach([&](const char* stage, double, bool serial) {
    if (serial) w->Value(stage);
  });
  w->EndArray();
  w->Field("serial_share", cpu.serial_share());
  w->EndObject();
}

// One side's trace as "tracefuse"."traces" describes it; `types` in the rule set's order.
void TraceJson(Side s, const FusionSide& side, const std::vector<FusionTypeRow>& types,
               PyJsonWriter* w) {
  const TraceProfile& p = *side.profile;
  w->BeginObject();
  w->Field("label", side.label);
  w->Field("path", p.path);
  w->Field("format", TraceFormatName(p.metadata.format));
  w->Field("platform", PlatformName(p.platform));
  w->Field("platform_evidence", p.platform_evidence);
  w->Field("gpu", p.gpu);
  w->Field("bytes", p.input_bytes);
  w->Field("file_bytes", p.file_bytes);
  w->Field("kernels", p.kernel_count);
  // Kernels read with a field missing or of the wrong type: counted, never dropped silently.
  w->Field("kernels_without_correlation", p.kernels_without_correlation);
  w->Field("kernels_with_bad_times", p.kernels_with_bad_times);
  w->Field("kernels_without_name", p.kernels_without_name);
  WriteTruncation(p, w);
  w->Field("kernel_time_us", MillisAsMicros(side.kernel_time_ns));
  const CategoryTotals by_op = ByLaunchingOpTotals(p);
  w->Key("by_op");
  w->BeginObject();
  w->Field("state", ByOpStateName(p.by_op.state));
  w->Field("kernels", by_op.kernels);
  w->Field("time_us", MillisAsMicros(by_op.time_ns));
  w->EndObject();
  w->Key("kernel_time_us_by_category");
  w->BeginObject();
  for (const FusionTypeRow& row : types) {
    if (row.kernels[s] > 0) w->Field(row.name, MillisAsMicros(row.time_ns[s]));
  }
  w->EndObject();
  StageCpuJson(p.cpu_seconds, w);
  w->Field("gpu_timeline", GpuTimelineJson(p));
  w->EndObject();
}

// What the reference does not report.
void TracefuseJson(const FusionReport& r, const CompareContext& c, PyJsonWriter* w) {
  const PerSide<FusionSide> sides = FusionSides(r, c);
  const std::vector<FusionTypeRow> types = FusionTypeRows(r, c);
  w->Key("tracefuse");
  w->BeginObject();
  w->Field("version", TRACEFUSE_VERSION);
  w->Field("rule_set", c.traces[Side::kTrace1]->classifier->rule_set().name());
  w->Field("min_group_size", c.min_group_size);
  w->Key("traces");
  w->BeginArray();
  for (Side s : kSides) TraceJson(s, sides[s], types, w);
  w->EndArray();
  w->Key("timings_seconds");
  w->BeginObject();
  w->Field("read_and_reduce", c.read_seconds);
  w->Field("analyze", c.analyze_seconds);
  w->EndObject();
  if (c.ops != nullptr) {
    FusionDifferencesJson(c.ops->fusion_differences, w);
    AchievedByTypeJson(*c.ops, w);
  }
  w->EndObject();
}

// FusionJsonTo() writes the whole document to `out`, handing it to `sink` (when not null) as it
// grows.
absl::Status FusionJsonTo(const FusionReport& r, const CompareContext& c, OutputFile* sink,
                          JsonInfinity infinity, std::string* out) {
  PyJsonWriter w(out, sink, infinity);
  w.BeginObject();
  MetadataJson(r, c, &w);
  GlobalCountsJson(r, &w);
  w.Key("fusion_opportunities");
  w.BeginArray();
  for (const FusionOpportunity& o : r.opportunities) OpportunityJson(o, &w);
  w.EndArray();
  w.Key("fusion_mappings");
  w.BeginArray();
  for (const FusionMapping& m : r.mappings) {
    MappingJson(m, r.categories, &w);
    absl::Status st = w.MaybeFlush();
    if (!st.ok()) return st;
  }
  w.EndArray();
  TracefuseJson(r, c, &w);
  w.EndObject();
  *out += '\n';
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFusionJson(const FusionReport& r, const CompareContext& c, OutputFile* sink,
                             JsonInfinity infinity) {
  std::string out;
  absl::Status written = FusionJsonTo(r, c, sink, infinity, &out);
  return written.ok() ? sink->Append(out) : written;
}

std::string FusionJson(const FusionReport& r, const CompareContext& c, JsonInfinity infinity) {
  std::string out;
  FusionJsonTo(r, c, nullptr, infinity, &out).IgnoreError();  // without a sink, nothing fails
  return out;
}

}  // namespace tracefuse
