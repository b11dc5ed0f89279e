#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "oneapi/tbb/parallel_for.h"
#include "tracefuse/analyze/op_compare.h"

namespace tracefuse {
namespace {

using Sequence = std::vector<uint32_t>;
using Matches = std::vector<std::pair<uint32_t, uint32_t>>;

// Snake is a diagonal run of common elements, [x, u) of a against [y, v) of b.
struct Snake {
  int64_t x, y, u, v;
};

// MiddleSnake() finds the middle snake of a[a0, a1) against b[b0, b1) (Myers 1986, section 4b),
// in coordinates relative to (a0, b0). Both ends of the box must differ (no common prefix or
// suffix) and both sides be non-empty.
Snake MiddleSnake(const Sequence& a, const Sequence& b, int64_t a0, int64_t a1, int64_t b0,
                  int64_t b1, std::vector<int64_t>* forward, std::vector<int64_t>* backward) {
  const int64_t n = a1 - a0, m = b1 - b0, delta = n - m;
  const bool odd = (delta & 1) != 0;
  const int64_t offset = n + m + 1;
  forward->assign(static_cast<size_t>(2 * offset + 1), 0);
  backward->assign(static_cast<size_t>(2 * offset + 1), 0);
  auto vf = [&](int64_t k) -> int64_t& { return (*forward)[static_cast<size_t>(offset + k)]; };
  auto vb = [&](int64_t k) -> int64_t& { return (*backward)[static_cast<size_t>(offset + k)]; };
  for (int64_t d = 0; d <= (n + m + 1) / 2; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && vf(k - 1) < vf(k + 1))) ? vf(k + 1) : vf(k - 1) + 1;
      int64_t y = x - k;
      const int64_t xs = x, ys = y;
      while (x < n && y < m && a[a0 + x] == b[b0 + y]) ++x, ++y;
      vf(k) = x;
      if (odd && k - delta >= -(d - 1) && k - delta <= d - 1 && vf(k) + vb(delta - k) >= n) {
        return Snake{xs, ys, x, y};
      }
    }
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && vb(k - 1) < vb(k + 1))) ? vb(k + 1) : vb(k - 1) + 1;
      int64_t y = x - k;
      const int64_t xs = x, ys = y;
      while (x < n && y < m && a[a1 - 1 - x] == b[b1 - 1 - y]) ++x, ++y;
      vb(k) = x;
      if (!odd && k - delta >= -d && k - delta <= d && vb(k) + vf(delta - k) >= n) {
        return Snake{n - x, m - y, n - xs, m - ys};
      }
    }
  }
  std::abort();  // unreachable: the snakes meet by d = ceil((n + m) / 2)
}

class Differ {
 public:
  Differ(const Sequence& a, const Sequence& b) : a_(a), b_(b) {}

  Matches Run() {
    Recurse(0, static_cast<int64_t>(a_.size()), 0, static_cast<int64_t>(b_.size()));
    return std::move(out_);
  }

 private:
  void Recurse(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
    while (a0 < a1 && b0 < b1 && a_[a0] == b_[b0]) Match(a0++, b0++);
    const int64_t tail = std::min(a1 - a0, b1 - b0);
    int64_t common_tail = 0;
    while (common_tail < tail && a_[a1 - 1 - common_tail] == b_[b1 - 1 - common_tail]) {
      ++common_tail;
    }
    a1 -= common_tail;
    b1 -= common_tail;
    if (a0 < a1 && b0 < b1) {
      const Snake s = MiddleSnake(a_, b_, a0, a1, b0, b1, &forward_, &backward_);
      Recurse(a0, a0 + s.x, b0, b0 + s.y);
      for (int64_t i = 0; i < s.u - s.x; ++i) Match(a0 + s.x + i, b0 + s.y + i);
      Recurse(a0 + s.u, a1, b0 + s.v, b1);
    }
    for (int64_t i = 0; i < common_tail; ++i) Match(a1 + i, b1 + i);
  }

  void Match(int64_t i, int64_t j) {
    out_.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(j));
  }

  const Sequence& a_;
  const Sequence& b_;
  Matches out_;
  std::vector<int64_t> forward_, backward_;  // reused by every middle-snake search
};

}  // namespace

Matches MyersMatches(const Sequence& a, const Sequence& b) { return Differ(a, b).Run(); }

int64_t TimeDelta(const PerSide<OpSide>& sides) {
  return sides[Side::kTrace1].time_ns - sides[Side::kTrace2].time_ns;
}

std::optional<double> TimeRatio(const PerSide<OpSide>& sides) {
  const int64_t below = sides[Side::kTrace2].time_ns;
  if (below == 0) return std::nullopt;
  return static_cast<double>(sides[Side::kTrace1].time_ns) / static_cast<double>(below);
}

bool EditDistanceExceeds(const Sequence& a, const Sequence& b, uint32_t cap) {
  const int64_t n = static_cast<int64_t>(a.size()), m = static_cast<int64_t>(b.size());
  const int64_t limit = std::min<int64_t>(cap, n + m);  // no script is longer than n + m
  const int64_t offset = limit + 1;
  std::vector<int64_t> v(static_cast<size_t>(2 * offset + 1), 0);
  auto at = [&](int64_t k) -> int64_t& { return v[static_cast<size_t>(offset + k)]; };
  for (int64_t d = 0; d <= limit; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      int64_t y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      at(k) = x;
      if (x >= n && y >= m) return false;
    }
  }
  return true;
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// NameCount is one kernel name's count and time.
struct NameCount {
  uint64_t count = 0;
  int64_t time_ns = 0;

  void Add(uint64_t more, int64_t more_ns) {
    count += more;
    time_ns += more_ns;
  }
};

