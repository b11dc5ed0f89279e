#include "tracefuse/analyze.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "oneapi/tbb/parallel_invoke.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::array<std::string, 2> kCompatLabels = {"Trace 1", "Trace 2"};

double Ratio(double a, double b) { return b == 0 ? kInf : a / b; }

std::string Lower(std::string_view s) {
  std::string l(s);
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l;
}

using Composition = std::vector<uint64_t>;

int Intersection(const Composition& a, const Composition& b) {
  int n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += __builtin_popcountll(a[i] & b[i]);
  return n;
}

// (size bucket, has_attn, has_ffn, dominant type) packed into one key.
uint64_t SignatureKey(int64_t bucket, bool attn, bool ffn, uint16_t dominant) {
  return (static_cast<uint64_t>(bucket) << 20) | (uint64_t{attn} << 19) | (uint64_t{ffn} << 18) |
         dominant;
}

}  // namespace

std::string Evidence(const FusionMapping& m, const std::array<std::string, 2>& labels) {
  const std::string& fused = labels[m.fused_side];
  const std::string& unfused = labels[1 - m.fused_side];
  switch (m.kind) {
    case FusionMapping::Kind::kSequence:
      return fmt::format("{} runs {}+{} separately, {} fuses into {}", unfused,
                         m.unfused_sequence[0], m.unfused_sequence[1], fused,
                         m.unfused_sequence[0]);
    case FusionMapping::Kind::kImbalance:
      return fmt::format("{} calls {} {:.1f}x more ({} vs {}), {} likely fuses into {}", unfused,
                         m.type, m.ratio, m.unfused_count, m.fused_count, fused,
                         m.fused_kernel_type);
    case FusionMapping::Kind::kPartial: {
      std::string targets;
      for (const auto& [type, n] : m.targets) {
        if (!targets.empty()) targets += ", ";
        targets += fmt::format("{} (+{})", type, n);
      }
      return fmt::format(
          "{} calls {} {:.1f}x more ({} vs {}). In {} groups where {} has {}, {} has more: {}",
          unfused, m.type, m.ratio, m.unfused_count, m.fused_count, m.groups_analyzed, unfused,
          m.type, fused, targets);
    }
    case FusionMapping::Kind::kChain:
      return fmt::format(
          "{} runs {} in chains of {:.0f} calls ({} chains, {} total), {} fuses to {:.0f} calls "
          "({} chains, {} total) - {:.1f}x more efficient",
          unfused, m.type, m.unfused_avg, m.unfused_chains, Thousands(m.unfused_total), fused,
          m.fused_avg, m.fused_chains, Thousands(m.fused_total), m.ratio);
  }
  return "";
}

GroupShape GroupShape::Of(const std::vector<uint16_t>& types, bool has_attention, bool has_ffn) {
  GroupShape g;
  g.size = static_cast<uint32_t>(types.size());
  g.has_attention = has_attention;
  g.has_ffn = has_ffn;
  uint16_t max_type = 0;
  for (uint16_t t : types) max_type = std::max(max_type, t);
  std::vector<uint32_t> count(max_type + 1, 0), first(max_type + 1, UINT32_MAX);
  g.composition.assign(max_type / 64 + 1, 0);
  for (uint32_t i = 0; i < types.size(); ++i) {
    if (count[types[i]]++ == 0) first[types[i]] = i;
    g.composition[types[i] >> 6] |= uint64_t{1} << (types[i] & 63);
  }
  for (uint16_t t = 0; t <= max_type; ++t) {
    if (count[t] > count[g.dominant] ||
        (count[t] == count[g.dominant] && first[t] < first[g.dominant]))
      g.dominant = t;
  }
  return g;
}

std::string ReferenceGpuName(const TraceMetadata& m) {
  if (m.gpu_name) return *m.gpu_name;
  bool amd = m.roctracer_version_truthy || m.warp_size == 64;
  return amd ? "MI300X" : "Unknown GPU";
}

