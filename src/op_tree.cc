#include "tracefuse/op_tree.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "absl/container/flat_hash_map.h"

namespace tracefuse {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// StripTrailingInstance() removes a final "_N".
std::string_view StripTrailingInstance(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && IsDigit(s[i - 1])) --i;
  if (i < s.size() && i > 0 && s[i - 1] == '_') return s.substr(0, i - 1);
  return s;
}

// IsGenericWrapper() says whether `base` (a name before its template arguments) is a launcher
// that names nothing itself: Kernel, Kernel2, kernel, device_kernel, in any namespace.
bool IsGenericWrapper(std::string_view base) {
  const size_t colon = base.rfind("::");
  std::string_view last = colon == std::string_view::npos ? base : base.substr(colon + 2);
  while (!last.empty() && IsDigit(last.back())) last.remove_suffix(1);
  for (std::string_view::size_type i = 0; colon != std::string_view::npos && i < colon; ++i) {
    if (!IsWordChar(base[i]) && base[i] != ':') return false;
  }
  return last == "Kernel" || last == "kernel" || last == "device_kernel";
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// NamesSomething() says whether a wrapper's first template argument can name it: a built-in type
// or a value names no kernel (cuBLAS's internal::gemvx::kernel<int, ...> is not "int").
bool NamesSomething(std::string_view argument) {
  if (argument.empty() ||
      (!std::isalpha(static_cast<unsigned char>(argument[0])) && argument[0] != '_')) {
    return false;
  }
  const std::string_view word = argument.substr(0, argument.find(' '));
  for (std::string_view builtin :
       {"bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int", "long",
        "signed", "unsigned", "float", "double", "void", "const", "volatile", "true", "false"}) {
    if (word == builtin) return false;
  }
  return true;
}

// SignatureName() is the qualified function name of a C++ signature, "[return type]
// name[<template args>](params)": the last whitespace-separated token before the parameter list,
// whatever the return type (std::enable_if<...>::type, unsigned int); empty without one. The
// parameter list is the first '(' outside any nesting that follows a token directly: demanglers
// put no space there, so neither "Memcpy HtoD (Pageable -> Device)" nor the "decltype (x)" of a
// return type opens one. '>' closes only a '<' (in "<((8)>(0))>" it compares) and a closer
// unwinds to its opener, so that no comparison ends the template arguments early.
std::string_view SignatureName(std::string_view s) {
  constexpr size_t kMaxNesting = 256;
  char open[kMaxNesting];
  size_t depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ') {
      if (depth == 0) start = i + 1;
    } else if (c == '<' || c == '(' || c == '{' || c == '[') {
      if (c == '(' && depth == 0 && i > start) {
        const std::string_view name = s.substr(start, i - start);
        if (name != "decltype") return name;  // a return type, written without the space
      }
      if (depth == kMaxNesting) return {};
      open[depth++] = c;
    } else if (c == '>') {
      if (depth > 0 && open[depth - 1] == '<') --depth;
    } else if (c == ')' || c == '}' || c == ']') {
      const char opener = c == ')' ? '(' : c == '}' ? '{' : '[';
      while (depth > 0 && open[depth - 1] != opener) --depth;
      if (depth > 0) --depth;
    }
  }
  return {};
}

// MangledName() reads the name of an Itanium-mangled symbol ("_ZN5aiter6kernelIfEEvPT_" ->
// "aiter::kernel", "_Z6kernelPf" -> "kernel"): its source names up to the first thing that is not
// one (template arguments, a parameter list). Empty when `s` is not such a symbol.
std::string MangledName(std::string_view s) {
  if (s.substr(0, 2) != "_Z") return "";
  size_t i = 2;
  const bool nested = i < s.size() && s[i] == 'N';
  if (nested) ++i;
  std::string name;
  while (i < s.size() && IsDigit(s[i])) {
    size_t length = 0;
    while (i < s.size() && IsDigit(s[i])) length = length * 10 + static_cast<size_t>(s[i++] - '0');
    if (length == 0 || length > s.size() - i) return "";
    if (!name.empty()) name += "::";
    name.append(s.substr(i, length));
    i += length;
    if (!nested) break;
  }
  return name;
}