// NameTotals is kernels by name (the profile's name ids): the families and their examples come
// from them once the counting is done.
using NameTotals = absl::flat_hash_map<uint32_t, NameCount>;

// SortKernels() puts kernels by time (descending), then family.
void SortKernels(std::vector<OpKernels>* kernels) {
  std::sort(kernels->begin(), kernels->end(), [](const OpKernels& x, const OpKernels& y) {
    if (x.time_ns != y.time_ns) return x.time_ns > y.time_ns;
    return x.family < y.family;
  });
}

// KernelNames maps one trace's kernel names (the profile's name ids) to their families
// (OpTree::name_family, names held by the comparison) and their full names (the profile's own,
// which HoldExamples() replaces by held copies once the counting is done).
struct KernelNames {
  const std::vector<uint32_t>* name_family = nullptr;
  std::vector<std::string_view> families;           // per family
  const std::vector<std::string>* names = nullptr;  // per profile name

  // ByFamily() is `totals` (pairs of a name id and its NameCount: a NameTotals or a short list of
  // them) by family, each with its example, sorted: by time (descending), then family.
  template <typename Totals>
  std::vector<OpKernels> ByFamily(const Totals& totals) const {
    std::vector<OpKernels> kernels;
    std::vector<uint32_t> family_of;  // per place in `kernels`
    std::vector<int64_t> example_ns;  // per place: the example's own time
    // Most units and groups run a few families: a linear search; a hash map past that.
    constexpr size_t kSearchedFamilies = 16;
    absl::flat_hash_map<uint32_t, size_t> at;
    for (const auto& [name, counted] : totals) {
      const uint32_t family = (*name_family)[name];
      size_t place = kernels.size();
      if (kernels.size() <= kSearchedFamilies) {
        place = static_cast<size_t>(std::find(family_of.begin(), family_of.end(), family) -
                                    family_of.begin());
      } else {
        if (at.empty()) {
          for (size_t i = 0; i < family_of.size(); ++i) at.emplace(family_of[i], i);
        }
        place = at.try_emplace(family, kernels.size()).first->second;
      }
      const std::string_view name_text = (*names)[name];
      if (place == kernels.size()) {
        kernels.push_back(OpKernels{families[family], name_text, 0, 0});
        family_of.push_back(family);
        example_ns.push_back(counted.time_ns);
      }
      OpKernels& k = kernels[place];
      k.count += counted.count;
      k.time_ns += counted.time_ns;
      int64_t& best = example_ns[place];
      if (counted.time_ns > best || (counted.time_ns == best && name_text < k.example)) {
        best = counted.time_ns;
        k.example = name_text;
      }
    }
    SortKernels(&kernels);
    return kernels;
  }
};

struct TraceUnits;

// SideTotals accumulates an OpSide from the units of one trace; their kernels by name come from
// CountKernels(), told by family and sorted once at the end.
struct SideTotals {
  uint64_t instances = 0;
  int64_t time_ns = 0;
  NameTotals kernels;

  void Add(const TraceUnits& trace, size_t unit);
  void AddKernels(uint32_t name, uint64_t count, int64_t time_ns) {
    kernels[name].Add(count, time_ns);
  }
  void Merge(const SideTotals& other) {
    instances += other.instances;
    time_ns += other.time_ns;
    for (const auto& [name, totals] : other.kernels) AddKernels(name, totals.count, totals.time_ns);
  }
  OpSide ToSide(const KernelNames& names) const {
    OpSide side;
    side.instances = instances;
    side.time_ns = time_ns;
    side.kernels = names.ByFamily(kernels);
    return side;
  }
};

// StepUnits is where one step's units are: [begin, end) of a trace's units, which come by step.
struct StepUnits {
  int64_t step;  // StepKey()
  size_t begin, end;
};

// TraceUnits is one trace's units as the comparison sees them: keys shared by both traces,
// scope paths, and where each step's units begin.
struct TraceUnits {
  const TraceProfile* profile;
  const OpTree* tree;
  std::vector<uint32_t> key;                          // per unit
  std::vector<std::string> scope_path;                // per scope
  std::vector<std::vector<std::string>> scope_parts;  // per scope, outermost first
  std::vector<StepUnits> steps;                       // by step key
  // The tree's op names and the kernel names, as held by the comparison (OpComparison::names).
  std::vector<std::string_view> op_names;  // per tree name
  KernelNames kernel_names;
  // Written while the steps are aligned, by the one block that holds each unit's step.
  mutable std::vector<uint32_t> row;    // per unit: its row's key, (key << 1) | matched
  mutable std::vector<uint32_t> group;  // per unit: its unmatched group, or kNone
  // Trace 1's units only: the matched trace-2 unit, or kNone (until CompareTypeWork(); then
  // OpComparison::partners when asked).
  mutable std::vector<uint32_t> partner;
  std::vector<WorkTotals> set_work;  // per work set of the tree (WorkOfSets())
};

void SideTotals::Add(const TraceUnits& trace, size_t unit) {
  ++instances;
  time_ns += trace.tree->units[unit].time_ns;
}

// AddWork() adds `unit`'s perf-model work to `work`.
void AddWork(const TraceUnits& trace, size_t unit, WorkTotals* work) {
  if (!trace.tree->unit_work.empty() && trace.tree->unit_work[unit] != kNoWork) {
    work->Add(trace.set_work[trace.tree->unit_work[unit]]);
  }
}

int64_t StepKey(int32_t step) { return step == kNoStep ? INT64_MAX : step; }
int32_t StepIndex(int64_t key) { return key == INT64_MAX ? kNoStep : static_cast<int32_t>(key); }

