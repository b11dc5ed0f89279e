// `tracefuse ops --format json`: schema "tracefuse.ops/1" (docs/reports.md, "ops"),
// streamed: a comparison of two multi-gigabyte traces has tens of thousands of rows and groups.
#include "report/common/formatting.h"
#include "report/common/py_json_writer.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/parse/platform.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/ops.h"

namespace tracefuse {
namespace {

const char* SideKey(Side side) { return side == Side::kTrace1 ? "trace1" : "trace2"; }

void KernelsJson(const std::vector<OpKernels>& kernels, PyJsonWriter* w) {
  w->Key("kernels");
  w->BeginArray();
  for (const OpKernels& k : kernels) {
    w->BeginObject();
    w->Field("name", k.family);
    w->Field("example", k.example);
    w->Field("count", k.count);
    w->Field("time_us", Micros(k.time_ns));
    w->EndObject();
  }
  w->EndArray();
}

// SideFields() writes a side's instances, kernels and time into the open object.
void SideFields(const OpSide& side, PyJsonWriter* w) {
  w->Field("instances", side.instances);
  KernelsJson(side.kernels, w);
  w->Field("time_us", Micros(side.time_ns));
}

// WorkFields() writes what the perf models count in a side's units and what it achieved on
// `peak` (docs/perf-models.md).
void WorkFields(const OpRow& row, Side side, const std::optional<GpuPeak>& peak, PyJsonWriter* w) {
  const WorkTotals& work = row.work[side];
  const Achieved achieved = AchievedOf(work, row.sides[side].time_ns, peak ? &*peak : nullptr);
  w->Field("flops", work.flops);
  w->Field("bytes", work.bytes);
  const DType dtype = work.dtype();
  w->Field("dtype", dtype == DType::kUnknown ? std::nullopt : std::optional(DTypeName(dtype)));
  w->Field("tflops_per_s", achieved.tflops_per_s);
  w->Field("tb_per_s", achieved.tb_per_s);
  w->Field("percent_of_peak", achieved.percent_of_peak);
  w->Field("roof", achieved.roof ? std::optional(RoofText(*achieved.roof, dtype)) : std::nullopt);
  w->Field("bound", achieved.bound ? std::optional(BoundName(*achieved.bound)) : std::nullopt);
}

// PeakJson() is a trace's row of the peak table, null when its GPU is not in it.
void PeakJson(const std::optional<GpuPeak>& peak, PyJsonWriter* w) {
  w->Key("peak");
  if (!peak) {
    w->Null();
    return;
  }
  w->BeginObject();
  w->Field("name", peak->name);
  for (size_t d = 1; d < kDTypes; ++d) {
    const auto dtype = static_cast<DType>(d);
    w->Field(StrCat(DTypeName(dtype), dtype == DType::kInt8 ? "_tops" : "_tflops"),
             peak->Tflops(dtype));
  }
  w->Field("hbm_tb_per_s", peak->hbm_tb_per_s);
  w->Field("source", peak->source);
  w->EndObject();
}

void StepField(int32_t step, PyJsonWriter* w) {
  w->Key("step");
  if (step == kNoStep) {
    w->Null();
  } else {
    w->Value(step);
  }
}

void TraceJson(const OpTraceSummary& s, const TraceProfile& p, const std::string& label,
               PyJsonWriter* w) {
  w->BeginObject();
  w->Field("label", label);
  w->Field("path", p.path);
  w->Field("platform", PlatformName(p.platform));
  w->Field("gpu", p.gpu);
  w->Field("kernels", s.kernels);
  w->Field("kernel_time_us", Micros(s.kernel_time_ns));
  w->Field("linked_kernel_time_us", Micros(s.linked_ns));
  w->Field("launch_only_kernel_time_us", Micros(s.launch_only_ns));
  w->Field("no_launch_kernel_time_us", Micros(s.no_launch_ns));
  w->Field("steps", s.steps);
  w->Field("top_level_ops", s.top_level_ops);
  w->Field("cpu_events_without_times", s.cpu_events_without_times);
  w->Field("flops", s.work.flops);
  w->Field("bytes", s.work.bytes);
  PeakJson(s.peak, w);
  w->Field("gpu_timeline", GpuTimelineJson(p));
  w->EndObject();
}

void RowJson(const OpRow& row, const PerSide<OpTraceSummary>& traces, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("op", row.op);
  w->Field("scope", row.scope);
  w->Field("matched", row.matched);
  w->Field("instances", row.instances);
  for (Side side : kSides) {
    w->Key(SideKey(side));
    w->BeginObject();
    SideFields(row.sides[side], w);
    WorkFields(row, side, traces[side].peak, w);
    w->EndObject();
  }
  w->Field("delta_us", Micros(row.delta_ns()));
  // Trace 1's time over trace 2's; null when trace 2 has none.
  w->Field("ratio", TimeRatio(row.sides));
  w->EndObject();
}

void GroupJson(const UnmatchedGroup& g, PyJsonWriter* w) {
  w->BeginObject();
  StepField(g.step, w);
  w->Field("scope", g.scope);
  for (Side side : kSides) {
    w->Key(SideKey(side));
    w->BeginObject();
    SideFields(g.sides[side], w);
    w->Field("op_count", g.op_count[side]);
    w->Key("ops");
    w->BeginArray();
    for (std::string_view op : g.ops[side]) w->Value(op);
    w->EndArray();
    w->EndObject();
  }
  w->Field("delta_us", Micros(g.delta_ns()));
  w->EndObject();
}

void InstanceJson(const MatchedInstance& m, PyJsonWriter* w) {
  w->BeginObject();
  StepField(m.step, w);
  w->Field("index", m.index);
  w->Field("op", m.op);
  w->Field("scope", m.scope);
  for (Side side : kSides) {
    w->Key(SideKey(side));
    w->BeginObject();
    KernelsJson(m.sides[side].kernels, w);
    w->Field("time_us", Micros(m.sides[side].time_ns));
    w->Field("graph_replay", m.graph[side]);
    w->Key("kernel_types");  // a graph replay's kernel categories, in start order
    w->BeginArray();
    for (const std::string& type : m.types[side]) w->Value(type);
    w->EndArray();
    w->EndObject();
  }
  w->Field("delta_us", Micros(m.delta_ns()));
  w->EndObject();
}

void PeakGapJson(const PeakGap& gap, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("op", gap.row->op);
  w->Field("scope", gap.row->scope);
  w->Field("instances", gap.row->instances);
  w->Field("behind", SideKey(gap.behind));
  for (Side side : kSides) {
    w->Field(StrCat(SideKey(side), "_percent_of_peak"), *gap.achieved[side].percent_of_peak);
    w->Field(StrCat(SideKey(side), "_roof"),
             RoofText(*gap.achieved[side].roof, gap.row->work[side].dtype()));
  }
  w->Field("saving_us", Micros(gap.saving_ns));
  w->EndObject();
}

template <typename T, typename WriteOne>
absl::Status ArrayJson(const char* key, const std::vector<T>& items, WriteOne write_one,
                       PyJsonWriter* w) {
  w->Key(key);
  w->BeginArray();
  for (const T& item : items) {
    write_one(item, w);
    absl::Status flushed = w->MaybeFlush();
    if (!flushed.ok()) return flushed;
  }
  w->EndArray();
  return absl::OkStatus();
}

// OpsJsonTo() writes the comparison to `sink`, or to `out` without one.
absl::Status OpsJsonTo(const OpComparison& ops, const OpsContext& context, OutputFile* sink,
                       std::string* out_text) {
  std::string& out = *out_text;
  PyJsonWriter w(&out, sink);
  // One line per trace, row, group and instance: a comparison of multi-gigabyte traces has tens
  // of thousands of them, and a line each keeps the file small and easy to grep.
  w.WriteInlineFrom(2);
  w.BeginObject();
  w.Field("schema", "tracefuse.ops/1");
  w.Key("traces");
  w.BeginArray();
  for (Side side : kSides) {
    TraceJson(ops.traces[side], *context.traces[side], context.labels[side], &w);
  }
  w.EndArray();
  w.Field("matched_ops", ops.matched_ops);
  w.Field("capped_steps", ops.capped_steps);
  auto row_json = [&ops](const OpRow& row, PyJsonWriter* w) { RowJson(row, ops.traces, w); };
  for (absl::Status st :
       {ArrayJson("ops", ops.ops, row_json, &w),
        ArrayJson("unmatched_groups", ops.unmatched_groups, GroupJson, &w),
        ArrayJson("top_instances", ops.top_instances, InstanceJson, &w),
        ArrayJson("furthest_from_peak", FurthestFromPeak(ops), PeakGapJson, &w)}) {
    if (!st.ok()) return st;
  }
  FusionDifferencesJson(ops.fusion_differences, &w);
  AchievedByTypeJson(ops, &w);
  w.Key("tracefuse");
  w.BeginObject();
  w.Field("version", TRACEFUSE_VERSION);
  w.Field("rule_set", context.traces[Side::kTrace1]->classifier->rule_set().name());
  w.Field("read_seconds", context.read_seconds);
  w.Field("analyze_seconds", context.analyze_seconds);
  w.EndObject();
  w.EndObject();
  out += '\n';
  return sink != nullptr ? sink->Append(out) : absl::OkStatus();
}

}  // namespace

absl::Status WriteOpsJson(const OpComparison& ops, const OpsContext& context, OutputFile* sink) {
  std::string out;
  return OpsJsonTo(ops, context, sink, &out);
}

std::string OpsJson(const OpComparison& ops, const OpsContext& context) {
  std::string out;
  OpsJsonTo(ops, context, nullptr, &out).IgnoreError();  // without a sink, nothing fails
  return out;
}

}  // namespace tracefuse
