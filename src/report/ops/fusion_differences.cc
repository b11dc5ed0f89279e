// The fusion differences by operator in JSON, text, markdown and CSV (fusion_differences.h).
#include "report/ops/fusion_differences.h"

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/common/html.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

const char* SideKey(Side side) { return side == Side::kTrace1 ? "trace1" : "trace2"; }
Side Unfused(const FusionDifference& d) { return d.unfused(); }

void CountsJson(const char* key, const std::vector<std::pair<std::string, uint64_t>>& counts,
                PyJsonWriter* w) {
  w->Key(key);
  w->BeginObject();
  for (const auto& [name, count] : counts) w->Field(name, count);
  w->EndObject();
}

void SideJson(const FusionDifferenceSide& side, PyJsonWriter* w) {
  w->BeginObject();
  w->Key("ops");
  w->BeginArray();
  for (const std::string& op : side.ops) w->Value(op);
  w->EndArray();
  w->Field("kernels", side.kernels);
  CountsJson("categories", side.categories, w);
  w->Field("time_us", Micros(side.time_ns));
  w->Key("kernel_types");  // one instance's kernel categories, in start order
  w->BeginArray();
  for (const std::string& type : side.types) w->Value(type);
  w->EndArray();
  w->EndObject();
}

void ExampleJson(const FusionDifference& d, PyJsonWriter* w) {
  w->Key("example");
  w->BeginObject();
  w->Key("step");
  if (d.example_step == kNoStep) {
    w->Null();
  } else {
    w->Value(d.example_step);
  }
  w->Field("index", d.example_index);
  for (Side side : kSides) {
    w->Key(SideKey(side));
    w->BeginArray();
    for (const FusionKernel& k : d.sides[side].example) {
      w->BeginObject();
      w->Field("name", k.family);
      w->Field("full_name", k.name);
      w->Field("type", k.category);
      w->Field("time_us", Micros(k.time_ns));
      w->Field("extra", k.extra);
      w->EndObject();
    }
    w->EndArray();
  }
  w->EndObject();
}

// MoreKernels() is how many more kernels the unfused side runs over the instances.
uint64_t MoreKernels(const FusionDifference& d) {
  uint64_t n = 0;
  for (const ExtraKernels& k : d.extra_kernels) n += k.count;
  return n;
}

std::string Joined(const std::vector<std::string>& items, size_t shown) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += fmt::format(", {} more", items.size() - shown);
  return out;
}

class Section : Page {
 public:
  Section(const std::vector<FusionDifference>& differences, const OpComparison* ops,
          const PerSide<std::string>& labels, size_t top, bool markdown, bool full_names)
      : Page(markdown),
        differences_(differences),
        ops_(ops),
        labels_(labels),
        top_(top),
        full_names_(full_names) {}

  std::string Render() && {
    Heading(
        fmt::format("Fusion differences by operator ({} in all: who runs the same work in "
                    "fewer kernels)",
                    differences_.size()));
    if (differences_.empty()) {
      Line(fmt::format("{}(none: where ops or modules match, both sides run as many kernels)",
                       markdown_ ? "" : "  "));
      return std::move(out_);
    }
    if (markdown_) {
      Line(fmt::format(
          "| kind | relation | op / scope | fused by | instances | {} | {} | extra kernels | "
          "fused kernel | extra us | saving us |",
          labels_[Side::kTrace1], labels_[Side::kTrace2]));
      Line("|---|---|---|---|---:|---|---|---|---|---:|---:|");
    }
    for (size_t i = 0; i < differences_.size() && i < top_; ++i) Difference(differences_[i]);
    if (differences_.size() > top_) {
      Line(fmt::format("{}{} more (--format json lists every one)", markdown_ ? "\n" : "  ",
                       differences_.size() - top_));
    }
    return std::move(out_);
  }