struct RowTotals {
  uint64_t key = 0;  // (the units' key, matched)
  OpRow row;
  PerSide<SideTotals> sides;
};

// Candidate is a matched pair that may be among the top instances.
struct Candidate {
  int64_t magnitude;  // |delta|
  int64_t step;       // StepKey()
  uint64_t index;
  size_t u1, u2;
};
// Before() is the instances' order: larger |delta| first, then step, then index.
bool Before(const Candidate& a, const Candidate& b) {
  if (a.magnitude != b.magnitude) return a.magnitude > b.magnitude;
  if (a.step != b.step) return a.step < b.step;
  return a.index < b.index;
}

// Partial is what aligning a block of consecutive steps gives; the blocks are aligned in
// parallel and merged in step order, so the result does not depend on the blocks.
struct Partial {
  absl::flat_hash_map<uint64_t, size_t> row_ids;  // (key, matched) -> row
  std::vector<RowTotals> rows;
  std::vector<Candidate> top;  // a heap: the last in Before() order on top
  std::vector<UnmatchedGroup> groups;
  uint64_t matched = 0;
  uint64_t capped = 0;
  // Fusion candidates, their units and scopes, numbered within the block.
  std::vector<FusionCandidate> candidates;
  PerSide<std::vector<uint32_t>> candidate_units;
  StringMap<uint32_t> scope_ids;
  std::vector<std::string> scopes;
};

// KernelCount() is how many kernels units[u] ran.
uint64_t KernelCount(const OpTree& tree, size_t u) { return tree.units[u].kernels; }

// DiffersInKernels() says whether two places may be a fusion difference: both ran kernels, not
// as many.
bool DiffersInKernels(uint64_t kernels1, uint64_t kernels2) {
  return kernels1 > 0 && kernels2 > 0 && kernels1 != kernels2;
}

// Comparer builds an OpComparison in the steps of CompareOps(): key the units, align blocks of
// steps in parallel, merge them, then sort the tables.
class Comparer {
 public:
  Comparer(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees,
           const OpCompareOptions& options)
      : options_(options),
        traces_{{Prepare(*profiles[Side::kTrace1], *trees[Side::kTrace1]),
                 Prepare(*profiles[Side::kTrace2], *trees[Side::kTrace2])}} {
    traces_[0].partner.assign(traces_[0].tree->units.size(), kNone);
  }