// IsGraphLaunch() says whether a runtime call replays a CUDA/HIP graph (cudaGraphLaunch,
// hipGraphLaunch): every kernel of the replay carries its correlation id.
bool IsGraphLaunch(std::string_view call) { return call.find("Graph") != std::string_view::npos; }

}  // namespace

std::string NormalizeOpName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    if (name[i] == '0' && i + 2 < name.size() && name[i + 1] == 'x' && IsHexDigit(name[i + 2])) {
      out += "0x";
      i += 2;
      while (i < name.size() && IsHexDigit(name[i])) ++i;
    } else if (name.compare(i, 4, ".py(") == 0 && i + 4 < name.size() && IsDigit(name[i + 4])) {
      size_t j = i + 4;
      while (j < name.size() && IsDigit(name[j])) ++j;
      if (j < name.size() && name[j] == ')') {
        out += ".py";
        i = j + 1;
      } else {
        out += name[i++];
      }
    } else {
      out += name[i++];
    }
  }
  return std::string(StripTrailingInstance(out));
}

std::string KernelFamily(std::string_view name) {
  std::string plain;
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (size_t at; (at = name.find(kAnonymous)) != std::string_view::npos;) {
    plain.append(name.substr(0, at));
    name.remove_prefix(at + kAnonymous.size());
  }
  plain.append(name);
  if (std::string demangled = MangledName(plain); !demangled.empty()) plain = demangled;
  std::string_view s = SignatureName(plain);
  if (s.empty()) {
    s = plain;
    if (s.substr(0, 5) == "void ") s.remove_prefix(5);
  }
  const size_t bracket = s.find('<');
  std::string_view base = s.substr(0, bracket);
  base = Trim(base.substr(0, base.find('(')));
  if (bracket != std::string_view::npos && IsGenericWrapper(base)) {
    std::string_view rest = s.substr(bracket + 1);
    std::string_view argument = Trim(rest.substr(0, rest.find_first_of("<>,(")));
    if (NamesSomething(argument)) base = argument;
  }
  std::string family;
  for (size_t i = 0; i < base.size(); ++i) {
    if (IsDigit(base[i])) {
      family += '#';
      while (i + 1 < base.size() && IsDigit(base[i + 1])) ++i;
    } else {
      family += base[i];
    }
  }
  if (family.size() > 64) {
    family.resize(64);
    while (!family.empty() && family.back() == ':') family.pop_back();  // cut inside a "::"
  }
  return family;
}

std::string_view LaunchUnitName(std::string_view call) {
  if (IsGraphLaunch(call)) return "[graph launch]";
  if (call.find("Memcpy") != std::string_view::npos) return "[memcpy]";
  if (call.find("Memset") != std::string_view::npos) return "[memset]";
  return "[kernel launch]";
}

std::string OpTree::ScopePath(uint32_t scope) const {
  std::vector<std::string_view> parts;
  for (uint32_t s = scope; s != kRootScope; s = scopes[s].parent) {
    parts.push_back(names[scopes[s].name]);
  }
  std::string path;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!path.empty()) path += '/';
    path.append(*it);
  }
  return path;
}

std::pair<const UnitKernels*, const UnitKernels*> OpTree::Kernels(size_t u) const {
  const size_t end = u + 1 < units.size() ? units[u + 1].first_kernels : unit_kernels.size();
  return {unit_kernels.data() + units[u].first_kernels, unit_kernels.data() + end};
}