// --- §4.1 step 3: group matching ---------------------------------------------------------------
//
// Trace-2 groups are bucketed by signature, and inside a signature by (size, composition): all
// groups of one class score the same against a given trace-1 group, so only the first unused
// group of each class can win. A trace-1 group therefore scores a few classes, not every
// candidate, and the reference's result (lowest score, first in candidate order on ties) is kept.
std::vector<std::pair<uint32_t, uint32_t>> MatchGroups(const std::vector<GroupShape>& groups1,
                                                       const std::vector<GroupShape>& groups2) {
  struct Class {
    uint32_t size;
    Composition composition;
    std::vector<uint32_t> groups;  // trace-2 indices, in trace order
    size_t next = 0;               // first unused
  };
  struct Bucket {
    std::vector<Class> classes;
    size_t unused = 0;
  };
  absl::flat_hash_map<uint64_t, Bucket> by_signature;
  for (uint32_t j = 0; j < groups2.size(); ++j) {
    const GroupShape& g = groups2[j];
    Bucket& b =
        by_signature[SignatureKey(g.size / 10 * 10, g.has_attention, g.has_ffn, g.dominant)];
    auto it = std::find_if(b.classes.begin(), b.classes.end(), [&](const Class& c) {
      return c.size == g.size && c.composition == g.composition;
    });
    if (it == b.classes.end()) {
      b.classes.push_back(Class{g.size, g.composition, {}, 0});
      it = b.classes.end() - 1;
    }
    it->groups.push_back(j);
    ++b.unused;
  }

  std::vector<uint32_t> order(groups1.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return groups1[a].size > groups1[b].size; });

  std::vector<std::pair<uint32_t, uint32_t>> matches;
  for (uint32_t i : order) {
    const GroupShape& g = groups1[i];
    const uint16_t dominant = g.dominant;
    const int64_t bucket = g.size / 10 * 10;
    std::vector<Bucket*> lists;
    auto exact = by_signature.find(SignatureKey(bucket, g.has_attention, g.has_ffn, dominant));
    if (exact != by_signature.end() && exact->second.unused > 0) {
      lists.push_back(&exact->second);
    } else {
      for (int64_t delta : {-10, 10}) {
        if (bucket + delta < 0) continue;
        auto adj =
            by_signature.find(SignatureKey(bucket + delta, g.has_attention, g.has_ffn, dominant));
        if (adj != by_signature.end() && adj->second.unused > 0) lists.push_back(&adj->second);
      }
    }
    const Composition& comp = g.composition;
    const double low = g.size / 1.25, high = g.size * 1.25;
    Class* best = nullptr;
    Bucket* best_bucket = nullptr;
    int64_t best_score = 0;
    std::pair<size_t, uint32_t> best_position{};  // (list, trace-2 index): candidate order
    for (size_t l = 0; l < lists.size(); ++l) {
      for (Class& c : lists[l]->classes) {
        if (c.next == c.groups.size()) continue;
        double size2 = c.size;
        if (!(low <= size2 && size2 <= high)) continue;
        int64_t score = std::llabs(static_cast<int64_t>(g.size) - static_cast<int64_t>(c.size)) -
                        10 * Intersection(comp, c.composition);
        std::pair<size_t, uint32_t> position{l, c.groups[c.next]};
        if (best == nullptr || score < best_score ||
            (score == best_score && position < best_position)) {
          best = &c;
          best_bucket = lists[l];
          best_score = score;
          best_position = position;
        }
      }
    }
    if (best != nullptr) {
      matches.emplace_back(i, best->groups[best->next]);
      ++best->next;
      --best_bucket->unused;
    }
  }
  return matches;
}

// --- §4.2: sequence mappings -------------------------------------------------------------------