  OpComparison Run() {
    std::vector<int64_t> steps;
    for (const TraceUnits& t : traces_) {
      for (const StepUnits& s : t.steps) steps.push_back(s.step);
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    constexpr size_t kStepsPerBlock = 64;
    std::vector<Partial> blocks((steps.size() + kStepsPerBlock - 1) / kStepsPerBlock);
    tbb::parallel_for(size_t{0}, blocks.size(), [&](size_t b) {
      const size_t end = std::min(steps.size(), (b + 1) * kStepsPerBlock);
      for (size_t s = b * kStepsPerBlock; s < end; ++s) AlignStep(steps[s], &blocks[b]);
    });
    Partial all;
    size_t groups = 0;
    for (TraceUnits& t : traces_) t.key = std::vector<uint32_t>();  // aligned: no longer needed
    for (const Partial& block : blocks) groups += block.groups.size();
    all.groups.reserve(groups);
    std::vector<size_t> first_group(blocks.size());
    for (size_t b = 0; b < blocks.size(); ++b) {
      first_group[b] = all.groups.size();
      Merge(std::move(blocks[b]), &all);
    }
    NumberGroups(steps, kStepsPerBlock, first_group);
    std::vector<Candidate> top = std::move(all.top);
    std::sort(top.begin(), top.end(), Before);
    PerSide<std::vector<NameTotals>> instance_kernels;
    PerSide<std::vector<UnitCategoryWork>> unit_work;
    tbb::parallel_for(size_t{0}, size_t{2}, [&](size_t s) {
      instance_kernels[kSides[s]] = CountKernels(kSides[s], top, &all);
      unit_work[kSides[s]] =
          UnitCategoryWorkOf(*traces_[s].profile, *traces_[s].tree, traces_[s].set_work);
    });
    CompareTypeWork(unit_work);
    if (options_.keep_partners) out_.partners = std::move(traces_[0].partner);
    traces_[0].partner = std::vector<uint32_t>();
    AddNoLaunchRow(&all);
    Summarize(&all, top, instance_kernels);
    HoldExamples();
    return std::move(out_);
  }

 private:
  TraceUnits Prepare(const TraceProfile& profile, const OpTree& tree) {
    TraceUnits t;
    t.profile = &profile;
    t.tree = &tree;
    t.op_names = HoldNames(tree.names);
    t.kernel_names.name_family = &tree.name_family;
    t.kernel_names.families = HoldNames(tree.families);
    t.kernel_names.names = &profile.names;
    t.set_work = WorkOfSets(tree);
    t.row.assign(tree.units.size(), kNone);
    t.group.assign(tree.units.size(), kNone);
    t.scope_parts.resize(tree.scopes.size());
    t.scope_path.resize(tree.scopes.size());
    for (size_t s = 1; s < tree.scopes.size(); ++s) {  // parents come before their children
      const ScopeNode& node = tree.scopes[s];
      t.scope_parts[s] = t.scope_parts[node.parent];
      t.scope_parts[s].push_back(tree.names[node.name]);
      t.scope_path[s] = tree.ScopePath(static_cast<uint32_t>(s));
    }
    t.key.resize(tree.units.size());
    absl::flat_hash_map<uint64_t, uint32_t> key_of;  // (name, scope) in this tree -> key
    for (size_t u = 0; u < tree.units.size(); ++u) {
      const OpUnit& unit = tree.units[u];
      auto [known, added] = key_of.try_emplace((uint64_t{unit.name} << 32) | unit.scope, 0);
      if (added) {
        const std::string key = tree.names[unit.name] + '\0' + t.scope_path[unit.scope];
        known->second =
            key_ids_.try_emplace(key, static_cast<uint32_t>(key_ids_.size())).first->second;
      }
      t.key[u] = known->second;
      // Units come by step (kNoStep, whose key is the largest, last): a new entry only where the
      // step changes.
      if (u == 0 || tree.units[u - 1].step != unit.step) {
        t.steps.push_back(StepUnits{StepKey(unit.step), u, u});
      }
      t.steps.back().end = u + 1;
    }
    return t;
  }

  // CompareTypeWork() credits each matched pair whose units credit FLOPs to the same type (by
  // name: the traces' rule sets may differ) to that type on both sides; every other unit with
  // FLOPs is left out, and counted.
  void CompareTypeWork(const PerSide<std::vector<UnitCategoryWork>>& unit_work) {
    const PerSide<const TraceProfile*> profiles = {traces_[0].profile, traces_[1].profile};
    const std::vector<UnitCategoryWork>& first = unit_work[Side::kTrace1];
    const std::vector<UnitCategoryWork>& second = unit_work[Side::kTrace2];
    if (first.empty() && second.empty()) return;
    auto credits = [](const std::vector<UnitCategoryWork>& units, uint32_t u) {
      return u < units.size() && units[u].credits;
    };
    std::vector<TypeWork> by_category(profiles[Side::kTrace1]->category_count());
    std::vector<bool> second_compared(second.size());
    for (uint32_t u1 = 0; u1 < traces_[0].partner.size(); ++u1) {
      const uint32_t u2 = traces_[0].partner[u1];
      if (!credits(first, u1) || u2 == kNone || !credits(second, u2)) continue;
      const UnitCategoryWork& w1 = first[u1];
      const UnitCategoryWork& w2 = second[u2];
      if (profiles[Side::kTrace1]->category_name(w1.category) !=
          profiles[Side::kTrace2]->category_name(w2.category)) {
        continue;
      }
      TypeWork& type = by_category[w1.category];
      ++type.pairs;
      type.work[Side::kTrace1].Add(w1.flops, w1.time_ns);
      type.work[Side::kTrace2].Add(w2.flops, w2.time_ns);
      second_compared[u2] = true;
    }
    for (size_t c = 0; c < by_category.size(); ++c) {
      if (by_category[c].pairs == 0) continue;
      by_category[c].type = profiles[Side::kTrace1]->category_name(static_cast<CategoryId>(c));
      out_.type_work.push_back(std::move(by_category[c]));
    }
    for (uint32_t u1 = 0; u1 < first.size(); ++u1) {
      const uint32_t u2 = traces_[0].partner[u1];
      const bool compared = u2 != kNone && u2 < second_compared.size() && second_compared[u2];
      CountLeftOut(first[u1], compared, &out_.type_work_left_out[Side::kTrace1]);
    }
    for (uint32_t u2 = 0; u2 < second.size(); ++u2) {
      CountLeftOut(second[u2], second_compared[u2], &out_.type_work_left_out[Side::kTrace2]);
    }
  }

  static void CountLeftOut(const UnitCategoryWork& unit, bool compared, WorkLeftOut* left_out) {
    if (!unit.credits) return;
    if (__builtin_add_overflow(left_out->all_flops, unit.flops, &left_out->all_flops)) {
      left_out->all_flops = UINT64_MAX;  // saturates, as CategoryWork's FLOPs do
    }
    if (compared) return;
    ++left_out->ops;
    left_out->work.Add(unit.flops, unit.time_ns);
  }

  // HoldExamples() makes the kernels' examples, which view the profiles' names while counting,
  // view copies the comparison holds: only the names shown as examples, each once.
  void HoldExamples() {
    absl::flat_hash_map<const char*, std::string_view> held;  // a profile name's data -> copy
    auto hold = [&](std::vector<OpKernels>* kernels) {
      for (OpKernels& k : *kernels) {
        auto [it, added] = held.try_emplace(k.example.data(), std::string_view());
        if (added) it->second = HoldName(k.example);
        k.example = it->second;
      }
    };
    for (OpRow& row : out_.ops) {
      for (Side side : kSides) hold(&row.sides[side].kernels);
    }
    for (UnmatchedGroup& group : out_.unmatched_groups) {
      for (Side side : kSides) hold(&group.sides[side].kernels);
    }
    for (MatchedInstance& instance : out_.top_instances) {
      for (Side side : kSides) hold(&instance.sides[side].kernels);
    }
  }

  std::string_view HoldName(std::string_view name) {
    auto [it, added] = held_names_.try_emplace(name, std::string_view());
    if (added) it->second = out_.names.emplace_back(name);
    return it->second;
  }

  // HoldNames() is `names` as held by the comparison, each distinct name once.
  std::vector<std::string_view> HoldNames(const std::vector<std::string>& names) {
    std::vector<std::string_view> held;
    held.reserve(names.size());
    for (const std::string& name : names) held.push_back(HoldName(name));
    return held;
  }

  // NumberGroups() turns each unit's group, numbered within its block of steps, into its place
  // among all the groups: block b's groups begin at first_group[b].
  void NumberGroups(const std::vector<int64_t>& steps, size_t steps_per_block,
                    const std::vector<size_t>& first_group) {
    for (TraceUnits& t : traces_) {
      for (const StepUnits& s : t.steps) {
        const size_t block =
            static_cast<size_t>(std::lower_bound(steps.begin(), steps.end(), s.step) -
                                steps.begin()) /
            steps_per_block;
        for (size_t u = s.begin; u < s.end; ++u) {
          if (t.group[u] != kNone) t.group[u] += static_cast<uint32_t>(first_group[block]);
        }
      }
    }
  }

  // CountKernels() counts one side's kernels by name into the rows and unmatched groups of
  // their units, and returns those of the `top` instances' units: one pass over the kernel
  // records, in which a unit's kernels mostly come together.
  std::vector<NameTotals> CountKernels(Side side, const std::vector<Candidate>& top,
                                       Partial* all) const {
    const TraceUnits& t = traces_[static_cast<size_t>(side)];
    std::vector<NameTotals> instances(top.size());
    absl::flat_hash_map<uint32_t, size_t> instance_of;  // unit -> its place in `top`
    for (size_t i = 0; i < top.size(); ++i) {
      instance_of.try_emplace(static_cast<uint32_t>(side == Side::kTrace1 ? top[i].u1 : top[i].u2),
                              i);
    }
    // A group has few kernel names: a short list each, where a hash map each would take more
    // than the groups themselves (10^5 of them on a 4 GB pair).
    std::vector<std::vector<Counted>> groups(all->groups.size());
    std::vector<Counted> run;  // the current unit's kernels, by name
    // Where each name is in `run` (kNone: not there): a graph replay runs hundreds of names.
    std::vector<uint32_t> place_in_run(t.profile->names.size(), kNone);
    uint32_t current = kNone;
    auto flush = [&] {
      if (current == kNone) return;
      for (const Counted& c : run) place_in_run[c.name] = kNone;
      NameTotals& row = all->rows[all->row_ids.at(t.row[current])].sides[side].kernels;
      auto instance = instance_of.find(current);
      for (const Counted& c : run) {
        row[c.name].Add(c.counted.count, c.counted.time_ns);
        if (t.group[current] != kNone)
          Count(c.name, c.counted.count, c.counted.time_ns, &groups[t.group[current]]);
        if (instance != instance_of.end()) {
          instances[instance->second][c.name].Add(c.counted.count, c.counted.time_ns);
        }
      }
      run.clear();
    };
    t.profile->kernels.ForEach([&](const KernelRecord& k) {
      if (k.group == kNoGroup) return;
      const uint32_t unit = t.tree->group_unit[k.group];
      if (unit == kNoUnit) return;
      if (unit != current) {
        flush();
        current = unit;
      }
      uint32_t& place = place_in_run[k.name];
      if (place == kNone) {
        place = static_cast<uint32_t>(run.size());
        run.push_back(Counted{k.name, {}});
      }
      run[place].counted.Add(1, k.dur_ns);
    });
    flush();
    for (size_t g = 0; g < groups.size(); ++g) {
      all->groups[g].sides[side].kernels = t.kernel_names.ByFamily(groups[g]);
      groups[g] = std::vector<Counted>();
    }
    return instances;
  }

  // Counted is one name's kernels in a short list of them.
  struct Counted {
    uint32_t name;
    NameCount counted;
  };
  static void Count(uint32_t name, uint64_t count, int64_t time_ns, std::vector<Counted>* list) {
    auto it = std::find_if(list->begin(), list->end(),
                           [name](const Counted& c) { return c.name == name; });
    if (it == list->end()) it = list->insert(list->end(), Counted{name, {}});
    it->counted.Add(count, time_ns);
  }

  std::pair<size_t, size_t> StepRange(const TraceUnits& t, int64_t step) const {
    auto it = std::lower_bound(t.steps.begin(), t.steps.end(), step,
                               [](const StepUnits& s, int64_t key) { return s.step < key; });
    return it == t.steps.end() || it->step != step ? std::pair<size_t, size_t>{0, 0}
                                                   : std::pair<size_t, size_t>{it->begin, it->end};
  }

  void AlignStep(int64_t step, Partial* p) const {
    const auto [b1, e1] = StepRange(traces_[0], step);
    const auto [b2, e2] = StepRange(traces_[1], step);
    const Sequence k1(traces_[0].key.begin() + b1, traces_[0].key.begin() + e1);
    const Sequence k2(traces_[1].key.begin() + b2, traces_[1].key.begin() + e2);
    const bool capped = EditDistanceExceeds(k1, k2, options_.edit_cap);
    const Matches pairs = capped ? MatchByKey(k1, k2) : MyersMatches(k1, k2);
    p->capped += capped ? 1 : 0;
    std::vector<bool> matched1(k1.size()), matched2(k2.size());
    PerSide<std::vector<size_t>> replays;  // the matched pairs that both replay a graph
    for (const auto& [i, j] : pairs) {
      AddToRow(b1 + i, b2 + j, p);
      Consider(step, i + 1, b1 + i, b2 + j, p);
      if (traces_[0].tree->units[b1 + i].graph && traces_[1].tree->units[b2 + j].graph) {
        replays[Side::kTrace1].push_back(b1 + i);
        replays[Side::kTrace2].push_back(b2 + j);
      } else {
        ConsiderFusion(StepIndex(step), b1 + i, b2 + j, p);
      }
      matched1[i] = matched2[j] = true;
    }
    if (!replays[Side::kTrace1].empty()) {
      // One candidate for all of the step's replays, so that graph pieces ending at different
      // kernels on the two sides do not matter; past the edit cap pairs come in key order.
      std::sort(replays[Side::kTrace2].begin(), replays[Side::kTrace2].end());
      AddCandidate(FusionDifferenceKind::kGraph, StepIndex(step),
                   traces_[0].scope_path[traces_[0].tree->units[replays[Side::kTrace1][0]].scope],
                   replays, p);
    }
    for (size_t i = 0; i < k1.size(); ++i) {
      if (!matched1[i]) AddUnmatched(Side::kTrace1, b1 + i, p);
    }
    for (size_t j = 0; j < k2.size(); ++j) {
      if (!matched2[j]) AddUnmatched(Side::kTrace2, b2 + j, p);
    }
    if (capped) {
      GroupByScope(StepIndex(step), b1, e1, b2, e2, matched1, matched2, p);
    } else {
      GroupStretches(StepIndex(step), b1, e1, b2, e2, pairs, p);
    }
  }

  // MatchByKey() pairs the i-th unit of each key on one side with the i-th on the other.
  static Matches MatchByKey(const Sequence& k1, const Sequence& k2) {
    absl::flat_hash_map<uint32_t, std::vector<uint32_t>> where;
    for (uint32_t j = 0; j < k2.size(); ++j) where[k2[j]].push_back(j);
    absl::flat_hash_map<uint32_t, size_t> used;
    Matches pairs;
    for (uint32_t i = 0; i < k1.size(); ++i) {
      size_t& n = used[k1[i]];
      auto it = where.find(k1[i]);
      if (it != where.end() && n < it->second.size()) pairs.emplace_back(i, it->second[n]);
      ++n;
    }
    return pairs;
  }

  RowTotals& Row(const TraceUnits& t, size_t unit, bool matched, Partial* p) const {
    const uint64_t key = (uint64_t{t.key[unit]} << 1) | (matched ? 1 : 0);
    t.row[unit] = static_cast<uint32_t>(key);
    auto [it, inserted] = p->row_ids.try_emplace(key, p->rows.size());
    if (inserted) {
      const OpUnit& u = t.tree->units[unit];
      p->rows.emplace_back();
      p->rows.back().key = key;
      p->rows.back().row.op = t.tree->names[u.name];
      p->rows.back().row.scope = t.scope_path[u.scope];
      p->rows.back().row.matched = matched;
    }
    return p->rows[it->second];
  }

  void AddToRow(size_t u1, size_t u2, Partial* p) const {
    RowTotals& r = Row(traces_[0], u1, true, p);
    traces_[1].row[u2] = static_cast<uint32_t>(r.key);
    traces_[0].partner[u1] = static_cast<uint32_t>(u2);
    r.sides[Side::kTrace1].Add(traces_[0], u1);
    AddWork(traces_[0], u1, &r.row.work[Side::kTrace1]);
    r.sides[Side::kTrace2].Add(traces_[1], u2);
    AddWork(traces_[1], u2, &r.row.work[Side::kTrace2]);
    ++p->matched;
  }

  void AddUnmatched(Side side, size_t unit, Partial* p) const {
    const TraceUnits& t = traces_[static_cast<size_t>(side)];
    RowTotals& r = Row(t, unit, false, p);
    r.sides[side].Add(t, unit);
    AddWork(t, unit, &r.row.work[side]);
  }

  // Consider() keeps the matched pair if it is among the top instances by |delta|.
  void Consider(int64_t step, uint64_t index, size_t u1, size_t u2, Partial* p) const {
    const int64_t delta = traces_[0].tree->units[u1].time_ns - traces_[1].tree->units[u2].time_ns;
    Keep(Candidate{std::llabs(delta), step, index, u1, u2}, &p->top);
  }

  void Keep(const Candidate& c, std::vector<Candidate>* top) const {
    if (top->size() < options_.top_instances) {
      top->push_back(c);
      std::push_heap(top->begin(), top->end(), Before);
    } else if (!top->empty() && Before(c, top->front())) {
      std::pop_heap(top->begin(), top->end(), Before);
      top->back() = c;
      std::push_heap(top->begin(), top->end(), Before);
    }
  }

  // ConsiderFusion() keeps a matched pair of ops (not both graph replays) whose kernel counts
  // differ as a fusion candidate.
  void ConsiderFusion(int32_t step, size_t u1, size_t u2, Partial* p) const {
    const OpTree &t1 = *traces_[0].tree, &t2 = *traces_[1].tree;
    if (!DiffersInKernels(KernelCount(t1, u1), KernelCount(t2, u2))) return;
    AddCandidate(FusionDifferenceKind::kOp, step, traces_[0].scope_path[t1.units[u1].scope],
                 {{std::vector<size_t>{u1}, std::vector<size_t>{u2}}}, p);
  }

  static void AddCandidate(FusionDifferenceKind kind, int32_t step, const std::string& scope,
                           const PerSide<std::vector<size_t>>& units, Partial* p) {
    FusionCandidate c;
    c.kind = kind;
    c.step = step;
    auto [it, added] = p->scope_ids.try_emplace(scope, static_cast<uint32_t>(p->scopes.size()));
    if (added) p->scopes.push_back(scope);
    c.scope = it->second;
    for (Side side : kSides) {
      std::vector<uint32_t>& all = p->candidate_units[side];
      c.units_begin[side] = static_cast<uint32_t>(all.size());
      for (size_t u : units[side]) all.push_back(static_cast<uint32_t>(u));
      c.units_end[side] = static_cast<uint32_t>(all.size());
    }
    p->candidates.push_back(c);
  }

  // Merge() adds a block's partial result to `all`, blocks in step order.
  void Merge(Partial block, Partial* all) const {
    for (RowTotals& r : block.rows) {
      auto [it, inserted] = all->row_ids.try_emplace(r.key, all->rows.size());
      if (inserted) {
        all->rows.push_back(std::move(r));
        continue;
      }
      for (Side side : kSides) {
        all->rows[it->second].sides[side].Merge(r.sides[side]);
        all->rows[it->second].row.work[side].Add(r.row.work[side]);
      }
    }
    for (const Candidate& c : block.top) Keep(c, &all->top);
    for (UnmatchedGroup& g : block.groups) all->groups.push_back(std::move(g));
    for (FusionCandidate c : block.candidates) {
      const std::string& scope = block.scopes[c.scope];
      auto [it, added] =
          all->scope_ids.try_emplace(scope, static_cast<uint32_t>(all->scopes.size()));
      if (added) all->scopes.push_back(scope);
      c.scope = it->second;
      for (Side side : kSides) {
        std::vector<uint32_t>& units = all->candidate_units[side];
        const std::vector<uint32_t>& from = block.candidate_units[side];
        const auto offset = static_cast<uint32_t>(units.size()) - c.units_begin[side];
        units.insert(units.end(), from.begin() + c.units_begin[side],
                     from.begin() + c.units_end[side]);
        c.units_begin[side] += offset;
        c.units_end[side] += offset;
      }
      all->candidates.push_back(c);
    }
    all->matched += block.matched;
    all->capped += block.capped;
  }

  // GroupStretches() makes a group of each unmatched stretch between matched units.
  void GroupStretches(int32_t step, size_t b1, size_t e1, size_t b2, size_t e2,
                      const Matches& pairs, Partial* p) const {
    size_t i0 = b1, j0 = b2;
    auto close = [&](size_t i, size_t j) {
      if (i > i0 || j > j0) AddGroup(step, {{Range(i0, i), Range(j0, j)}}, p);
      i0 = i + 1;
      j0 = j + 1;
    };
    for (const auto& [i, j] : pairs) close(b1 + i, b2 + j);
    close(e1, e2);
  }

  static std::vector<size_t> Range(size_t begin, size_t end) {
    std::vector<size_t> units;
    for (size_t u = begin; u < end; ++u) units.push_back(u);
    return units;
  }

  // GroupByScope() groups a capped step's unmatched units by scope, scopes in order.
  void GroupByScope(int32_t step, size_t b1, size_t e1, size_t b2, size_t e2,
                    const std::vector<bool>& matched1, const std::vector<bool>& matched2,
                    Partial* p) const {
    std::map<std::vector<std::string>, PerSide<std::vector<size_t>>> by_scope;
    auto collect = [&](size_t side, size_t begin, size_t end, const std::vector<bool>& matched) {
      const TraceUnits& t = traces_[side];
      for (size_t u = begin; u < end; ++u) {
        if (!matched[u - begin]) {
          by_scope[t.scope_parts[t.tree->units[u].scope]][side].push_back(u);
        }
      }
    };
    collect(0, b1, e1, matched1);
    collect(1, b2, e2, matched2);
    for (const auto& [scope, units] : by_scope) AddGroup(step, units, p);
  }

  void AddGroup(int32_t step, const PerSide<std::vector<size_t>>& units, Partial* p) const {
    UnmatchedGroup g;
    g.step = step;
    std::vector<const std::vector<std::string>*> scopes;
    PerSide<uint64_t> kernels{};
    for (Side side : kSides) {
      const TraceUnits& t = traces_[static_cast<size_t>(side)];
      SideTotals totals;
      for (size_t u : units[side]) {
        t.group[u] = static_cast<uint32_t>(p->groups.size());
        kernels[side] += KernelCount(*t.tree, u);
        totals.Add(t, u);
        scopes.push_back(&t.scope_parts[t.tree->units[u].scope]);
        if (g.ops[side].size() < UnmatchedGroup::kGroupOpNames) {
          g.ops[side].push_back(t.op_names[t.tree->units[u].name]);
        }
      }
      g.sides[side] = totals.ToSide(t.kernel_names);
      g.op_count[side] = units[side].size();
    }
    g.scope = CommonScope(scopes);
    if (!g.scope.empty() && DiffersInKernels(kernels[Side::kTrace1], kernels[Side::kTrace2])) {
      AddCandidate(FusionDifferenceKind::kModule, step, g.scope, units, p);
    }
    p->groups.push_back(std::move(g));
  }

  static std::string CommonScope(const std::vector<const std::vector<std::string>*>& scopes) {
    std::string path;
    for (size_t depth = 0; !scopes.empty(); ++depth) {
      const std::vector<std::string>& first = *scopes[0];
      if (depth >= first.size()) break;
      for (const auto* s : scopes) {
        if (depth >= s->size() || (*s)[depth] != first[depth]) return path;
      }
      if (!path.empty()) path += '/';
      path += first[depth];
    }
    return path;
  }

  // AddNoLaunchRow() adds the kernels no runtime call launched, as one unit per side that has
  // any.
  void AddNoLaunchRow(Partial* p) const {
    PerSide<bool> has{};
    for (Side side : kSides) {
      has[side] = !traces_[static_cast<size_t>(side)].tree->no_launch_kernels.empty();
    }
    if (!has[Side::kTrace1] && !has[Side::kTrace2]) return;
    RowTotals r;
    r.row.op = "[no CPU op]";
    r.row.matched = has[Side::kTrace1] && has[Side::kTrace2];
    for (Side side : kSides) {
      const OpTree& tree = *traces_[static_cast<size_t>(side)].tree;
      if (!has[side]) continue;
      SideTotals& totals = r.sides[side];
      totals.instances = 1;
      for (const UnitKernels& k : tree.no_launch_kernels) {
        totals.time_ns += k.time_ns;
        totals.AddKernels(k.name, k.count, k.time_ns);
      }
    }
    p->rows.push_back(std::move(r));
  }

  void Summarize(Partial* all, const std::vector<Candidate>& top,
                 const PerSide<std::vector<NameTotals>>& instance_kernels) {
    out_.candidates = std::move(all->candidates);
    out_.candidate_units = std::move(all->candidate_units);
    out_.candidate_scopes = std::move(all->scopes);
    out_.matched_ops = all->matched;
    out_.capped_steps = all->capped;
    out_.unmatched_groups = std::move(all->groups);
    for (RowTotals& r : all->rows) {
      for (Side side : kSides) {
        r.row.sides[side] = r.sides[side].ToSide(traces_[static_cast<size_t>(side)].kernel_names);
      }
      r.row.instances = r.row.matched ? r.row.sides[Side::kTrace1].instances
                                      : r.row.sides[Side::kTrace1].instances +
                                            r.row.sides[Side::kTrace2].instances;
      out_.ops.push_back(std::move(r.row));
    }
    std::sort(out_.ops.begin(), out_.ops.end(), [](const OpRow& a, const OpRow& b) {
      if (std::llabs(a.delta_ns()) != std::llabs(b.delta_ns())) {
        return std::llabs(a.delta_ns()) > std::llabs(b.delta_ns());
      }
      if (a.op != b.op) return a.op < b.op;
      if (a.scope != b.scope) return a.scope < b.scope;
      return a.matched < b.matched;
    });
    for (size_t i = 0; i < top.size(); ++i) {
      out_.top_instances.push_back(Instance(
          top[i], {{&instance_kernels[Side::kTrace1][i], &instance_kernels[Side::kTrace2][i]}}));
    }
    for (Side side : kSides) {
      const OpTree& tree = *traces_[static_cast<size_t>(side)].tree;
      OpTraceSummary& s = out_.traces[side];
      s.kernels = tree.kernels;
      s.kernel_time_ns = tree.kernel_time_ns;
      s.linked_ns = tree.linked_ns;
      s.launch_only_ns = tree.launch_only_ns;
      s.no_launch_ns = tree.no_launch_ns;
      s.steps = tree.steps.size();
      s.top_level_ops = tree.units.size();
      s.cpu_events_without_times = tree.cpu_events_without_times;
      const TraceProfile& profile = *traces_[static_cast<size_t>(side)].profile;
      s.gpu = profile.gpu;
      const GpuSpecs& specs = options_.gpu_specs ? *options_.gpu_specs : BuiltinGpuSpecs();
      if (const GpuPeak* peak = FindGpu(specs, profile.gpu)) s.peak = *peak;
      if (!tree.unit_work.empty()) {
        for (uint32_t set : tree.unit_work) {
          if (set != kNoWork) s.work.Add(traces_[static_cast<size_t>(side)].set_work[set]);
        }
      }
    }
  }

  MatchedInstance Instance(const Candidate& c, PerSide<const NameTotals*> kernels) const {
    MatchedInstance m;
    m.step = c.step == INT64_MAX ? kNoStep : static_cast<int32_t>(c.step);
    m.index = c.index;
    const TraceUnits& t1 = traces_[0];
    const OpUnit& u1 = t1.tree->units[c.u1];
    m.op = t1.tree->names[u1.name];
    m.scope = t1.scope_path[u1.scope];
    const size_t units[] = {c.u1, c.u2};
    for (Side side : kSides) {
      const size_t s = static_cast<size_t>(side);
      SideTotals totals;
      totals.Add(traces_[s], units[s]);
      totals.kernels = *kernels[side];
      m.sides[side] = totals.ToSide(traces_[s].kernel_names);
      m.graph[side] = traces_[s].tree->units[units[s]].graph;
      m.units[side] = static_cast<uint32_t>(units[s]);
    }
    return m;
  }

  const OpCompareOptions& options_;
  StringMap<uint32_t> key_ids_;
  OpComparison out_;                        // before traces_: Prepare() adds their names to it
  StringMap<std::string_view> held_names_;  // in out_.names
  PerSide<TraceUnits> traces_;
};

}  // namespace