namespace {

constexpr uint32_t kNone = kNoUnit;

// EndOf() is where an op ends, saturated: times come from the trace, and a hostile one may put
// both near the limit.
int64_t EndOf(const HostOp& op) {
  int64_t end;
  if (__builtin_add_overflow(op.ts_ns, op.dur_ns, &end))
    return op.dur_ns > 0 ? INT64_MAX : INT64_MIN;
  return end;
}

// SortRuns() sorts `v` by merging its ascending runs when it has few: traces list each thread's
// CPU events in time order, and units come as op units then launch units, so a sort usually
// costs a pass or a few merges rather than n log n comparisons.
template <typename Less>
void SortRuns(std::vector<uint32_t>* v, Less less) {
  constexpr size_t kMaxRuns = 64;
  std::vector<size_t> runs = {0};  // where each run begins
  for (size_t i = 1; i < v->size() && runs.size() <= kMaxRuns; ++i) {
    if (less((*v)[i], (*v)[i - 1])) runs.push_back(i);
  }
  if (runs.size() > kMaxRuns) {
    std::sort(v->begin(), v->end(), less);
    return;
  }
  runs.push_back(v->size());
  while (runs.size() > 2) {  // merge neighbouring runs, pairwise
    std::vector<size_t> merged = {0};
    for (size_t r = 0; r + 2 < runs.size(); r += 2) {
      std::inplace_merge(v->begin() + runs[r], v->begin() + runs[r + 1], v->begin() + runs[r + 2],
                         less);
      merged.push_back(runs[r + 2]);
    }
    if (runs.size() % 2 == 0) merged.push_back(runs.back());  // an odd run out stays as it is
    runs = std::move(merged);
  }
}

// Builder makes an OpTree in the steps of BuildOpTree(): nest the CPU side, find the units and
// steps, then attribute the kernels.
class Builder {
 public:
  explicit Builder(const TraceProfile& profile) : p_(profile), host_(profile.host) {
    tree_.scopes.push_back(ScopeNode{});
    tree_.cpu_events_without_times = host_.events_without_times;
  }

  OpTree Build() {
    Nest();
    FindSteps();
    AddOperatorUnits();
    AttributeKernels();
    ReleaseNesting();
    OrderUnits();
    return std::move(tree_);
  }

 private:
  // What nesting learns of each CPU op.
  struct Nesting {
    uint32_t parent = kNone;
    uint32_t outermost_operator = kNone;  // the outermost cpu_op at or above it
    uint32_t nearest_annotation = kNone;  // the nearest annotation (not a step) at or above it
    uint32_t scope = kRootScope;          // its module frames, itself included
    bool inside_step = false;             // a step encloses it
  };

  // Nest() gives each op its parent and each runtime call the innermost op open at its start,
  // thread by thread: ops by start, longer and enclosing kinds first, calls after the ops that
  // start with them.
  void Nest() {
    const auto& ops = host_.ops;
    const auto& calls = host_.calls;
    nesting_.resize(ops.size());
    call_innermost_.assign(calls.size(), kNone);
    std::vector<uint32_t> op_order(ops.size()), call_order(calls.size());
    std::iota(op_order.begin(), op_order.end(), 0u);
    std::iota(call_order.begin(), call_order.end(), 0u);
    SortRuns(&op_order, [&](uint32_t a, uint32_t b) {
      const HostOp &x = ops[a], &y = ops[b];
      if (x.thread != y.thread) return x.thread < y.thread;
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      if (x.dur_ns != y.dur_ns) return x.dur_ns > y.dur_ns;
      if (x.kind != y.kind) return x.kind < y.kind;
      return x.position < y.position;
    });
    SortRuns(&call_order, [&](uint32_t a, uint32_t b) {
      const RuntimeCall &x = calls[a], &y = calls[b];
      if (x.thread != y.thread) return x.thread < y.thread;
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      return x.position < y.position;
    });
    std::vector<uint32_t> stack;
    uint32_t thread = kNone;
    size_t c = 0;
    auto enter_thread = [&](uint32_t t) {
      if (t != thread) stack.clear();
      thread = t;
    };
    auto close_before = [&](int64_t ts) {
      while (!stack.empty() && EndOf(ops[stack.back()]) <= ts) {
        stack.pop_back();
      }
    };
    auto place_calls_before = [&](uint32_t t, int64_t ts, bool inclusive) {
      for (; c < call_order.size(); ++c) {
        const RuntimeCall& call = calls[call_order[c]];
        if (call.thread > t ||
            (call.thread == t && (inclusive ? call.ts_ns > ts : call.ts_ns >= ts))) {
          break;
        }
        enter_thread(call.thread);
        close_before(call.ts_ns);
        call_innermost_[call_order[c]] = stack.empty() ? kNone : stack.back();
      }
    };
    for (uint32_t i : op_order) {
      place_calls_before(ops[i].thread, ops[i].ts_ns, false);
      enter_thread(ops[i].thread);
      close_before(ops[i].ts_ns);
      Enter(i, stack.empty() ? kNone : stack.back());
      stack.push_back(i);
    }
    place_calls_before(UINT32_MAX, INT64_MAX, true);
  }