 private:
  std::string Where(const FusionDifference& d) const {
    std::string what = d.kind == FusionDifferenceKind::kModule ? "" : Code(d.op);
    if (!d.scope.empty()) what += (what.empty() ? "under " : " under ") + d.scope;
    return what;
  }
  std::string Instances(const FusionDifference& d) const {
    const uint64_t matched = MatchedInstances(d, ops_);
    return matched > 0 ? fmt::format("{} of {}", d.instances, matched)
                       : fmt::format("{}", d.instances);
  }
  std::string SideText(const FusionDifference& d, Side side) const {
    const FusionDifferenceSide& s = d.sides[side];
    std::string text = fmt::format("{} kernels, {} us [{}]", Thousands(s.kernels),
                                   MicrosText(s.time_ns), Joined(s.types, 12));
    if (d.kind == FusionDifferenceKind::kModule) {
      text = fmt::format("{} ({} op{}): ", Joined(s.ops, 6), s.ops.size(),
                         s.ops.size() == 1 ? "" : "s") +
             text;
    }
    return text;
  }
  std::string Code(const std::string& s) const { return markdown_ ? "`" + s + "`" : s; }

  void Difference(const FusionDifference& d) {
    const std::string extra = ExtraKernelList(d, markdown_, full_names_);
    const std::string fused =
        d.fused_kernel.empty() ? "-" : Code(full_names_ ? d.fused_kernel_name : d.fused_kernel);
    if (markdown_) {
      Line(fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                       FusionDifferenceKindName(d.kind), FusionRelationName(d.relation), Where(d),
                       FusedBy(d), Instances(d), SideText(d, Side::kTrace1),
                       SideText(d, Side::kTrace2), extra, fused,
                       fmt::format("{:.1f}", Micros(d.extra_time_ns)),
                       fmt::format("{:+.1f}", Micros(d.saving_ns()))));
      return;
    }
    Line(fmt::format("  [{}] {}, {} instances: {}", FusionDifferenceKindName(d.kind), Where(d),
                     Instances(d), FusionVerdict(d, labels_)));
    for (Side side : kSides) Line(fmt::format("      {}: {}", labels_[side], SideText(d, side)));
    Line(fmt::format("      {}", WhatDiffers(d, extra, fused)));
    Line(fmt::format("      {}", TimesText(d, labels_)));
  }

  std::string FusedBy(const FusionDifference& d) const {
    return d.relation == FusionRelation::kAlgorithm ? "-" : labels_[d.fused_by];
  }

  std::string WhatDiffers(const FusionDifference& d, const std::string& extra,
                          const std::string& fused) const {
    const std::string& unfused = labels_[Unfused(d)];
    switch (d.relation) {
      case FusionRelation::kFusion:
        return fmt::format("{} runs {} more kernels: {}; {}'s {} ({}) does their work", unfused,
                           Thousands(MoreKernels(d)), extra, labels_[d.fused_by], fused,
                           d.fused_kernel_category);
      case FusionRelation::kSplit:
        return fmt::format("{} runs helpers beside the main kernel: {}; {} runs it as {} ({})",
                           unfused, extra, labels_[d.fused_by], fused, d.fused_kernel_category);
      case FusionRelation::kAlgorithm:
        break;
    }
    return fmt::format("{} runs {} more kernels: {}; no kernel of {} can do their work", unfused,
                       Thousands(MoreKernels(d)), extra, labels_[d.fused_by]);
  }

  const std::vector<FusionDifference>& differences_;
  const OpComparison* ops_;
  const PerSide<std::string>& labels_;
  const size_t top_;
  const bool full_names_;
};

std::string CategoriesCell(const std::vector<std::pair<std::string, uint64_t>>& categories) {
  std::string cell;
  for (const auto& [name, count] : categories) {
    cell += StrCat(cell.empty() ? "" : "; ", name, " x", count);
  }
  return CsvField(cell);
}

std::string OpsCell(const std::vector<std::string>& ops) {
  std::string cell;
  for (const std::string& op : ops) cell += (cell.empty() ? "" : "; ") + op;
  return CsvField(cell);
}

}  // namespace

// ExtraKernelList() is "elementwise_kernel x96 (MemCopy), add_rmsnorm_quant_kernel x48
// (RMSNorm)": the extra kernels over the instances.
std::string ExtraKernelList(const FusionDifference& d, bool markdown, bool full_names) {
  std::string out;
  for (const ExtraKernels& k : d.extra_kernels) {
    out += fmt::format("{}{}{}{} x{} ({})", out.empty() ? "" : ", ", markdown ? "`" : "",
                       full_names ? k.example : k.family, markdown ? "`" : "", k.count, k.category);
  }
  return out.empty() ? "(none)" : out;
}