OpComparison CompareOps(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees,
                        const OpCompareOptions& options) {
  return Comparer(profiles, trees, options).Run();
}

std::vector<PeakGap> FurthestFromPeak(const OpComparison& ops) {
  std::vector<PeakGap> gaps;
  for (const OpRow& row : ops.ops) {
    if (!row.matched) continue;
    PeakGap gap;
    gap.row = &row;
    for (Side side : kSides) {
      const std::optional<GpuPeak>& peak = ops.traces[side].peak;
      gap.achieved[side] =
          AchievedOf(row.work[side], row.sides[side].time_ns, peak ? &*peak : nullptr);
    }
    const std::optional<double> p1 = gap.achieved[Side::kTrace1].percent_of_peak;
    const std::optional<double> p2 = gap.achieved[Side::kTrace2].percent_of_peak;
    if (!p1 || !p2 || *p1 == *p2) continue;
    gap.behind = *p1 < *p2 ? Side::kTrace1 : Side::kTrace2;
    const double behind = std::min(*p1, *p2), ahead = std::max(*p1, *p2);
    gap.saving_ns = static_cast<int64_t>(static_cast<double>(row.sides[gap.behind].time_ns) *
                                         (1 - behind / ahead));
    gaps.push_back(gap);
  }
  std::sort(gaps.begin(), gaps.end(), [](const PeakGap& a, const PeakGap& b) {
    if (a.saving_ns != b.saving_ns) return a.saving_ns > b.saving_ns;
    if (a.row->op != b.row->op) return a.row->op < b.row->op;
    return a.row->scope < b.row->scope;
  });
  return gaps;
}

}  // namespace tracefuse