void FindSequenceMappings(const std::vector<uint16_t>& types1, const std::vector<uint16_t>& types2,
                          const std::vector<std::string>& names, uint16_t other,
                          std::vector<FusionMapping>* out) {
  const size_t ncat = names.size();
  const std::vector<uint16_t>* seq[2] = {&types1, &types2};
  std::vector<int64_t> count[2] = {std::vector<int64_t>(ncat, 0), std::vector<int64_t>(ncat, 0)};
  std::vector<size_t> first[2] = {std::vector<size_t>(ncat, SIZE_MAX),
                                  std::vector<size_t>(ncat, SIZE_MAX)};
  for (int s = 0; s < 2; ++s) {
    for (size_t i = 0; i < seq[s]->size(); ++i) {
      uint16_t t = (*seq[s])[i];
      if (count[s][t]++ == 0) first[s][t] = i;
    }
  }

  // Types found on one side only, with at least 5 occurrences: their most common predecessor.
  for (int s = 0; s < 2; ++s) {
    const int o = 1 - s;
    std::vector<int> slot(ncat, -1);
    std::vector<uint16_t> unique;
    for (uint16_t t = 0; t < ncat; ++t) {
      if (count[s][t] >= 5 && count[o][t] == 0) {
        slot[t] = static_cast<int>(unique.size());
        unique.push_back(t);
      }
    }
    if (unique.empty()) continue;
    // Per unique type: predecessor counts and the order in which predecessors first appeared.
    std::vector<int64_t> pred_count(unique.size() * ncat, 0);
    std::vector<size_t> pred_first(unique.size() * ncat, SIZE_MAX);
    const std::vector<uint16_t>& q = *seq[s];
    for (size_t i = 1; i < q.size(); ++i) {
      int sl = slot[q[i]];
      if (sl < 0) continue;
      size_t cell = static_cast<size_t>(sl) * ncat + q[i - 1];
      if (pred_count[cell]++ == 0) pred_first[cell] = i;
    }
    for (size_t u = 0; u < unique.size(); ++u) {
      const uint16_t type = unique[u];
      uint16_t pred = 0;
      int64_t best = 0;
      size_t best_first = SIZE_MAX;
      for (uint16_t p = 0; p < ncat; ++p) {
        size_t cell = u * ncat + p;
        if (pred_count[cell] > best ||
            (pred_count[cell] == best && best > 0 && pred_first[cell] < best_first)) {
          pred = p;
          best = pred_count[cell];
          best_first = pred_first[cell];
        }
      }
      const int64_t n = count[s][type];
      if (best == 0 || !(static_cast<double>(best) / static_cast<double>(n) > 0.8) ||
          count[o][pred] == 0)
        continue;
      FusionMapping m;
      m.kind = FusionMapping::Kind::kSequence;
      m.fused_side = o;
      m.fused_kernel_type = names[pred];
      m.fused_count = count[o][pred];
      m.unfused_sequence = {names[pred], names[type]};
      m.unfused_count_per_type = {{names[pred], count[s][pred]}, {names[type], n}};
      m.pattern_count = n;
      m.pattern_confidence = static_cast<double>(best) / static_cast<double>(n);
      m.type = names[type];
      out->push_back(std::move(m));
    }
  }

  // Types on both sides whose counts differ by at least 1.3x over at least 100 kernels.
  for (uint16_t t = 0; t < ncat; ++t) {
    const int64_t c1 = count[0][t], c2 = count[1][t];
    if (c1 == 0 || c2 == 0) continue;
    const double ratio =
        static_cast<double>(std::max(c1, c2)) / static_cast<double>(std::min(c1, c2));
    if (ratio < 1.3 || c1 + c2 < 100) continue;
    const int u = c1 > c2 ? 0 : 1;
    const int f = 1 - u;
    int target = -1;
    for (uint16_t x = 0; x < ncat; ++x) {
      if (x == t || x == other || count[f][x] == 0) continue;
      if (target < 0 || count[f][x] > count[f][target] ||
          (count[f][x] == count[f][target] && first[f][x] < first[f][target])) {
        target = x;
      }
    }
    if (target < 0) continue;
    FusionMapping m;
    m.kind = FusionMapping::Kind::kImbalance;
    m.fused_side = f;
    m.fused_kernel_type = names[target];
    m.fused_count = count[f][t];
    m.unfused_sequence = {names[t]};
    m.unfused_count_per_type = {{names[t], count[u][t]}};
    m.pattern_count = count[u][t] - count[f][t];
    m.pattern_confidence =
        static_cast<double>(count[u][t] - count[f][t]) / static_cast<double>(count[u][t]);
    m.type = names[t];
    m.ratio = ratio;
    m.unfused_count = count[u][t];
    out->push_back(std::move(m));
  }
}

