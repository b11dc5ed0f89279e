#include "tracefuse/analyze.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "analyze_internal.h"
#include "fmt/format.h"
#include "oneapi/tbb/parallel_invoke.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

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

const PerSide<std::string>& ReferenceLabels() {
  static const PerSide<std::string> labels{{"Trace 1", "Trace 2"}};
  return labels;
}

double Ratio(double a, double b) {
  return b == 0 ? std::numeric_limits<double>::infinity() : a / b;
}

std::vector<CategoryId> FusionMapping::UnfusedSequence() const {
  switch (kind) {
    case Kind::kSequence:
      return {fused_type, type};
    case Kind::kChain:
      return {type, type};
    default:
      return {type};
  }
}

std::vector<std::pair<CategoryId, int64_t>> FusionMapping::UnfusedCountPerType() const {
  if (kind == Kind::kSequence)
    return {{fused_type, fused_type_unfused_count}, {type, unfused_count}};
  return {{type, unfused_count}};
}

std::string Evidence(const FusionMapping& m, const std::vector<std::string>& categories,
                     const PerSide<std::string>& labels) {
  const std::string& fused = labels[m.fused_side];
  const std::string& unfused = labels[Opposite(m.fused_side)];
  const std::string& type = categories[m.type];
  const std::string& fused_type = categories[m.fused_type];
  switch (m.kind) {
    case FusionMapping::Kind::kSequence:
      return fmt::format("{} runs {}+{} separately, {} fuses into {}", unfused, fused_type, type,
                         fused, fused_type);
    case FusionMapping::Kind::kImbalance:
      return fmt::format("{} calls {} {:.1f}x more ({} vs {}), {} likely fuses into {}", unfused,
                         type, m.ratio, m.unfused_count, m.fused_count, fused, fused_type);
    case FusionMapping::Kind::kPartial: {
      std::string targets;
      for (const auto& [target, n] : m.targets) {
        if (!targets.empty()) targets += ", ";
        targets += fmt::format("{} (+{})", categories[target], n);
      }
      return fmt::format(
          "{} calls {} {:.1f}x more ({} vs {}). In {} groups where {} has {}, {} has more: {}",
          unfused, type, m.ratio, m.unfused_count, m.fused_count, m.groups_analyzed, unfused, type,
          fused, targets);
    }
    case FusionMapping::Kind::kChain:
      return fmt::format(
          "{} runs {} in chains of {:.0f} calls ({} chains, {} total), {} fuses to {:.0f} calls "
          "({} chains, {} total) - {:.1f}x more efficient",
          unfused, type, m.unfused_avg, m.unfused_chains, Thousands(m.unfused_count), fused,
          m.fused_avg, m.fused_chains, Thousands(m.fused_count), m.ratio);
  }
  return "";
}