std::string FusionVerdict(const FusionDifference& d, const PerSide<std::string>& labels) {
  switch (d.relation) {
    case FusionRelation::kFusion:
      return fmt::format("{} fuses (fusion)", labels[d.fused_by]);
    case FusionRelation::kSplit:
      return fmt::format("{} runs the operation in fewer kernels (split)", labels[d.fused_by]);
    case FusionRelation::kAlgorithm:
      break;
  }
  return "different kernels, neither covers the other's (algorithm)";
}

uint64_t MatchedInstances(const FusionDifference& d, const OpComparison* ops) {
  if (ops == nullptr || d.kind != FusionDifferenceKind::kOp) return 0;
  for (const OpRow& row : ops->ops) {
    if (row.matched && row.op == d.op && row.scope == d.scope) return row.instances;
  }
  return 0;
}

std::string SavingText(const FusionDifference& d) {
  const int64_t saving = d.saving_ns();
  if (saving >= 0) return fmt::format("saves {} us", MicrosText(saving));
  return fmt::format("the fused kernel is slower: {} us more", MicrosText(-saving));
}

std::string TimesText(const FusionDifference& d, const PerSide<std::string>& labels) {
  const int64_t saving = d.saving_ns();
  return fmt::format("the extra kernels take {} us; with them {} is {} us {} over the stretch",
                     MicrosText(d.extra_time_ns), labels[d.unfused()],
                     MicrosText(saving >= 0 ? saving : -saving), saving >= 0 ? "slower" : "faster");
}

void FusionDifferencesJson(const std::vector<FusionDifference>& differences, PyJsonWriter* w) {
  w->Key("fusion_differences");
  w->BeginArray();
  for (const FusionDifference& d : differences) {
    w->BeginObject();
    w->Field("kind", FusionDifferenceKindName(d.kind));
    w->Field("scope", d.scope);
    w->Key("op");
    if (d.kind == FusionDifferenceKind::kModule) {
      w->Null();
    } else {
      w->Value(d.op);
    }
    w->Field("relation", FusionRelationName(d.relation));
    w->Key("fused_by");
    if (d.relation == FusionRelation::kAlgorithm) {
      w->Null();
    } else {
      w->Value(SideKey(d.fused_by));
    }
    w->Field("instances", d.instances);
    for (Side side : kSides) {
      w->Key(SideKey(side));
      SideJson(d.sides[side], w);
    }
    CountsJson("extra_categories", d.extra_categories, w);
    w->Key("extra_kernels");
    w->BeginArray();
    for (const ExtraKernels& k : d.extra_kernels) {
      w->BeginObject();
      w->Field("name", k.family);
      w->Field("example", k.example);
      w->Field("category", k.category);
      w->Field("count", k.count);
      w->EndObject();
    }
    w->EndArray();
    w->Field("extra_time_us", Micros(d.extra_time_ns));
    w->Key("fused_kernel");
    if (d.fused_kernel.empty()) {
      w->Null();
    } else {
      w->Value(d.fused_kernel);
    }
    w->Key("fused_kernel_full_name");
    if (d.fused_kernel_name.empty()) {
      w->Null();
    } else {
      w->Value(d.fused_kernel_name);
    }
    w->Key("fused_kernel_category");
    if (d.fused_kernel_category.empty()) {
      w->Null();
    } else {
      w->Value(d.fused_kernel_category);
    }
    w->Field("saving_us", Micros(d.saving_ns()));
    ExampleJson(d, w);
    w->EndObject();
  }
  w->EndArray();
}

std::string FusionDifferencesSection(const std::vector<FusionDifference>& differences,
                                     const OpComparison* ops, const PerSide<std::string>& labels,
                                     size_t top, bool markdown, bool full_names) {
  return Section(differences, ops, labels, top, markdown, full_names).Render();
}