  void Enter(uint32_t i, uint32_t parent) {
    const HostOp& op = host_.ops[i];
    Nesting n;
    if (parent != kNone) {
      n = nesting_[parent];
      n.inside_step = n.inside_step || host_.ops[parent].kind == HostOpKind::kStep;
    }
    n.parent = parent;
    switch (op.kind) {
      case HostOpKind::kOperator:
        if (n.outermost_operator == kNone) n.outermost_operator = i;
        break;
      case HostOpKind::kAnnotation:
        n.nearest_annotation = i;
        break;
      case HostOpKind::kModule:
        n.scope = ChildScope(n.scope, op.name);
        break;
      case HostOpKind::kStep:
        break;
    }
    nesting_[i] = n;
  }

  uint32_t ChildScope(uint32_t parent, uint32_t module) {
    const uint32_t name = NormalizedName(module);
    auto [it, inserted] = scope_ids_.try_emplace((uint64_t{parent} << 32) | name,
                                                 static_cast<uint32_t>(tree_.scopes.size()));
    if (inserted) tree_.scopes.push_back(ScopeNode{parent, name, tree_.scopes[parent].depth + 1});
    return it->second;
  }

  // NormalizedName() is the tree's name of a host name, normalised once per distinct name.
  uint32_t NormalizedName(uint32_t host_name) {
    if (normalized_.empty()) normalized_.assign(host_.names.size(), kNone);
    uint32_t& id = normalized_[host_name];
    if (id == kNone) id = Name(NormalizeOpName(host_.names[host_name]));
    return id;
  }

  uint32_t Name(const std::string& name) {
    auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(tree_.names.size()));
    if (inserted) tree_.names.push_back(name);
    return it->second;
  }

  // FindSteps() keeps the step annotations no other step encloses, by start.
  void FindSteps() {
    for (uint32_t i = 0; i < host_.ops.size(); ++i) {
      const HostOp& op = host_.ops[i];
      if (op.kind != HostOpKind::kStep || nesting_[i].inside_step) continue;
      tree_.steps.push_back(StepSpan{op.ts_ns, EndOf(op), op.position});
    }
    std::sort(tree_.steps.begin(), tree_.steps.end(), [](const StepSpan& a, const StepSpan& b) {
      if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
      if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
      return a.position < b.position;
    });
    latest_end_.resize(tree_.steps.size());
    int64_t latest = INT64_MIN;
    for (size_t s = 0; s < tree_.steps.size(); ++s) {
      latest = std::max(latest, tree_.steps[s].end_ns);
      latest_end_[s] = latest;
    }
  }