// --- §4.1: the whole analysis --------------------------------------------------------------------

namespace {

struct TraceView {
  const TraceProfile* profile = nullptr;
  std::vector<uint16_t> name_category;
  std::vector<uint8_t> name_attention, name_ffn;
  GroupMembers members;
  std::vector<uint32_t> large;     // group indices with size >= min, first-appearance order
  std::vector<GroupShape> shapes;  // per large group
  std::vector<uint16_t> sequence;  // all kernels' types in ts order

  void Build(const TraceProfile& p, uint32_t min_group_size) {
    profile = &p;
    name_category.resize(p.names.size());
    name_attention.resize(p.names.size());
    name_ffn.resize(p.names.size());
    for (uint32_t n = 0; n < p.names.size(); ++n) {
      name_category[n] = p.category_of_name(n);
      std::string l = Lower(p.names[n]);
      auto has = [&](const char* s) { return l.find(s) != std::string::npos; };
      name_attention[n] = has("attention") || has("fmha");
      name_ffn[n] = has("cijk") || has("nvjet") || has("gemm");
    }
    for (uint32_t g = 0; g < p.group_size.size(); ++g)
      if (p.group_size[g] >= min_group_size) large.push_back(g);
    members = p.BuildGroupMembers(large);
    std::vector<uint16_t> scratch;
    for (uint32_t i = 0; i < large.size(); ++i) shapes.push_back(Shape(i, &scratch));
    sequence = p.TypeSequence();
  }

  // `slot` indexes `large`.
  GroupShape Shape(uint32_t slot, std::vector<uint16_t>* types) const {
    bool attention = false, ffn = false;
    types->clear();
    for (uint32_t i = members.offsets[slot]; i < members.offsets[slot + 1]; ++i) {
      uint32_t name = profile->kernels[members.members[i]].name;
      attention |= name_attention[name] != 0;
      ffn |= name_ffn[name] != 0;
      types->push_back(name_category[name]);
    }
    return GroupShape::Of(*types, attention, ffn);
  }