GroupShape GroupShape::Of(const CategoryId* types, size_t count, bool has_attention, bool has_ffn) {
  GroupShape g;
  g.size = static_cast<uint32_t>(count);
  g.has_attention = has_attention;
  g.has_ffn = has_ffn;
  uint16_t max_type = 0;
  for (size_t i = 0; i < count; ++i) max_type = std::max<uint16_t>(max_type, types[i]);
  std::vector<uint32_t> seen(max_type + 1, 0), first(max_type + 1, UINT32_MAX);
  g.composition.assign(max_type / 64 + 1, 0);
  for (uint32_t i = 0; i < count; ++i) {
    if (seen[types[i]]++ == 0) first[types[i]] = i;
    g.composition[types[i] >> 6] |= uint64_t{1} << (types[i] & 63);
  }
  for (uint16_t t = 0; t <= max_type; ++t) {
    if (seen[t] > seen[g.dominant] || (seen[t] == seen[g.dominant] && first[t] < first[g.dominant]))
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

void FindSequenceMappings(const std::vector<CategoryId>& types1,
                          const std::vector<CategoryId>& types2, size_t ncat,
                          std::optional<CategoryId> other, std::vector<FusionMapping>* out) {
  const std::vector<CategoryId>* seq[2] = {&types1, &types2};
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
    const std::vector<CategoryId>& q = *seq[s];
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
      m.fused_side = static_cast<Side>(o);
      m.fused_type = pred;
      m.fused_count = count[o][pred];
      m.fused_type_unfused_count = count[s][pred];
      m.unfused_count = n;
      m.pattern_count = n;
      m.pattern_confidence = static_cast<double>(best) / static_cast<double>(n);
      m.type = type;
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
    m.fused_side = static_cast<Side>(f);
    m.fused_type = static_cast<uint16_t>(target);
    m.fused_count = count[f][t];
    m.pattern_count = count[u][t] - count[f][t];
    m.pattern_confidence =
        static_cast<double>(count[u][t] - count[f][t]) / static_cast<double>(count[u][t]);
    m.type = t;
    m.ratio = ratio;
    m.unfused_count = count[u][t];
    out->push_back(std::move(m));
  }
}

// --- §4.1: the whole analysis --------------------------------------------------------------------

namespace {

// What the merge needs of one trace, built in sequential passes over its kernel stream (one more,
// after matching, sums durations): the categories of the large groups' kernels, a byte per such
// kernel, and the ts-ordered category sequence of all kernels, a byte per kernel.
struct TraceView {
  static constexpr uint32_t kSmall = UINT32_MAX;  // slot_of_group for groups below the minimum

  const TraceProfile* profile = nullptr;
  std::vector<CategoryId> name_category;
  std::vector<uint8_t> name_attention, name_ffn;
  std::vector<uint32_t> large;          // group indices with size >= min, first-appearance order
  std::vector<uint32_t> slot_of_group;  // index into `large`, or kSmall
  // Large group `slot` holds types[offsets[slot] .. offsets[slot + 1]), its kernels' categories
  // in ts order, stable on trace order.
  std::vector<uint32_t> offsets;
  std::vector<CategoryId> types;
  std::vector<GroupShape> shapes;    // per large group
  std::vector<CategoryId> sequence;  // all kernels' types in ts order

  void Build(const TraceProfile& p, uint32_t min_group_size) {
    profile = &p;
    name_category = p.NameCategories();
    name_attention.resize(p.names.size());
    name_ffn.resize(p.names.size());
    for (uint32_t n = 0; n < p.names.size(); ++n) {
      std::string l = Lower(p.names[n]);
      auto has = [&](const char* s) { return l.find(s) != std::string::npos; };
      name_attention[n] = has("attention") || has("fmha");
      name_ffn[n] = has("cijk") || has("nvjet") || has("gemm");
    }
    slot_of_group.assign(p.group_size.size(), kSmall);
    offsets.push_back(0);
    for (uint32_t g = 0; g < p.group_size.size(); ++g) {
      if (p.group_size[g] < min_group_size) continue;
      slot_of_group[g] = static_cast<uint32_t>(large.size());
      large.push_back(g);
      offsets.push_back(offsets.back() + p.group_size[g]);
    }
    types.resize(offsets.back());

    // Pass 1, trace order: the shapes take "first seen" in list (trace) order.
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    std::vector<uint8_t> attention(large.size(), 0), ffn(large.size(), 0);
    std::vector<int64_t> last_ts(large.size(), std::numeric_limits<int64_t>::min());
    std::vector<uint8_t> in_ts_order(large.size(), 1);
    p.kernels.ForEach([&](const KernelRecord& k) {
      const uint32_t slot = k.group == kNoGroup ? kSmall : slot_of_group[k.group];
      if (slot == kSmall) return;
      types[fill[slot]++] = name_category[k.name];
      attention[slot] |= name_attention[k.name];
      ffn[slot] |= name_ffn[k.name];
      if (k.ts_ns < last_ts[slot]) in_ts_order[slot] = 0;
      last_ts[slot] = k.ts_ns;
    });
    shapes.reserve(large.size());
    for (uint32_t slot = 0; slot < large.size(); ++slot) {
      shapes.push_back(GroupShape::Of(&types[offsets[slot]], offsets[slot + 1] - offsets[slot],
                                      attention[slot] != 0, ffn[slot] != 0));
    }

    sequence = p.TypeSequence();

    // Groups whose kernels are not in ts order in the trace (none in any real trace at hand) are
    // listed again, in place, from a walk in ts order: the global order restricted to a group is
    // the group's stable ts order.
    bool regroup = false;
    for (uint32_t slot = 0; slot < large.size(); ++slot) {
      if (!in_ts_order[slot]) {
        regroup = true;
        fill[slot] = offsets[slot];
      }
    }
    if (!regroup) return;
    p.kernels.ForEachInTsOrder([&](const KernelRecord& k) {
      if (k.group == kNoGroup) return;
      const uint32_t slot = slot_of_group[k.group];
      if (slot != kSmall && !in_ts_order[slot]) types[fill[slot]++] = name_category[k.name];
    });
  }

  // Per category, the number of kernels of large group `slot`.
  void CountTypes(uint32_t slot, std::vector<uint32_t>* counts) const {
    std::fill(counts->begin(), counts->end(), 0);
    for (uint32_t i = offsets[slot]; i < offsets[slot + 1]; ++i) ++(*counts)[types[i]];
  }

  // Per category, the total duration of the kernels in the large groups marked in `matched`.
  std::vector<int64_t> MatchedTime(const std::vector<uint8_t>& matched, size_t ncat) const {
    std::vector<int64_t> time(ncat, 0);
    profile->kernels.ForEach([&](const KernelRecord& k) {
      if (k.group == kNoGroup) return;
      const uint32_t slot = slot_of_group[k.group];
      if (slot != kSmall && matched[slot]) time[name_category[k.name]] += k.dur_ns;
    });
    return time;
  }
};

}  // namespace

FusionReport AnalyzeFusion(const TraceProfile& trace1, const TraceProfile& trace2,
                           const FusionOptions& options) {
  assert(trace1.kernels.size() == trace1.kernel_count &&
         trace2.kernels.size() == trace2.kernel_count);
  const std::vector<std::string>& names = trace1.classifier->rule_set().categories();
  const size_t ncat = names.size();
  const std::optional<CategoryId> other = trace1.classifier->rule_set().category_index("Other");
  // The two traces' views are independent: build them side by side.
  TraceView views[2];
  tbb::parallel_invoke([&] { views[0].Build(trace1, options.min_group_size); },
                       [&] { views[1].Build(trace2, options.min_group_size); });

  FusionReport report;
  report.categories = names;
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
  std::vector<uint32_t> pair_counts[2] = {std::vector<uint32_t>(ncat), std::vector<uint32_t>(ncat)};
  std::vector<CategoryId> group_types[2];
  std::vector<uint8_t> matched[2] = {std::vector<uint8_t>(views[0].large.size(), 0),
                                     std::vector<uint8_t>(views[1].large.size(), 0)};
  for (size_t p = 0; p < m_count; ++p) {
    const uint32_t slot[2] = {matches[p].first, matches[p].second};
    for (int s = 0; s < 2; ++s) {
      const TraceView& v = views[s];
      matched[s][slot[s]] = 1;
      group_types[s].assign(v.types.begin() + v.offsets[slot[s]],
                            v.types.begin() + v.offsets[slot[s] + 1]);
      v.CountTypes(slot[s], &pair_counts[s]);
    }
    for (uint16_t t = 0; t < ncat; ++t) {
      const uint32_t c1 = pair_counts[0][t], c2 = pair_counts[1][t];
      if (c1 == 0 && c2 == 0) continue;
      Diff& d = diffs[t];
      d.count[0] += c1;
      d.count[1] += c2;
      d.groups += 1;
      d.groups_with_diff += (c1 != c2);
      if (!diff_seen[t]) {
        diff_seen[t] = 1;
        diff_order.push_back(t);
      }
    }
    size_t before = report.mappings.size();
    FindSequenceMappings(group_types[0], group_types[1], ncat, other, &report.mappings);
    for (size_t i = before; i < report.mappings.size(); ++i) {
      report.mappings[i].correlation_groups = {trace1.group_correlation[views[0].large[slot[0]]],
                                               trace2.group_correlation[views[1].large[slot[1]]]};
    }
  }
  // A type's time over the matched groups of one side: one more pass over each kernel stream.
  std::vector<int64_t> matched_time[2];
  tbb::parallel_invoke([&] { matched_time[0] = views[0].MatchedTime(matched[0], ncat); },
                       [&] { matched_time[1] = views[1].MatchedTime(matched[1], ncat); });
  for (uint16_t t : diff_order) {
    diffs[t].time_ns[0] = matched_time[0][t];
    diffs[t].time_ns[1] = matched_time[1][t];
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
    o.fused_by = diff_ratio > 1.5 ? Side::kTrace2 : Side::kTrace1;
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
    o.fused_by = r12 > 1.5 ? Side::kTrace2 : Side::kTrace1;
    o.ratio = r12 > 1.5 ? r12 : r21;
    o.total_groups = m_count;
    report.opportunities.push_back(std::move(o));
  }

  // Step 8: by impact, descending; +inf first; stable.
  std::stable_sort(report.opportunities.begin(), report.opportunities.end(),
                   [](const FusionOpportunity& a, const FusionOpportunity& b) {
                     return a.impact() > b.impact();
                   });

  // Step 9: partial fusion via matched groups, for the types whose matched counts differ by at
  // least 1.3x over at least 100 kernels. One more walk over the matched pairs serves them all.
  struct Partial {
    uint16_t type;
    int unfused_side;
    double ratio;
    int64_t groups_analyzed = 0;
    std::vector<int64_t> target;
    std::vector<uint16_t> target_order;  // targets in order of first appearance
  };
  std::vector<Partial> partials;
  for (uint16_t t = 0; t < ncat; ++t) {
    const int64_t c1 = diffs[t].count[0], c2 = diffs[t].count[1];
    if (c1 == 0 || c2 == 0) continue;
    const double ratio = double(std::max(c1, c2)) / double(std::min(c1, c2));
    if (ratio < 1.3 || c1 + c2 < 100) continue;
    partials.push_back(Partial{t, c1 > c2 ? 0 : 1, ratio, 0, std::vector<int64_t>(ncat, 0), {}});
  }
  if (!partials.empty()) {
    for (size_t p = 0; p < m_count; ++p) {
      views[0].CountTypes(matches[p].first, &pair_counts[0]);
      views[1].CountTypes(matches[p].second, &pair_counts[1]);
      for (Partial& x : partials) {
        const std::vector<uint32_t>& cu = pair_counts[x.unfused_side];
        const std::vector<uint32_t>& cf = pair_counts[1 - x.unfused_side];
        if (cu[x.type] == 0 || cf[x.type] != 0) continue;
        ++x.groups_analyzed;
        for (uint16_t y = 0; y < ncat; ++y) {
          if (y == x.type || y == other || cf[y] == 0) continue;
          int64_t diff = int64_t(cf[y]) - int64_t(cu[y]);
          if (diff <= 0) continue;
          if (x.target[y] == 0) x.target_order.push_back(y);
          x.target[y] += diff;
        }
      }
    }
  }
  for (Partial& x : partials) {
    if (x.target_order.empty() || x.groups_analyzed < 5) continue;
    std::stable_sort(x.target_order.begin(), x.target_order.end(),
                     [&](uint16_t a, uint16_t b) { return x.target[a] > x.target[b]; });
    const int u = x.unfused_side, f = 1 - u;
    FusionMapping m;
    m.kind = FusionMapping::Kind::kPartial;
    m.fused_side = static_cast<Side>(f);
    m.fused_type = x.target_order[0];
    m.fused_count = diffs[x.type].count[f];
    m.pattern_count = diffs[x.type].count[u] - diffs[x.type].count[f];
    m.pattern_confidence = double(x.groups_analyzed) / double(m_count);
    m.type = x.type;
    m.ratio = x.ratio;
    m.unfused_count = diffs[x.type].count[u];
    m.groups_analyzed = x.groups_analyzed;
    for (size_t i = 0; i < x.target_order.size() && i < 3; ++i)
      m.targets.emplace_back(x.target_order[i], x.target[x.target_order[i]]);
    report.mappings.push_back(std::move(m));
  }

  // Step 10: chains of one type (run lengths in the ts-ordered sequence).
  const std::vector<CategoryId>* sequence[2] = {&views[0].sequence, &views[1].sequence};
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
    m.fused_side = static_cast<Side>(f);
    m.fused_type = t;
    m.fused_count = total[f];
    m.unfused_count = total[u];
    m.pattern_count = total[u] - total[f];
    m.pattern_confidence = double(std::min(chain_count[0], chain_count[1])) /
                           double(std::max(chain_count[0], chain_count[1]));
    m.type = t;
    m.ratio = chain_ratio;
    m.unfused_avg = avg[u];
    m.fused_avg = avg[f];
    m.unfused_chains = chain_count[u];
    m.fused_chains = chain_count[f];
    chain_handled[t] = 1;
    report.mappings.push_back(std::move(m));
  }

  // Step 11: sequence mappings over the whole traces, minus what is already said. Like the
  // reference, compare evidence sentences; hold only the few candidates' sentences, not one per
  // mapping (there can be hundreds of thousands of per-group mappings).
  std::vector<FusionMapping> global;
  FindSequenceMappings(*sequence[0], *sequence[1], ncat, other, &global);
  absl::flat_hash_map<std::string, bool> already_said;
  for (const FusionMapping& m : global)
    already_said.emplace(Evidence(m, names, ReferenceLabels()), false);
  if (!already_said.empty()) {
    for (const FusionMapping& m : report.mappings) {
      auto it = already_said.find(Evidence(m, names, ReferenceLabels()));
      if (it != already_said.end()) it->second = true;
    }
  }
  for (FusionMapping& m : global) {
    // The reference skips a mapping whose unfused_sequence starts with a chained type.
    const uint16_t first_type = m.kind == FusionMapping::Kind::kSequence ? m.fused_type : m.type;
    if (chain_handled[first_type] || already_said[Evidence(m, names, ReferenceLabels())]) continue;
    report.mappings.push_back(std::move(m));
  }
  return report;
}

}  // namespace tracefuse