  // StepOf() is the last step, by start, that holds `ts`. Units mostly come in time order, so the
  // steps begun by `ts` are looked for next to the last answer first.
  int32_t StepOf(int64_t ts) {
    const auto& steps = tree_.steps;
    auto begun_by = [&](size_t n) {  // whether exactly n steps begin at or before ts
      return (n == 0 || steps[n - 1].ts_ns <= ts) && (n == steps.size() || steps[n].ts_ns > ts);
    };
    if (!begun_by(steps_begun_)) {
      steps_begun_ = static_cast<size_t>(
          std::upper_bound(steps.begin(), steps.end(), ts,
                           [](int64_t t, const StepSpan& s) { return t < s.ts_ns; }) -
          steps.begin());
    }
    for (size_t s = steps_begun_; s > 0 && latest_end_[s - 1] > ts; --s) {
      if (ts < steps[s - 1].end_ns) return static_cast<int32_t>(s - 1);
    }
    return kNoStep;
  }

  // AddOperatorUnits() makes a unit of every top-level cpu_op, whether it launched or not: the
  // op sequences are what the comparison aligns.
  void AddOperatorUnits() {
    op_unit_.assign(host_.ops.size(), kNone);
    // Room for every unit there can be, so that growing never copies (reserved pages that are
    // never written cost nothing).
    size_t operators = 0;
    for (uint32_t i = 0; i < host_.ops.size(); ++i)
      operators += nesting_[i].outermost_operator == i;
    tree_.units.reserve(operators + host_.calls.size());
    unit_thread_.reserve(operators + host_.calls.size());
    for (uint32_t i = 0; i < host_.ops.size(); ++i) {
      if (nesting_[i].outermost_operator == i) OpUnitOf(i);
    }
  }

  uint32_t OpUnitOf(uint32_t i) {
    if (op_unit_[i] != kNone) return op_unit_[i];
    const HostOp& op = host_.ops[i];
    OpUnit u;
    u.name = NormalizedName(op.name);
    u.scope = ScopeAbove(i);
    u.ts_ns = op.ts_ns;
    u.position = op.position;
    op_unit_[i] = NewUnit(u, op.thread);
    return op_unit_[i];
  }

  uint32_t ScopeAbove(uint32_t i) const {
    const uint32_t parent = nesting_[i].parent;
    return parent == kNone ? kRootScope : nesting_[parent].scope;
  }

  uint32_t NewUnit(OpUnit u, uint32_t thread) {
    u.step = StepOf(u.ts_ns);
    tree_.units.push_back(u);
    unit_thread_.push_back(thread);
    return static_cast<uint32_t>(tree_.units.size() - 1);
  }

  // UnitOfCall() is the unit a runtime call's kernels go to (creating it on first use), and
  // whether an op or annotation encloses the call.
  std::pair<uint32_t, bool> UnitOfCall(uint32_t c) {
    const uint32_t innermost = call_innermost_[c];
    if (innermost != kNone) {
      const Nesting& n = nesting_[innermost];
      if (n.outermost_operator != kNone) return {OpUnitOf(n.outermost_operator), true};
      if (n.nearest_annotation != kNone) return {OpUnitOf(n.nearest_annotation), true};
    }
    auto [it, inserted] = launch_unit_.try_emplace(c, 0);
    if (inserted) {
      const RuntimeCall& call = host_.calls[c];
      OpUnit u;
      u.name = Name(std::string(LaunchUnitName(host_.names[call.name])));
      u.scope = innermost == kNone ? kRootScope : nesting_[innermost].scope;
      u.ts_ns = call.ts_ns;
      u.position = call.position;
      u.is_launch = true;
      it->second = NewUnit(u, call.thread);
    }
    return {it->second, false};
  }

  // ReleaseNesting() frees what only linking needed, for OrderUnits() to reuse.
  void ReleaseNesting() {
    nesting_ = std::vector<Nesting>();
    call_innermost_ = std::vector<uint32_t>();
    op_unit_ = std::vector<uint32_t>();
    launch_unit_ = absl::flat_hash_map<uint32_t, uint32_t>();
  }