std::string FusionDifferencesCsv(const std::vector<FusionDifference>& differences) {
  std::string out =
      "kind,relation,scope,op,fused_by,instances,trace1_ops,trace1_kernels,trace1_categories,"
      "trace1_time_us,trace2_ops,trace2_kernels,trace2_categories,trace2_time_us,"
      "extra_categories,extra_kernels,extra_time_us,fused_kernel,fused_kernel_category,"
      "saving_us\n";
  for (const FusionDifference& d : differences) {
    out += StrCat(FusionDifferenceKindName(d.kind), ",", FusionRelationName(d.relation), ",",
                  CsvField(d.scope), ",", CsvField(d.op), ",",
                  d.relation == FusionRelation::kAlgorithm ? "" : SideKey(d.fused_by), ",",
                  d.instances);
    for (Side side : kSides) {
      const FusionDifferenceSide& s = d.sides[side];
      out += StrCat(",", OpsCell(s.ops), ",", s.kernels, ",", CategoriesCell(s.categories), ",",
                    CsvNumber(Micros(s.time_ns)));
    }
    std::string extra;
    for (const ExtraKernels& k : d.extra_kernels) {
      extra += StrCat(extra.empty() ? "" : "; ", k.family, " x", k.count, " (", k.category, ")");
    }
    out += StrCat(",", CategoriesCell(d.extra_categories), ",", CsvField(extra), ",",
                  CsvNumber(Micros(d.extra_time_ns)), ",", CsvField(d.fused_kernel), ",",
                  CsvField(d.fused_kernel_category), ",", CsvNumber(Micros(d.saving_ns())), "\n");
  }
  return out;
}

namespace {

bool AnyFlops(const OpComparison& ops) {
  return ops.type_work_left_out[Side::kTrace1].all_flops > 0 ||
         ops.type_work_left_out[Side::kTrace2].all_flops > 0;
}

// The section's title, and what a type's TFLOP/s divides.
constexpr const char* kAchievedTitle = "Achieved TFLOP/s by kernel type";
constexpr const char* kNoTypeCompared = "no type has matched ops of it on both sides";
constexpr const char* kAchievedScope =
    "FLOPs over time of the matched ops mostly of the type on both sides";

// LeftOutText() is "left out (...): MI300X 3 ops, 1.2% of its FLOPs; H100 none".
std::string LeftOutText(const OpComparison& ops, const PerSide<std::string>& labels) {
  std::string out = "left out (unmatched, or of another type or without FLOPs on the other side): ";
  for (Side side : kSides) {
    const WorkLeftOut& left = ops.type_work_left_out[side];
    out += side == Side::kTrace1 ? "" : "; ";
    if (left.all_flops == 0) {
      out += labels[side] + " has no FLOPs";
    } else if (left.ops == 0) {
      out += labels[side] + " none";
    } else {
      const double percent =
          100.0 * static_cast<double>(left.work.flops) / static_cast<double>(left.all_flops);
      out += fmt::format("{} {} {}, {} of its FLOPs", labels[side], Thousands(left.ops),
                         left.ops == 1 ? "op" : "ops",
                         percent < 0.1 ? "<0.1%" : fmt::format("{:.1f}%", percent));
    }
  }
  return out;
}

// WorkTitle() is a cell's hover text: what its TFLOP/s divides.
std::string WorkTitle(const CategoryWork& work) {
  return fmt::format("{} FLOPs over {} us", Thousands(work.flops), MicrosText(work.time_ns));
}

std::string TflopsCell(const CategoryWork& work) {
  const std::optional<double> tflops = work.tflops_per_s();
  return tflops ? FlopRateCell(*tflops) : "-";
}

// AchievedSection lays out the types' TFLOP/s, one line (or markdown row) per type.
class AchievedSection : Page {
 public:
  AchievedSection(const OpComparison& ops, const PerSide<std::string>& labels, bool markdown)
      : Page(markdown), ops_(ops), labels_(labels) {}