  // The types of large group `slot` in ts order (stable on list order).
  void SortedTypes(uint32_t slot, std::vector<std::pair<int64_t, uint16_t>>* scratch,
                   std::vector<uint16_t>* out) const {
    scratch->clear();
    for (uint32_t i = members.offsets[slot]; i < members.offsets[slot + 1]; ++i) {
      const KernelRecord& k = profile->kernels[members.members[i]];
      scratch->emplace_back(k.ts_ns, name_category[k.name]);
    }
    if (!std::is_sorted(scratch->begin(), scratch->end(),
                        [](const auto& a, const auto& b) { return a.first < b.first; })) {
      std::stable_sort(scratch->begin(), scratch->end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out->clear();
    for (const auto& e : *scratch) out->push_back(e.second);
  }
};

}  // namespace

FusionReport AnalyzeFusion(const TraceProfile& trace1, const TraceProfile& trace2,
                           const FusionOptions& options) {
  assert(trace1.kernels.size() == trace1.kernel_count &&
         trace2.kernels.size() == trace2.kernel_count);
  const std::vector<std::string>& names = trace1.classifier->rule_set().categories();
  const size_t ncat = names.size();
  const uint16_t other = trace1.classifier->rule_set().category_index("Other");
  // The two traces' views are independent: build them side by side.
  TraceView views[2];
  tbb::parallel_invoke([&] { views[0].Build(trace1, options.min_group_size); },
                       [&] { views[1].Build(trace2, options.min_group_size); });

  FusionReport report;
  for (int s = 0; s < 2; ++s) {
    report.total_kernels[s] = views[s].profile->kernels.size();
    report.large_groups[s] = views[s].large.size();
  }

  // Step 3: match large groups.
  std::vector<std::pair<uint32_t, uint32_t>> matches =
      MatchGroups(views[0].shapes, views[1].shapes);
  report.matched_groups = matches.size();
  const size_t m_count = matches.size();

  // Step 4: per matched pair, counts and times per type, then sequence mappings.
  struct Diff {
    int64_t count[2] = {0, 0};
    int64_t time_ns[2] = {0, 0};
    int64_t groups = 0;
    int64_t groups_with_diff = 0;
  };
  std::vector<Diff> diffs(ncat);
  std::vector<uint16_t> diff_order;
  std::vector<uint8_t> diff_seen(ncat, 0);
  std::vector<uint32_t> pair_counts[2] = {std::vector<uint32_t>(m_count * ncat, 0),
                                          std::vector<uint32_t>(m_count * ncat, 0)};
  std::vector<int64_t> pair_time[2] = {std::vector<int64_t>(ncat), std::vector<int64_t>(ncat)};
  std::vector<std::pair<int64_t, uint16_t>> scratch;
  std::vector<uint16_t> sorted[2];
  for (size_t p = 0; p < m_count; ++p) {
    const uint32_t slot[2] = {matches[p].first, matches[p].second};
    const uint32_t group[2] = {views[0].large[slot[0]], views[1].large[slot[1]]};
    for (int s = 0; s < 2; ++s) {
      uint32_t* counts = &pair_counts[s][p * ncat];
      std::fill(pair_time[s].begin(), pair_time[s].end(), 0);
      const TraceView& v = views[s];
      for (uint32_t i = v.members.offsets[slot[s]]; i < v.members.offsets[slot[s] + 1]; ++i) {
        const KernelRecord& k = v.profile->kernels[v.members.members[i]];
        uint16_t t = v.name_category[k.name];
        ++counts[t];
        pair_time[s][t] += k.dur_ns;
      }
    }
    for (uint16_t t = 0; t < ncat; ++t) {
      const uint32_t c1 = pair_counts[0][p * ncat + t], c2 = pair_counts[1][p * ncat + t];
      if (c1 == 0 && c2 == 0) continue;
      Diff& d = diffs[t];
      d.count[0] += c1;
      d.count[1] += c2;
      d.time_ns[0] += pair_time[0][t];
      d.time_ns[1] += pair_time[1][t];
      d.groups += 1;
      d.groups_with_diff += (c1 != c2);
      if (!diff_seen[t]) {
        diff_seen[t] = 1;
        diff_order.push_back(t);
      }
    }
    for (int s = 0; s < 2; ++s) views[s].SortedTypes(slot[s], &scratch, &sorted[s]);
    size_t before = report.mappings.size();
    FindSequenceMappings(sorted[0], sorted[1], names, other, &report.mappings);
    for (size_t i = before; i < report.mappings.size(); ++i) {
      report.mappings[i].correlation_groups = {trace1.group_correlation[group[0]],
                                               trace2.group_correlation[group[1]]};
    }
  }

  // Step 5: global counts over all kernels.
  const std::vector<CategoryTotals> totals[2] = {trace1.PerCategory(), trace2.PerCategory()};
  for (uint16_t t = 0; t < ncat; ++t) {
    if (totals[0][t].kernels == 0 && totals[1][t].kernels == 0) continue;
    report.global_counts.push_back(GlobalCount{names[t], totals[0][t].kernels, totals[1][t].kernels,
                                               Ratio(static_cast<double>(totals[0][t].kernels),
                                                     static_cast<double>(totals[1][t].kernels))});
  }

  // Step 6: opportunities from matched groups.
  std::vector<uint8_t> listed(ncat, 0);
  for (uint16_t t : diff_order) {
    const Diff& d = diffs[t];
    const double avg1 = static_cast<double>(d.count[0]) / static_cast<double>(d.groups);
    const double avg2 = static_cast<double>(d.count[1]) / static_cast<double>(d.groups);
    const double diff_ratio = Ratio(avg1, avg2), reverse_ratio = Ratio(avg2, avg1);
    const bool significant =
        diff_ratio > 10 || reverse_ratio > 10 ||
        ((diff_ratio > 2 || reverse_ratio > 2) && d.count[0] + d.count[1] > 20);
    if (!significant) continue;
    FusionOpportunity o;
    o.kernel_type = names[t];
    o.trace1_total = static_cast<uint64_t>(d.count[0]);
    o.trace2_total = static_cast<uint64_t>(d.count[1]);
    o.trace1_avg_per_group = avg1;
    o.trace2_avg_per_group = avg2;
    o.trace1_time_ms = static_cast<double>(d.time_ns[0]) / 1e6;
    o.trace2_time_ms = static_cast<double>(d.time_ns[1]) / 1e6;
    o.time_ratio = Ratio(o.trace1_time_ms, o.trace2_time_ms);
    o.fused_by = diff_ratio > 1.5 ? 1 : 0;
    o.ratio = diff_ratio > 1.5 ? diff_ratio : reverse_ratio;
    o.groups_affected = static_cast<uint64_t>(d.groups_with_diff);
    o.total_groups = static_cast<uint64_t>(d.groups);
    o.from_groups = true;
    listed[t] = 1;
    report.opportunities.push_back(std::move(o));
  }

  // Step 7: opportunities over the whole traces, for types not listed yet.
  for (uint16_t t = 0; t < ncat; ++t) {
    const uint64_t c1 = totals[0][t].kernels, c2 = totals[1][t].kernels;
    if (listed[t] || (c1 == 0 && c2 == 0) || c1 + c2 < 100) continue;
    const double r12 = Ratio(double(c1), double(c2)), r21 = Ratio(double(c2), double(c1));
    if (!((r12 > 2 || r21 > 2) && c1 + c2 > 100)) continue;
    FusionOpportunity o;
    o.kernel_type = names[t];
    o.trace1_total = c1;
    o.trace2_total = c2;
    if (m_count > 0) {
      o.trace1_avg_per_group = double(c1) / double(m_count);
      o.trace2_avg_per_group = double(c2) / double(m_count);
    } else {
      o.avg_is_integer_zero = true;
    }
    o.trace1_time_ms = static_cast<double>(totals[0][t].time_ns) / 1e6;
    o.trace2_time_ms = static_cast<double>(totals[1][t].time_ns) / 1e6;
    o.time_ratio = Ratio(o.trace1_time_ms, o.trace2_time_ms);
    o.fused_by = r12 > 1.5 ? 1 : 0;
    o.ratio = r12 > 1.5 ? r12 : r21;
    o.total_groups = m_count;
    report.opportunities.push_back(std::move(o));
  }

  // Step 8: by impact, descending; +inf first; stable.
  std::stable_sort(report.opportunities.begin(), report.opportunities.end(),
                   [](const FusionOpportunity& a, const FusionOpportunity& b) {
                     return a.impact() > b.impact();
                   });

  // Step 9: partial fusion via matched groups.
  std::vector<int64_t> matched_count[2] = {std::vector<int64_t>(ncat, 0),
                                           std::vector<int64_t>(ncat, 0)};
  for (int s = 0; s < 2; ++s)
    for (size_t p = 0; p < m_count; ++p)
      for (uint16_t t = 0; t < ncat; ++t) matched_count[s][t] += pair_counts[s][p * ncat + t];
  for (uint16_t t = 0; t < ncat; ++t) {
    const int64_t c1 = matched_count[0][t], c2 = matched_count[1][t];
    if (c1 == 0 || c2 == 0) continue;
    const double ratio = double(std::max(c1, c2)) / double(std::min(c1, c2));
    if (ratio < 1.3 || c1 + c2 < 100) continue;
    const int u = c1 > c2 ? 0 : 1;
    const int f = 1 - u;
    int64_t groups_analyzed = 0;
    std::vector<int64_t> target(ncat, 0);
    std::vector<uint16_t> target_order;
    for (size_t p = 0; p < m_count; ++p) {
      const uint32_t* cu = &pair_counts[u][p * ncat];
      const uint32_t* cf = &pair_counts[f][p * ncat];
      if (cu[t] == 0 || cf[t] != 0) continue;
      ++groups_analyzed;
      for (uint16_t x = 0; x < ncat; ++x) {
        if (x == t || x == other || cf[x] == 0) continue;
        int64_t diff = int64_t(cf[x]) - int64_t(cu[x]);
        if (diff <= 0) continue;
        if (target[x] == 0) target_order.push_back(x);
        target[x] += diff;
      }
    }
    if (target_order.empty() || groups_analyzed < 5) continue;
    std::stable_sort(target_order.begin(), target_order.end(),
                     [&](uint16_t a, uint16_t b) { return target[a] > target[b]; });
    FusionMapping m;
    m.kind = FusionMapping::Kind::kPartial;
    m.fused_side = f;
    m.fused_kernel_type = names[target_order[0]];
    m.fused_count = matched_count[f][t];
    m.unfused_sequence = {names[t]};
    m.unfused_count_per_type = {{names[t], matched_count[u][t]}};
    m.pattern_count = matched_count[u][t] - matched_count[f][t];
    m.pattern_confidence = double(groups_analyzed) / double(m_count);
    m.type = names[t];
    m.ratio = ratio;
    m.unfused_count = matched_count[u][t];
    m.groups_analyzed = groups_analyzed;
    for (size_t i = 0; i < target_order.size() && i < 3; ++i)
      m.targets.emplace_back(names[target_order[i]], target[target_order[i]]);
    report.mappings.push_back(std::move(m));
  }

  // Step 10: chains of one type (run lengths in the ts-ordered sequence).
  const std::vector<uint16_t>* sequence[2] = {&views[0].sequence, &views[1].sequence};
  const std::vector<ChainStats> chains[2] = {ChainsOf(*sequence[0], ncat),
                                             ChainsOf(*sequence[1], ncat)};
  std::vector<uint8_t> chain_handled(ncat, 0);
  for (uint16_t t = 0; t < ncat; ++t) {
    const ChainStats& a = chains[0][t];
    const ChainStats& b = chains[1][t];
    if (a.kernels == 0 && b.kernels == 0) continue;
    if (a.runs < 5 && b.runs < 5) continue;
    if (a.multi_runs == 0 && b.multi_runs == 0) continue;
    const int64_t chain_count[2] = {int64_t(a.multi_runs > 0 ? a.multi_runs : a.runs),
                                    int64_t(b.multi_runs > 0 ? b.multi_runs : b.runs)};
    if (chain_count[0] == 0 || chain_count[1] == 0) continue;
    const double avg[2] = {a.multi_runs > 0 ? double(a.multi_kernels) / double(a.multi_runs) : 1.0,
                           b.multi_runs > 0 ? double(b.multi_kernels) / double(b.multi_runs) : 1.0};
    const double chain_ratio = std::max(avg[0], avg[1]) / std::min(avg[0], avg[1]);
    const int64_t total[2] = {int64_t(a.kernels), int64_t(b.kernels)};
    if (!(chain_ratio > 2.0 && std::llabs(total[0] - total[1]) > 100)) continue;
    const int u = avg[0] > avg[1] ? 0 : 1;
    const int f = 1 - u;
    FusionMapping m;
    m.kind = FusionMapping::Kind::kChain;
    m.fused_side = f;
    m.fused_kernel_type = names[t];
    m.fused_count = total[f];
    m.unfused_sequence = {names[t], names[t]};
    m.unfused_count_per_type = {{names[t], total[u]}};
    m.pattern_count = total[u] - total[f];
    m.pattern_confidence = double(std::min(chain_count[0], chain_count[1])) /
                           double(std::max(chain_count[0], chain_count[1]));
    m.type = names[t];
    m.ratio = chain_ratio;
    m.unfused_avg = avg[u];
    m.fused_avg = avg[f];
    m.unfused_chains = chain_count[u];
    m.fused_chains = chain_count[f];
    m.unfused_total = total[u];
    m.fused_total = total[f];
    chain_handled[t] = 1;
    report.mappings.push_back(std::move(m));
  }

  // Step 11: sequence mappings over the whole traces, minus what is already said.
  std::vector<FusionMapping> global;
  FindSequenceMappings(*sequence[0], *sequence[1], names, other, &global);
  absl::flat_hash_map<std::string, bool> existing;
  for (const FusionMapping& m : report.mappings) existing[Evidence(m, kCompatLabels)] = true;
  for (FusionMapping& m : global) {
    uint16_t first_type = trace1.classifier->rule_set().category_index(m.unfused_sequence[0]);
    if (chain_handled[first_type] || existing.contains(Evidence(m, kCompatLabels))) continue;
    report.mappings.push_back(std::move(m));
  }
  return report;
}

}  // namespace tracefuse