  // AttributeKernels() adds each kernel to its launch's unit: correlation groups to runtime
  // calls (the first call that carries the id), then one pass over the kernel records.
  void AttributeKernels() {
    absl::flat_hash_map<int64_t, uint32_t> call_of;
    call_of.reserve(host_.calls.size());
    for (uint32_t c = 0; c < host_.calls.size(); ++c) {
      call_of.try_emplace(host_.calls[c].correlation, c);
    }
    struct Link {
      uint32_t unit = kNone;
      bool linked = false;
    };
    std::vector<Link> group_link(p_.group_correlation.size());
    tree_.group_unit.assign(group_link.size(), kNoUnit);
    for (size_t g = 0; g < group_link.size(); ++g) {
      auto it = call_of.find(p_.group_correlation[g]);
      if (it == call_of.end()) continue;
      auto [unit, linked] = UnitOfCall(it->second);
      group_link[g] = Link{unit, linked};
      tree_.group_unit[g] = unit;
      if (IsGraphLaunch(host_.names[host_.calls[it->second].name])) tree_.units[unit].graph = true;
    }
    std::vector<uint32_t> family_of_name(p_.names.size());
    for (size_t n = 0; n < p_.names.size(); ++n) family_of_name[n] = Family(p_.names[n]);
    unit_families_.Reset(tree_.units.size(), p_.group_correlation.size());
    FamilyTotals no_launch;
    no_launch.Reset(1);
    p_.kernels.ForEach([&](const KernelRecord& k) {
      ++tree_.kernels;
      tree_.kernel_time_ns += k.dur_ns;
      const uint32_t family = family_of_name[k.name];
      const Link link = k.group == kNoGroup ? Link{} : group_link[k.group];
      if (link.unit == kNone) {
        tree_.no_launch_ns += k.dur_ns;
        no_launch.Add(0, family, k.dur_ns);
        return;
      }
      (link.linked ? tree_.linked_ns : tree_.launch_only_ns) += k.dur_ns;
      OpUnit& unit = tree_.units[link.unit];
      unit.time_ns += k.dur_ns;
      ++unit.kernels;
      unit_families_.Add(link.unit, family, k.dur_ns);
    });
    RankFamilies();
    for (const FamilyTotals::Entry& e : no_launch.entries()) {
      tree_.no_launch_kernels.push_back(UnitKernels{e.family, e.count, e.time_ns});
    }
    SortByTime(tree_.no_launch_kernels.begin(), tree_.no_launch_kernels.end());
  }

  // FamilyTotals counts kernels per (unit, family): a list per unit through one array, as a unit
  // runs few families (a hash map per kernel would cost more than the rest of the pass), with a
  // hash index for the rare unit that runs many.
  class FamilyTotals {
   public:
    struct Entry {
      uint32_t unit, family, next;
      uint32_t count;  // a unit's kernels of one family: far fewer than 2^32
      int64_t time_ns;
    };
    // Reset() makes room for `units`, and for `expected` entries so that growing never copies.
    void Reset(size_t units, size_t expected = 0) {
      head_.assign(units, kNone);
      length_.assign(units, 0);
      entries_.reserve(expected);
    }
    void Add(uint32_t unit, uint32_t family, int64_t dur_ns) {
      Entry* e = Find(unit, family);
      if (e == nullptr) {
        entries_.push_back(Entry{unit, family, head_[unit], 0, 0});
        head_[unit] = static_cast<uint32_t>(entries_.size() - 1);
        if (++length_[unit] > kListLength) Index(unit);
        e = &entries_.back();
      }
      ++e->count;
      e->time_ns += dur_ns;
    }
    const std::vector<Entry>& entries() const { return entries_; }