  std::string Render() && {
    Heading(fmt::format("{} ({})", kAchievedTitle, kAchievedScope));
    const std::string indent = markdown_ ? "" : "  ";
    if (ops_.type_work.empty()) {
      Line(indent + kNoTypeCompared);
      Line(indent + LeftOutText(ops_, labels_));
      return std::move(out_);
    }
    if (markdown_) {
      Line(fmt::format("| type | op pairs | {} TFLOP/s | {} TFLOP/s |", labels_[Side::kTrace1],
                       labels_[Side::kTrace2]));
      Line("|---|---:|---:|---:|");
    }
    for (const TypeWork& t : ops_.type_work) {
      const std::string a = TflopsCell(t.work[Side::kTrace1]);
      const std::string b = TflopsCell(t.work[Side::kTrace2]);
      const std::string pairs = Thousands(t.pairs);
      Line(markdown_ ? fmt::format("| {} | {} | {} | {} |", t.type, pairs, a, b)
                     : fmt::format("  {:<16}  {:>7} op {:<5}  {}: {:>8}  {}: {:>8}", t.type, pairs,
                                   t.pairs == 1 ? "pair" : "pairs", labels_[Side::kTrace1], a,
                                   labels_[Side::kTrace2], b));
    }
    if (markdown_) Line("");  // a paragraph, not one more row of the table
    Line(indent + LeftOutText(ops_, labels_));
    return std::move(out_);
  }

 private:
  const OpComparison& ops_;
  const PerSide<std::string>& labels_;
};

void CategoryWorkJson(const CategoryWork& work, PyJsonWriter* w) {
  w->Field("flops", work.flops);
  w->Field("time_us", Micros(work.time_ns));
  w->Field("tflops_per_s", work.tflops_per_s());
}

}  // namespace

void AchievedByTypeJson(const OpComparison& ops, PyJsonWriter* w) {
  w->Key("achieved_by_type");
  w->BeginArray();
  for (const TypeWork& t : ops.type_work) {
    w->BeginObject();
    w->Field("type", t.type);
    w->Field("op_pairs", t.pairs);
    for (Side side : kSides) {
      w->Key(SideKey(side));
      w->BeginObject();
      CategoryWorkJson(t.work[side], w);
      w->EndObject();
    }
    w->EndObject();
  }
  w->EndArray();
  w->Key("achieved_by_type_left_out");
  w->BeginObject();
  for (Side side : kSides) {
    const WorkLeftOut& left = ops.type_work_left_out[side];
    w->Key(SideKey(side));
    w->BeginObject();
    w->Field("ops", left.ops);
    CategoryWorkJson(left.work, w);
    w->Field("all_flops", left.all_flops);
    w->EndObject();
  }
  w->EndObject();
}

std::string AchievedByTypeSection(const OpComparison& ops, const PerSide<std::string>& labels,
                                  bool markdown) {
  if (!AnyFlops(ops)) return "";
  return AchievedSection(ops, labels, markdown).Render();
}

std::string AchievedByTypeHtml(const OpComparison& ops, const PerSide<std::string>& labels) {
  if (!AnyFlops(ops)) return "";
  const std::string a = HtmlEscaped(labels[Side::kTrace1]);
  const std::string b = HtmlEscaped(labels[Side::kTrace2]);
  std::string out = fmt::format(
      "<section id=\"achieved-by-type\">\n<h2>{} <span class=\"muted\">({})</span></h2>\n",
      kAchievedTitle, kAchievedScope);
  if (ops.type_work.empty()) {
    return StrCat(out, "<p>", kNoTypeCompared, "</p>\n<p class=\"note\">",
                  HtmlEscaped(LeftOutText(ops, labels)), "</p>\n</section>\n");
  }
  out += fmt::format(
      "<table class=\"achieved\">\n<tr><th>type</th><th class=\"n\">op pairs</th>"
      "<th class=\"n\">{} TFLOP/s</th><th class=\"n\">{} TFLOP/s</th></tr>\n",
      a, b);
  for (const TypeWork& t : ops.type_work) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\" title=\"{}\">{}</td>"
        "<td class=\"n\" title=\"{}\">{}</td></tr>\n",
        HtmlEscaped(t.type), Thousands(t.pairs), WorkTitle(t.work[Side::kTrace1]),
        TflopsCell(t.work[Side::kTrace1]), WorkTitle(t.work[Side::kTrace2]),
        TflopsCell(t.work[Side::kTrace2]));
  }
  out += fmt::format("</table>\n<p class=\"note\">{}</p>\n</section>\n",
                     HtmlEscaped(LeftOutText(ops, labels)));
  return out;
}

std::string CategoryList(const std::vector<std::pair<std::string, uint64_t>>& categories) {
  std::string out;
  for (const auto& [name, count] : categories) {
    out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", name, count);
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace tracefuse