   private:
    static constexpr uint32_t kListLength = 16;
    Entry* Find(uint32_t unit, uint32_t family) {
      const uint64_t key = (uint64_t{unit} << 32) | family;
      if (length_[unit] > kListLength) {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries_[it->second];
      }
      // A graph replay cycles through its layer's families: remember where each one was.
      const size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> (64 - kRecentBits);
      if (recent_key_[slot] == key) return &entries_[recent_entry_[slot]];
      for (uint32_t e = head_[unit]; e != kNone; e = entries_[e].next) {
        if (entries_[e].family == family) {
          recent_key_[slot] = key;
          recent_entry_[slot] = e;
          return &entries_[e];
        }
      }
      return nullptr;
    }
    // Index() indexes the unit's newest entry, or its whole list when it has just outgrown it.
    void Index(uint32_t unit) {
      const bool whole = length_[unit] == kListLength + 1;
      for (uint32_t e = head_[unit]; e != kNone; e = whole ? entries_[e].next : kNone) {
        index_[(uint64_t{unit} << 32) | entries_[e].family] = e;
      }
    }
    static constexpr int kRecentBits = 12;
    std::vector<Entry> entries_;
    std::vector<uint32_t> head_;
    std::vector<uint32_t> length_;
    absl::flat_hash_map<uint64_t, uint32_t> index_;
    std::vector<uint64_t> recent_key_ = std::vector<uint64_t>(size_t{1} << kRecentBits, UINT64_MAX);
    std::vector<uint32_t> recent_entry_ = std::vector<uint32_t>(size_t{1} << kRecentBits, 0);
  };

  uint32_t Family(const std::string& name) {
    std::string family = KernelFamily(name);
    auto [it, inserted] =
        family_ids_.try_emplace(family, static_cast<uint32_t>(tree_.families.size()));
    if (inserted) tree_.families.push_back(std::move(family));
    return it->second;
  }

  // RankFamilies() numbers the families in name order, the tie-break of the kernel lists.
  void RankFamilies() {
    std::vector<uint32_t> order(tree_.families.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return tree_.families[a] < tree_.families[b]; });
    family_rank_.resize(order.size());
    for (uint32_t r = 0; r < order.size(); ++r) family_rank_[order[r]] = r;
  }

  template <typename It>
  void SortByTime(It begin, It end) const {
    std::sort(begin, end, [&](const UnitKernels& a, const UnitKernels& b) {
      if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
      return family_rank_[a.family] < family_rank_[b.family];
    });
  }

  // OrderUnits() ranks threads by their first unit's start, orders the units by step, thread
  // rank, start and position, and lays out each unit's kernel families in that order.
  void OrderUnits() {
    std::vector<OpUnit>& units = tree_.units;
    RankThreads();
    std::vector<uint32_t> order(units.size());
    std::iota(order.begin(), order.end(), 0u);
    auto step_key = [](int32_t step) { return static_cast<uint32_t>(step); };  // kNoStep last
    SortRuns(&order, [&](uint32_t a, uint32_t b) {
      const OpUnit &x = units[a], &y = units[b];
      if (x.step != y.step) return step_key(x.step) < step_key(y.step);
      if (x.thread_rank != y.thread_rank) return x.thread_rank < y.thread_rank;
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      return x.position < y.position;
    });
    std::vector<uint32_t> new_index(units.size());
    for (uint32_t i = 0; i < order.size(); ++i) new_index[order[i]] = i;
    // Counting sort of the (unit, family) totals by the units' new order.
    std::vector<uint32_t> first(units.size() + 1, 0);
    for (const FamilyTotals::Entry& e : unit_families_.entries()) ++first[new_index[e.unit] + 1];
    for (size_t u = 0; u < units.size(); ++u) first[u + 1] += first[u];
    tree_.unit_kernels.resize(unit_families_.entries().size());
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (const FamilyTotals::Entry& e : unit_families_.entries()) {
      tree_.unit_kernels[fill[new_index[e.unit]]++] = UnitKernels{e.family, e.count, e.time_ns};
    }
    unit_families_ = FamilyTotals();
    for (uint32_t& unit : tree_.group_unit) {
      if (unit != kNoUnit) unit = new_index[unit];
    }
    PermuteInPlace(order, &units);
    for (size_t u = 0; u < units.size(); ++u) {
      units[u].first_kernels = first[u];
      SortByTime(tree_.unit_kernels.begin() + first[u], tree_.unit_kernels.begin() + first[u + 1]);
    }
  }

  // PermuteInPlace() makes (*v)[i] the element that was at order[i], cycle by cycle, without a
  // second copy of the units.
  static void PermuteInPlace(std::vector<uint32_t> order, std::vector<OpUnit>* v) {
    for (size_t start = 0; start < order.size(); ++start) {
      if (order[start] == start) continue;
      OpUnit held = (*v)[start];
      size_t at = start;
      while (order[at] != start) {
        const size_t from = order[at];
        (*v)[at] = (*v)[from];
        order[at] = static_cast<uint32_t>(at);
        at = from;
      }
      (*v)[at] = held;
      order[at] = static_cast<uint32_t>(at);
    }
  }

  void RankThreads() {
    std::vector<OpUnit>& units = tree_.units;
    std::vector<int64_t> first(host_.threads.size(), INT64_MAX);
    for (size_t u = 0; u < units.size(); ++u) {
      first[unit_thread_[u]] = std::min(first[unit_thread_[u]], units[u].ts_ns);
    }
    std::vector<uint32_t> threads(host_.threads.size());
    std::iota(threads.begin(), threads.end(), 0u);
    std::sort(threads.begin(), threads.end(), [&](uint32_t a, uint32_t b) {
      if (first[a] != first[b]) return first[a] < first[b];
      return host_.threads[a] < host_.threads[b];
    });
    std::vector<uint32_t> rank(threads.size());
    for (uint32_t r = 0; r < threads.size(); ++r) rank[threads[r]] = r;
    for (size_t u = 0; u < units.size(); ++u) units[u].thread_rank = rank[unit_thread_[u]];
  }

  const TraceProfile& p_;
  const TraceHost& host_;
  OpTree tree_;
  std::vector<Nesting> nesting_;
  std::vector<uint32_t> call_innermost_;
  std::vector<int64_t> latest_end_;  // per step: the latest end among it and those before
  size_t steps_begun_ = 0;           // StepOf()'s last count of steps begun
  std::vector<uint32_t> op_unit_;
  std::vector<uint32_t> unit_thread_;
  absl::flat_hash_map<uint32_t, uint32_t> launch_unit_;  // runtime call -> unit
  FamilyTotals unit_families_;
  std::vector<uint32_t> family_rank_;
  absl::flat_hash_map<uint64_t, uint32_t> scope_ids_;  // (parent, name) -> scope
  StringMap<uint32_t> name_ids_;
  std::vector<uint32_t> normalized_;  // per host name: NormalizedName()
  StringMap<uint32_t> family_ids_;
};

}  // namespace

OpTree BuildOpTree(const TraceProfile& profile) { return Builder(profile).Build(); }

std::vector<std::vector<CategoryId>> KernelTypesOf(const TraceProfile& profile, const OpTree& tree,
                                                   const std::vector<uint32_t>& units) {
  absl::flat_hash_map<uint32_t, size_t> wanted;  // unit -> index into `units`
  for (size_t i = 0; i < units.size(); ++i) wanted.try_emplace(units[i], i);
  // Collected in trace order (one plain pass) and then put in start order, stable on trace order.
  std::vector<std::vector<std::pair<int64_t, CategoryId>>> started(units.size());
  const std::vector<CategoryId> category = profile.NameCategories();
  profile.kernels.ForEach([&](const KernelRecord& k) {
    if (k.group == kNoGroup || tree.group_unit[k.group] == kNoUnit) return;
    auto it = wanted.find(tree.group_unit[k.group]);
    if (it != wanted.end()) started[it->second].emplace_back(k.ts_ns, category[k.name]);
  });
  std::vector<std::vector<CategoryId>> types(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    std::stable_sort(started[i].begin(), started[i].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ts, c] : started[i]) types[i].push_back(c);
  }
  for (size_t i = 0; i < units.size(); ++i) {
    if (wanted[units[i]] != i) types[i] = types[wanted[units[i]]];  // asked for twice
  }
  return types;
}

}  // namespace tracefuse
