#include "tracefuse/reduce/op_tree.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <numeric>
#include <optional>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"

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

void UnitSpans::Place(size_t unit, const UnitSpan& span) {
  // 32 bits or apart: a difference that overflows, or does not fit, is kept whole.
  auto fits = [](int64_t from, int64_t to, uint32_t* out) {
    int64_t d;
    if (__builtin_sub_overflow(to, from, &d) || d < 0 || d >= kApart) return false;
    *out = static_cast<uint32_t>(d);
    return true;
  };
  if (!fits(bases_[unit / kBlock], span.ts_ns, &offsets_[unit]) ||
      !fits(span.ts_ns, span.end_ns, &durations_[unit])) {
    offsets_[unit] = kApart;
    apart_.emplace(static_cast<uint32_t>(unit), span);
  }
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

static_assert(sizeof(OpUnit) == 24, "a trace holds one OpUnit per top-level op");

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

template <typename T>
uint64_t BytesOf(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

template <typename T>
uint64_t BytesOf(const std::deque<T>& d) {
  return d.size() * sizeof(T);
}
uint64_t BytesOf(const std::vector<std::string>& strings) {
  uint64_t bytes = strings.capacity() * sizeof(std::string);
  for (const std::string& s : strings) bytes += s.capacity();
  return bytes;
}

// Frame is an open CPU event as nesting sees it: what the events and calls it encloses inherit.
struct Frame {
  int64_t end_ns = 0;
  uint32_t operator_unit = kNone;    // the unit of the outermost cpu_op at or above it
  uint32_t annotation_unit = kNone;  // the unit of the nearest annotation (not a step) above it
  uint32_t scope = kRootScope;       // its module frames, itself included
  uint32_t shaped_op = kNone;        // a cpu_op with a model: its OpTree::shaped_ops entry
  uint32_t launch_op = kNoOp;        // the innermost cpu_op at or above it (launch sites only)
  bool in_step = false;              // it is a step, or a step encloses it
  OpModelFamily family = OpModelFamily::kNone;  // of its model
  uint8_t counted_inside = 0;  // the model families counted inside it, one bit each
};

// UnitLinker is what both paths share: the units, scopes and steps found by nesting, the unit of
// each correlation id, and, once the trace is read, the kernels' attribution and the units'
// order.
class UnitLinker {
 public:
  // `launch_sites`: keep each launch's site (OpTree::group_launch).
  explicit UnitLinker(bool launch_sites) : launch_sites_(launch_sites) {
    tree_.scopes.push_back(ScopeNode{});
  }

  // KeepUnitSpans() keeps each unit's span (OpTree::unit_spans); before the first unit only.
  void KeepUnitSpans() { unit_spans_ = true; }

  // Open() is the frame of `op`, named `name` (host name id op.name) on `thread`, with recorded
  // arguments `shapes`, inside `parent` (nullptr: no open event): a top-level cpu_op makes a
  // unit, an annotation outside every cpu_op a unit kept only if a kernel comes to it, a module
  // frame a scope, and a step no other encloses a step.
  Frame Open(const Frame* parent, const HostOp& op, std::string_view name, std::string_view shapes,
             uint32_t thread) {
    Frame f;
    if (parent != nullptr) f = *parent;
    f.end_ns = EndOf(op);
    f.shaped_op = kNone;
    f.family = OpModelFamily::kNone;
    f.counted_inside = 0;
    const uint32_t parent_scope = parent == nullptr ? kRootScope : parent->scope;
    switch (op.kind) {
      case HostOpKind::kOperator:
        if (f.operator_unit == kNone) {
          f.operator_unit = NewUnit(NormalizedName(op.name, name), parent_scope, op.ts_ns, f.end_ns,
                                    op.position, thread, kReferenced);
        }
        if (launch_sites_) f.launch_op = NormalizedName(op.name, name);
        if (const OpModel model = ModelOf(op.name, name); model != OpModel::kNone) {
          f.shaped_op = ShapedOpOf(op, model, name, shapes);
          f.family = FamilyOf(model);
        }
        break;
      case HostOpKind::kAnnotation:
        if (f.operator_unit == kNone) {
          f.annotation_unit = NewUnit(NormalizedName(op.name, name), parent_scope, op.ts_ns,
                                      f.end_ns, op.position, thread, 0);
        }
        break;
      case HostOpKind::kModule:
        f.scope = ChildScope(f.scope, NormalizedName(op.name, name));
        break;
      case HostOpKind::kStep:
        if (!f.in_step) tree_.steps.push_back(StepSpan{op.ts_ns, f.end_ns, op.position});
        break;
    }
    f.in_step = f.in_step || op.kind == HostOpKind::kStep;
    return f;
  }

  // Close() ends `closing`, whose enclosing open event is `parent` (nullptr: none): a cpu_op with
  // a model counts in its unit unless an op of its family counted inside it, and a unit's count
  // is final when its top-level op closes.
  void Close(const Frame& closing, Frame* parent) {
    uint8_t counted = closing.counted_inside;
    if (closing.shaped_op != kNone) {
      const auto bit = static_cast<uint8_t>(1u << static_cast<unsigned>(closing.family));
      if ((counted & bit) == 0) {
        CountWork(closing.operator_unit, closing.shaped_op);
        counted |= bit;
      }
    }
    if (parent != nullptr) parent->counted_inside |= counted;
    const bool unit_closes = closing.operator_unit != kNone &&
                             (parent == nullptr || parent->operator_unit != closing.operator_unit);
    if (unit_closes && counted != 0) FinishUnitWork(closing.operator_unit);
  }

  // ForgetHostNames() starts a new numbering of host names (a streamed chunk's own): the
  // normalised names stay, only the cache by host name goes.
  void ForgetHostNames() {
    normalized_.clear();
    models_.clear();
    ClearKeepingCapacity(&shaped_op_of_host_);
  }

  // Link() gives `call`'s correlation id, unless an earlier call carried it, the unit its
  // kernels go to: that of the outermost cpu_op or else the nearest annotation above the call
  // (`innermost` is the innermost open event, nullptr for none), or else a unit of its own, the
  // launch's.
  void Link(const Frame* innermost, const RuntimeCall& call, std::string_view name,
            uint32_t thread) {
    auto [index, added] =
        correlations_.FindOrAdd(call.correlation, static_cast<uint32_t>(links_.size()));
    if (!added) return;
    CallLink link;
    link.graph = IsGraphLaunch(name);
    if (innermost != nullptr && innermost->operator_unit != kNone) {
      link.unit = innermost->operator_unit;
    } else if (innermost != nullptr && innermost->annotation_unit != kNone) {
      link.unit = innermost->annotation_unit;
    } else {
      link.unit = NewUnit(Name(std::string(LaunchUnitName(name))),
                          innermost == nullptr ? kRootScope : innermost->scope, call.ts_ns,
                          call.ts_ns, call.position, thread, kLaunch);
      link.linked = false;
    }
    links_.push_back(link);
    if (launch_sites_) {
      link_sites_.push_back(
          innermost == nullptr ? LaunchSite{} : LaunchSite{innermost->launch_op, innermost->scope});
    }
  }

  CpuSideBytes Bytes() const {
    CpuSideBytes b;
    b.units = pending_.size() * (sizeof(PendingUnit) + sizeof(uint8_t)) + BytesOf(tree_.units);
    b.correlation_index = correlations_.bytes() + BytesOf(links_) + BytesOf(link_sites_);
    b.names = BytesOf(tree_.families) + BytesOf(tree_.name_family) + BytesOf(tree_.names) +
              BytesOf(tree_.scopes) + BytesOf(tree_.steps) + BytesOf(normalized_) +
              name_ids_.capacity() * (sizeof(std::string) + 8) + scope_ids_.capacity() * 16;
    b.work = WorkBytes();
    return b;
  }

  // Finish() attributes `p`'s kernels to the units and orders them. `threads` names the
  // threads (units' thread ids index it); `held` gets what the linker held at its largest.
  OpTree Finish(const TraceProfile& p, const std::vector<std::string>& threads,
                uint64_t events_without_times, CpuSideBytes* held) {
    tree_.cpu_events_without_times = events_without_times;
    *held = Bytes();
    std::vector<GroupLink> group_link = LinkGroups(p);
    OrderUnits(threads, &group_link);
    held->units = std::max(held->units, ordering_bytes_);  // the units took the pending ones' place
    AttributeKernels(p, group_link);
    return std::move(tree_);
  }

 private:
  struct CallLink {
    uint32_t unit = kNone;
    bool linked = true;  // an op or annotation encloses the call
    bool graph = false;  // the call replays a graph
  };
  struct GroupLink {
    uint32_t unit = kNone;
    bool linked = false;
  };

  // PendingUnit is a unit while the trace is read: what ordering it needs. Units are laid out
  // as OpUnits once the trace is read, in their order.
  struct PendingUnit {
    int64_t ts_ns;
    uint32_t name, scope, position, thread;
  };
  static constexpr uint8_t kReferenced = 1;  // kept: a cpu_op's, or one a kernel came to
  static constexpr uint8_t kLaunch = 2;      // OpUnit::is_launch
  static constexpr uint8_t kGraph = 4;       // OpUnit::graph

  uint32_t NewUnit(uint32_t name, uint32_t scope, int64_t ts_ns, int64_t end_ns, uint32_t position,
                   uint32_t thread, uint8_t flags) {
    pending_.push_back(PendingUnit{ts_ns, name, scope, position, thread});
    if (unit_spans_) {
      int64_t dur;
      if (__builtin_sub_overflow(end_ns, ts_ns, &dur) || dur < 0 || dur >= UINT32_MAX) {
        pending_long_ends_.emplace(static_cast<uint32_t>(pending_.size() - 1), end_ns);
        dur = UINT32_MAX;
      }
      pending_durations_.push_back(static_cast<uint32_t>(dur));
    }
    unit_flags_.push_back(flags);
    return static_cast<uint32_t>(pending_.size() - 1);
  }

  // ModelOf() is OpModelOf() of a host name, told once per distinct name.
  OpModel ModelOf(uint32_t host_name, std::string_view name) {
    if (host_name >= models_.size()) models_.resize(host_name + 1, kUntold);
    uint8_t& model = models_[host_name];
    if (model == kUntold) model = static_cast<uint8_t>(OpModelOf(name));
    return static_cast<OpModel>(model);
  }

  // ShapedOpOf() is the shaped op of `op`, named `name` with recorded arguments `shapes`, told
  // once per distinct host name and shapes id (of the chunk, when streamed).
  uint32_t ShapedOpOf(const HostOp& op, OpModel model, std::string_view name,
                      std::string_view shapes) {
    auto [cached, added] = shaped_op_of_host_.try_emplace((uint64_t{op.name} << 32) | op.shapes, 0);
    if (added) cached->second = InternShapedOp(model, name, shapes);
    return cached->second;
  }

  uint32_t InternShapedOp(OpModel model, std::string_view name, std::string_view shapes) {
    std::string key = StrCat(name, "\x1e", shapes);
    auto [it, inserted] =
        shaped_op_ids_.try_emplace(std::move(key), static_cast<uint32_t>(tree_.shaped_ops.size()));
    if (inserted)
      tree_.shaped_ops.push_back(ShapedOp{model, std::string(name), std::string(shapes)});
    return it->second;
  }

  // OpenWork is the ops counted so far in one open unit. Units nest per thread, so few are open
  // at once: a short list, its vectors reused.
  struct OpenWork {
    uint32_t unit = kNone;
    std::vector<UnitWork> ops;
  };

  void CountWork(uint32_t unit, uint32_t shaped_op) {
    auto open = std::find_if(open_work_.begin(), open_work_.end(),
                             [unit](const OpenWork& w) { return w.unit == unit; });
    if (open == open_work_.end()) {
      open = std::find_if(open_work_.begin(), open_work_.end(),
                          [](const OpenWork& w) { return w.unit == kNone; });
      if (open == open_work_.end()) open = open_work_.insert(open_work_.end(), OpenWork());
      open->unit = unit;
    }
    auto op = std::find_if(open->ops.begin(), open->ops.end(),
                           [shaped_op](const UnitWork& w) { return w.shaped_op == shaped_op; });
    if (op == open->ops.end()) op = open->ops.insert(open->ops.end(), UnitWork{shaped_op, 0});
    ++op->count;
  }

  // FinishUnitWork() makes the ops counted in `unit` a work set, shared with the units that
  // counted the same ones: a model's layers repeat their shapes, and most units count one op.
  void FinishUnitWork(uint32_t unit) {
    auto open = std::find_if(open_work_.begin(), open_work_.end(),
                             [unit](const OpenWork& w) { return w.unit == unit; });
    if (open == open_work_.end()) return;
    std::vector<UnitWork>& set = open->ops;
    std::sort(set.begin(), set.end(),
              [](const UnitWork& a, const UnitWork& b) { return a.shaped_op < b.shaped_op; });
    const uint32_t next_set = static_cast<uint32_t>(tree_.work_sets.size() - 1);
    uint32_t id;
    if (set.size() == 1 && set[0].count == 1) {
      id = single_op_sets_.try_emplace(set[0].shaped_op, next_set).first->second;
    } else {
      std::string key(reinterpret_cast<const char*>(set.data()), set.size() * sizeof(UnitWork));
      id = work_set_ids_.try_emplace(std::move(key), next_set).first->second;
    }
    if (id == next_set) {
      tree_.work.insert(tree_.work.end(), set.begin(), set.end());
      tree_.work_sets.push_back(static_cast<uint32_t>(tree_.work.size()));
    }
    if (pending_work_.size() <= unit) pending_work_.resize(pending_.size(), kNoWork);
    pending_work_[unit] = id;
    set.clear();
    open->unit = kNone;
  }

  uint64_t WorkBytes() const {
    uint64_t bytes = BytesOf(tree_.work) + BytesOf(tree_.work_sets) + BytesOf(models_) +
                     tree_.shaped_ops.capacity() * sizeof(ShapedOp) +
                     shaped_op_ids_.capacity() * (sizeof(std::string) + 8) +
                     work_set_ids_.capacity() * (sizeof(std::string) + 8) +
                     single_op_sets_.capacity() * 8 + shaped_op_of_host_.capacity() * 16 +
                     BytesOf(pending_work_);
    // A shaped op is held twice: as the tree's entry and as the key "name\x1eshapes".
    for (const ShapedOp& op : tree_.shaped_ops) {
      bytes += 2 * (op.name.capacity() + op.shapes.capacity()) + 1;
    }
    bytes += tree_.work.size() * sizeof(UnitWork);  // the work sets' keys
    for (const OpenWork& open : open_work_) bytes += sizeof(OpenWork) + BytesOf(open.ops);
    return bytes;
  }

  uint32_t ChildScope(uint32_t parent, uint32_t name) {
    auto [it, inserted] = scope_ids_.try_emplace((uint64_t{parent} << 32) | name,
                                                 static_cast<uint32_t>(tree_.scopes.size()));
    if (inserted) tree_.scopes.push_back(ScopeNode{parent, name, tree_.scopes[parent].depth + 1});
    return it->second;
  }

  // NormalizedName() is the tree's name of a host name, normalised once per distinct name.
  uint32_t NormalizedName(uint32_t host_name, std::string_view name) {
    if (host_name >= normalized_.size()) normalized_.resize(host_name + 1, kNone);
    uint32_t& id = normalized_[host_name];
    if (id == kNone) id = Name(NormalizeOpName(name));
    return id;
  }

  uint32_t Name(const std::string& name) {
    auto [it, inserted] = name_ids_.try_emplace(name, static_cast<uint32_t>(tree_.names.size()));
    if (inserted) tree_.names.push_back(name);
    return it->second;
  }

  // LinkGroups() finds each correlation group's unit and lets the correlation index go.
  std::vector<GroupLink> LinkGroups(const TraceProfile& p) {
    std::vector<GroupLink> group_link(p.correlated_groups());
    if (launch_sites_) tree_.group_launch.resize(group_link.size());
    PackedCorrelations::Cursor cursor;
    for (size_t g = 0; g < group_link.size(); ++g) {
      const std::optional<uint32_t> call =
          correlations_.Find(*p.GroupCorrelation(static_cast<uint32_t>(g), &cursor));
      if (!call) continue;
      const CallLink& link = links_[*call];
      group_link[g] = GroupLink{link.unit, link.linked};
      unit_flags_[link.unit] |= kReferenced | (link.graph ? kGraph : 0);
      if (launch_sites_) tree_.group_launch[g] = link_sites_[*call];
    }
    correlations_.Clear();
    links_ = std::vector<CallLink>();
    link_sites_ = std::vector<LaunchSite>();
    return group_link;
  }

  // SortSteps() orders the steps by start, for StepOf().
  void SortSteps() {
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

  // AttributeKernels() adds each kernel to its correlation group's unit, in one pass over the
  // kernel records. Which families a unit ran is not kept: the comparison counts them by row, in
  // a pass of its own (CompareOps()).
  void AttributeKernels(const TraceProfile& p, const std::vector<GroupLink>& group_link) {
    tree_.group_unit.resize(group_link.size());
    for (size_t g = 0; g < group_link.size(); ++g) tree_.group_unit[g] = group_link[g].unit;
    tree_.name_family.resize(p.names.size());
    for (size_t n = 0; n < p.names.size(); ++n) tree_.name_family[n] = Family(p.names[n]);
    absl::flat_hash_map<uint32_t, std::pair<uint64_t, int64_t>> no_launch;  // name -> totals
    p.kernels.ForEach([&](const KernelRecord& k) {
      ++tree_.kernels;
      tree_.kernel_time_ns += k.dur_ns;
      const GroupLink link = k.group == kNoGroup ? GroupLink{} : group_link[k.group];
      if (link.unit == kNone) {
        tree_.no_launch_ns += k.dur_ns;
        auto& [count, time_ns] = no_launch[k.name];
        ++count;
        time_ns += k.dur_ns;
        return;
      }
      (link.linked ? tree_.linked_ns : tree_.launch_only_ns) += k.dur_ns;
      OpUnit& unit = tree_.units[link.unit];
      unit.time_ns += k.dur_ns;
      ++unit.kernels;
    });
    for (const auto& [name, totals] : no_launch) {
      tree_.no_launch_kernels.push_back(UnitKernels{name, totals.first, totals.second});
    }
    std::sort(tree_.no_launch_kernels.begin(), tree_.no_launch_kernels.end(),
              [&](const UnitKernels& a, const UnitKernels& b) {
                if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
                return p.names[a.name] < p.names[b.name];
              });
  }

  uint32_t Family(const std::string& name) {
    std::string family = KernelFamily(name);
    auto [it, inserted] =
        family_ids_.try_emplace(family, static_cast<uint32_t>(tree_.families.size()));
    if (inserted) tree_.families.push_back(std::move(family));
    return it->second;
  }

  // OrderUnits() keeps the units that are a cpu_op's or that a kernel came to, and lays them
  // out as OpUnits by step, thread rank, start and position; `group_link` follows them.
  void OrderUnits(const std::vector<std::string>& threads, std::vector<GroupLink>* group_link) {
    SortSteps();
    std::vector<int32_t> step(pending_.size(), kNoStep);
    std::vector<uint32_t> order;
    for (uint32_t u = 0; u < pending_.size(); ++u) {
      if ((unit_flags_[u] & kReferenced) == 0) continue;
      step[u] = StepOf(pending_[u].ts_ns);
      order.push_back(u);
    }
    const std::vector<uint32_t> rank = RankThreads(threads, order);
    auto step_key = [&](uint32_t u) { return static_cast<uint32_t>(step[u]); };  // kNoStep last
    SortRuns(&order, [&](uint32_t a, uint32_t b) {
      const PendingUnit &x = pending_[a], &y = pending_[b];
      if (step[a] != step[b]) return step_key(a) < step_key(b);
      if (rank[x.thread] != rank[y.thread]) return rank[x.thread] < rank[y.thread];
      if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
      return x.position < y.position;
    });
    std::vector<uint32_t> new_index(pending_.size(), kNone);
    for (uint32_t i = 0; i < order.size(); ++i) new_index[order[i]] = i;
    for (GroupLink& link : *group_link) {
      if (link.unit != kNone) link.unit = new_index[link.unit];
    }
    const size_t kept = order.size();
    if (unit_spans_) {
      // order[i] is the pending unit that becomes unit i.
      tree_.unit_spans.Set(kept, [&](size_t unit) {
        const uint32_t u = order[unit];
        const int64_t ts = pending_[u].ts_ns;
        return UnitSpan{ts, pending_durations_[u] == UINT32_MAX
                                ? pending_long_ends_.at(u)
                                : ts + int64_t{pending_durations_[u]}};
      });
      pending_durations_ = std::deque<uint32_t>();
      pending_long_ends_ = absl::flat_hash_map<uint32_t, int64_t>();
    }
    ordering_bytes_ = pending_.size() * (sizeof(PendingUnit) + sizeof(uint8_t)) + BytesOf(step) +
                      BytesOf(order) + BytesOf(new_index);
    order = std::vector<uint32_t>();
    // Each pending unit becomes its OpUnit as the deque's blocks are freed, so the units take the
    // blocks the pending units leave (the same size); then they move to their places, the units
    // no kernel came to after the kept ones, to be dropped.
    uint32_t dropped = static_cast<uint32_t>(kept);
    for (uint32_t u = 0; !pending_.empty(); ++u) {
      OpUnit unit;
      unit.name = pending_.front().name;
      unit.scope = pending_.front().scope;
      unit.step = step[u];
      unit.is_launch = (unit_flags_[u] & kLaunch) != 0;
      unit.graph = (unit_flags_[u] & kGraph) != 0;
      tree_.units.push_back(unit);
      pending_.pop_front();
      if (new_index[u] == kNone) new_index[u] = dropped++;
    }
    if (!pending_work_.empty()) {
      tree_.unit_work.assign(kept, kNoWork);
      for (uint32_t u = 0; u < pending_work_.size(); ++u) {
        if (pending_work_[u] != kNoWork && new_index[u] < kept) {
          tree_.unit_work[new_index[u]] = pending_work_[u];
        }
      }
    }
    for (size_t i = 0; i < tree_.units.size(); ++i) {
      while (new_index[i] != i) {
        const uint32_t to = new_index[i];
        std::swap(tree_.units[i], tree_.units[to]);
        std::swap(new_index[i], new_index[to]);
      }
    }
    tree_.units.resize(kept);
    pending_work_ = std::vector<uint32_t>();
    shaped_op_ids_ = StringMap<uint32_t>();
    work_set_ids_ = StringMap<uint32_t>();
    single_op_sets_ = absl::flat_hash_map<uint32_t, uint32_t>();
    pending_ = std::deque<PendingUnit>();
    unit_flags_ = std::deque<uint8_t>();
    latest_end_ = std::vector<int64_t>();
  }

  // RankThreads() ranks the threads of `units` by their first unit's start, then by name.
  std::vector<uint32_t> RankThreads(const std::vector<std::string>& names,
                                    const std::vector<uint32_t>& units) const {
    std::vector<int64_t> first(names.size(), INT64_MAX);
    for (uint32_t u : units) {
      first[pending_[u].thread] = std::min(first[pending_[u].thread], pending_[u].ts_ns);
    }
    std::vector<uint32_t> threads(names.size());
    std::iota(threads.begin(), threads.end(), 0u);
    std::sort(threads.begin(), threads.end(), [&](uint32_t a, uint32_t b) {
      if (first[a] != first[b]) return first[a] < first[b];
      return names[a] < names[b];
    });
    std::vector<uint32_t> rank(threads.size());
    for (uint32_t r = 0; r < threads.size(); ++r) rank[threads[r]] = r;
    return rank;
  }

  OpTree tree_;
  std::deque<PendingUnit> pending_;  // grows without copying
  std::deque<uint8_t> unit_flags_;   // per pending unit
  uint64_t ordering_bytes_ = 0;      // what OrderUnits() held at its largest
  GroupIndex correlations_;          // correlation id -> its entry of links_
  std::vector<CallLink> links_;
  bool launch_sites_;
  bool unit_spans_ = false;
  // Per pending unit, with unit spans: its duration, or UINT32_MAX and its end apart.
  std::deque<uint32_t> pending_durations_;
  absl::flat_hash_map<uint32_t, int64_t> pending_long_ends_;
  std::vector<LaunchSite> link_sites_;  // per entry of links_, with launch sites
  std::vector<int64_t> latest_end_;     // per step: the latest end among it and those before
  size_t steps_begun_ = 0;              // StepOf()'s last count of steps begun
  absl::flat_hash_map<uint64_t, uint32_t> scope_ids_;  // (parent, name) -> scope
  StringMap<uint32_t> name_ids_;
  std::vector<uint32_t> normalized_;  // per host name: NormalizedName()
  StringMap<uint32_t> family_ids_;
  // The perf models' counts: per host name its model (kUntold until asked), the shaped ops and
  // work sets by content, per unit its work set.
  static constexpr uint8_t kUntold = UINT8_MAX;
  std::vector<uint8_t> models_;
  StringMap<uint32_t> shaped_op_ids_;
  StringMap<uint32_t> work_set_ids_;                           // several ops, or one op n times
  absl::flat_hash_map<uint32_t, uint32_t> single_op_sets_;     // shaped op -> its set of one
  absl::flat_hash_map<uint64_t, uint32_t> shaped_op_of_host_;  // (host name, shapes) -> op
  std::vector<OpenWork> open_work_;
  std::vector<uint32_t> pending_work_;  // per pending unit: its work set; kNoWork past the end
};

// NestAnyOrder() nests a collected CPU side into `linker`, thread by thread: ops by start,
// longer and enclosing kinds first, calls after the ops that start with them; then links the
// calls in trace order.
void NestAnyOrder(const TraceHost& host, UnitLinker* linker, CpuSideBytes* bytes) {
  const auto& ops = host.ops;
  const auto& calls = host.calls;
  std::vector<Frame> frames(ops.size());
  std::vector<uint32_t> call_innermost(calls.size(), kNone);
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
  auto close_top = [&] {
    const uint32_t closing = stack.back();
    stack.pop_back();
    linker->Close(frames[closing], stack.empty() ? nullptr : &frames[stack.back()]);
  };
  auto enter_thread = [&](uint32_t t) {
    if (t != thread) {
      while (!stack.empty()) close_top();
    }
    thread = t;
  };
  auto close_before = [&](int64_t ts) {
    while (!stack.empty() && frames[stack.back()].end_ns <= ts) close_top();
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
      call_innermost[call_order[c]] = stack.empty() ? kNone : stack.back();
    }
  };
  for (uint32_t i : op_order) {
    place_calls_before(ops[i].thread, ops[i].ts_ns, false);
    enter_thread(ops[i].thread);
    close_before(ops[i].ts_ns);
    const Frame* parent = stack.empty() ? nullptr : &frames[stack.back()];
    const std::string_view shapes =
        ops[i].shapes == kNoShapes ? std::string_view() : host.shapes[ops[i].shapes];
    frames[i] = linker->Open(parent, ops[i], host.names[ops[i].name], shapes, ops[i].thread);
    stack.push_back(i);
  }
  place_calls_before(UINT32_MAX, INT64_MAX, true);
  while (!stack.empty()) close_top();
  for (uint32_t k = 0; k < calls.size(); ++k) {
    const uint32_t innermost = call_innermost[k];
    linker->Link(innermost == kNone ? nullptr : &frames[innermost], calls[k],
                 host.names[calls[k].name], calls[k].thread);
  }
  bytes->nesting =
      BytesOf(frames) + BytesOf(call_innermost) + BytesOf(op_order) + BytesOf(call_order);
  bytes->collected_events = host.CollectedBytes();
}

OpTree BuildAnyOrder(const TraceProfile& profile, CpuSideBytes* held) {
  UnitLinker linker(profile.host.launch_sites);
  if (profile.host.unit_spans) linker.KeepUnitSpans();
  CpuSideBytes nesting;
  NestAnyOrder(profile.host, &linker, &nesting);
  OpTree tree =
      linker.Finish(profile, profile.host.threads, profile.host.events_without_times, held);
  held->nesting = nesting.nesting;
  held->collected_events = nesting.collected_events;
  return tree;
}

const char* KindName(HostOpKind kind) {
  switch (kind) {
    case HostOpKind::kStep:
      return "step";
    case HostOpKind::kAnnotation:
      return "annotation";
    case HostOpKind::kModule:
      return "module frame";
    case HostOpKind::kOperator:
      return "cpu_op";
  }
  return "event";
}

}  // namespace

// The stream's state: the linker, the trace's host names and threads, and per thread its open
// events and the last op and call seen, against which the next one's order is checked.
struct CpuSideStream::Impl {
  struct Thread {
    std::vector<Frame> open;
    bool any_op = false, any_call = false;
    int64_t op_ts = 0, op_dur = 0, call_ts = 0;
    HostOpKind op_kind = HostOpKind::kStep;

    // CloseBefore() closes the open events that end by `ts` (all for INT64_MAX: the trace's end).
    void CloseBefore(int64_t ts, UnitLinker* linker) {
      while (!open.empty() && open.back().end_ns <= ts) {
        const Frame closing = open.back();
        open.pop_back();
        linker->Close(closing, open.empty() ? nullptr : &open.back());
      }
    }
    const Frame* innermost() const { return open.empty() ? nullptr : &open.back(); }
    // OpInOrder() says whether `op` comes after every event seen on the thread in nesting order:
    // by start, longer first, enclosing kinds first, and after every call that starts before it.
    bool OpInOrder(const HostOp& op) const {
      if (any_call && op.ts_ns <= call_ts) return false;
      if (!any_op || op.ts_ns > op_ts) return true;
      if (op.ts_ns < op_ts) return false;
      if (op.dur_ns != op_dur) return op.dur_ns < op_dur;
      return op.kind >= op_kind;
    }
    bool CallInOrder(const RuntimeCall& call) const {
      return (!any_call || call.ts_ns >= call_ts) && (!any_op || call.ts_ns >= op_ts);
    }
  };

  explicit Impl(bool launch_sites) : linker(launch_sites) {}

  UnitLinker linker;
  StringMap<uint32_t> thread_ids;
  std::vector<std::string> threads;
  std::vector<Thread> state;
  std::vector<uint32_t> chunk_threads;  // a chunk's thread ids -> the trace's
  uint64_t events_without_times = 0;
  std::string disorder;

  static void Intern(const InternedStrings& table, StringMap<uint32_t>* ids,
                     std::vector<std::string>* strings, std::vector<uint32_t>* to) {
    to->resize(table.size());
    for (size_t i = 0; i < table.size(); ++i) {
      auto [it, added] = ids->try_emplace(table[i], static_cast<uint32_t>(strings->size()));
      if (added) strings->emplace_back(table[i]);
      (*to)[i] = it->second;
    }
  }

  bool Consume(const HostActivity& chunk, uint64_t first_position) {
    // Host names are not kept past their chunk: the linker keeps the ones it uses, normalised (a
    // trace may name each of its steps differently).
    linker.ForgetHostNames();
    Intern(chunk.threads, &thread_ids, &threads, &chunk_threads);
    if (state.size() < threads.size()) state.resize(threads.size());
    // Ops and calls are each in trace order: merge them by position.
    size_t o = 0, c = 0;
    while (o < chunk.ops.size() || c < chunk.calls.size()) {
      if (c == chunk.calls.size() ||
          (o < chunk.ops.size() && chunk.ops[o].position < chunk.calls[c].position)) {
        HostOp op = chunk.ops[o++];
        op.thread = chunk_threads[op.thread];
        op.position = static_cast<uint32_t>(first_position + op.position);
        const std::string_view shapes =
            op.shapes == kNoShapes ? std::string_view() : chunk.shapes[op.shapes];
        if (!Open(op, chunk.names[op.name], shapes)) return false;
      } else {
        RuntimeCall call = chunk.calls[c++];
        call.thread = chunk_threads[call.thread];
        call.position = static_cast<uint32_t>(first_position + call.position);
        if (!Place(call, chunk.names[call.name])) return false;
      }
    }
    return true;
  }

  bool Open(const HostOp& op, std::string_view name, std::string_view shapes) {
    Thread& t = state[op.thread];
    if (!t.OpInOrder(op)) return OutOfOrder(KindName(op.kind), op.position, op.thread);
    t.any_op = true;
    t.op_ts = op.ts_ns;
    t.op_dur = op.dur_ns;
    t.op_kind = op.kind;
    t.CloseBefore(op.ts_ns, &linker);
    const Frame f = linker.Open(t.innermost(), op, name, shapes, op.thread);
    t.open.push_back(f);
    return true;
  }

  bool Place(const RuntimeCall& call, std::string_view name) {
    Thread& t = state[call.thread];
    if (!t.CallInOrder(call)) return OutOfOrder("runtime call", call.position, call.thread);
    t.any_call = true;
    t.call_ts = call.ts_ns;
    t.CloseBefore(call.ts_ns, &linker);
    linker.Link(t.innermost(), call, name, call.thread);
    return true;
  }

  bool OutOfOrder(const char* what, uint32_t position, uint32_t thread) {
    std::string pid_tid = threads[thread];
    std::replace(pid_tid.begin(), pid_tid.end(), '\t', '/');
    disorder = StrCat("event ", position, " (a ", what, " of thread ", pid_tid,
                      ") is out of its thread's time order");
    return false;
  }

  CpuSideBytes Bytes() const {
    CpuSideBytes b = linker.Bytes();
    b.nesting = BytesOf(state) + BytesOf(chunk_threads);
    for (const Thread& t : state) b.nesting += BytesOf(t.open);
    b.names += BytesOf(threads) + thread_ids.capacity() * (sizeof(std::string) + 8);
    return b;
  }

  OpTree Finish(const TraceProfile& profile, CpuSideBytes* held) {
    const CpuSideBytes streamed = Bytes();
    for (Thread& t : state) t.CloseBefore(INT64_MAX, &linker);
    state = std::vector<Thread>();
    OpTree tree = linker.Finish(profile, threads, events_without_times, held);
    held->nesting = streamed.nesting;
    held->names = std::max(held->names, streamed.names);
    return tree;
  }
};

CpuSideStream::CpuSideStream(bool launch_sites) : impl_(std::make_unique<Impl>(launch_sites)) {}
CpuSideStream::~CpuSideStream() = default;

void CpuSideStream::KeepUnitSpans() { impl_->linker.KeepUnitSpans(); }

bool CpuSideStream::Consume(const HostActivity& chunk, uint64_t first_position,
                            uint64_t events_without_times) {
  if (!impl_->Consume(chunk, first_position)) return false;
  impl_->events_without_times += events_without_times;
  return true;
}

const std::string& CpuSideStream::disorder() const { return impl_->disorder; }
uint64_t CpuSideStream::events_without_times() const { return impl_->events_without_times; }
CpuSideBytes CpuSideStream::Bytes() const { return impl_->Bytes(); }

OpTree BuildOpTree(const TraceProfile& profile) {
  CpuSideBytes held;
  if (profile.host.stream != nullptr) {
    CpuSideStream::Impl copy = *profile.host.stream->impl_;
    return copy.Finish(profile, &held);
  }
  return BuildAnyOrder(profile, &held);
}

OpTree TakeOpTree(TraceProfile* profile, CpuSideBytes* held) {
  if (profile->host.pack_correlations) profile->PackGroupCorrelations();
  CpuSideBytes bytes;
  OpTree tree;
  TraceHost& host = profile->host;
  if (host.stream != nullptr) {
    tree = host.stream->impl_->Finish(*profile, &bytes);
  } else {
    tree = BuildAnyOrder(*profile, &bytes);
  }
  TraceHost left;  // what the CPU side was, without its contents
  left.path = host.path;
  left.any_order_reason = std::move(host.any_order_reason);
  left.events_read_again = host.events_read_again;
  left.events_without_times = host.events_without_times;
  left.launch_sites = host.launch_sites;
  left.unit_spans = host.unit_spans;
  left.pack_correlations = host.pack_correlations;
  host = std::move(left);
  if (held != nullptr) *held = bytes;
  if (profile->by_op.state == ByOpClassification::State::kPending) {
    ClassifyByLaunchingOp(tree, *LaunchingOpTable::Builtin(), profile);
  }
  return tree;
}

namespace {

// OpCategories finds the category of a launch site by the table, remembering it per op name,
// unit name and scope: a trace has few of each, and many launches.
class OpCategories {
 public:
  // Found is a category and what gave it: an op's name, or a module's ("nn.Module: Class").
  struct Found {
    CategoryId category = 0;
    uint32_t by = kNoOp;  // index into OpTree::names
    bool module = false;
  };

  OpCategories(const OpTree& tree, const LaunchingOpTable& table, const RuleSet& rules)
      : tree_(tree), table_(table), rules_(rules), scope_(tree.scopes.size()) {}

  std::optional<Found> Of(const LaunchSite& site, uint32_t unit) {
    if (std::optional<Found> f = OfOp(site.op)) return f;
    if (unit != kNoUnit && !tree_.units[unit].is_launch) {
      if (std::optional<Found> f = OfOp(tree_.units[unit].name)) return f;
    }
    return OfScope(site.scope);
  }

 private:
  static constexpr uint32_t kUntold = UINT32_MAX - 1;

  std::optional<CategoryId> CategoryNamed(std::string_view category) const {
    return category.empty() ? std::nullopt : rules_.category_index(category);
  }

  std::optional<Found> OfOp(uint32_t name) {
    if (name == kNoOp) return std::nullopt;
    auto [it, added] = op_.try_emplace(name, std::nullopt);
    if (added) {
      if (std::optional<CategoryId> c = CategoryNamed(table_.CategoryOfOp(tree_.names[name]))) {
        it->second = Found{*c, name, false};
      }
    }
    return it->second;
  }

  // OfScope() is the category of the innermost module of `scope` that the table lists.
  std::optional<Found> OfScope(uint32_t scope) {
    if (scope == kRootScope) return std::nullopt;
    ScopeModule& module = scope_[scope];
    if (module.name == kUntold) {
      module.name = kNoOp;
      for (uint32_t s = scope; s != kRootScope; s = tree_.scopes[s].parent) {
        const uint32_t name = tree_.scopes[s].name;
        if (std::optional<CategoryId> c =
                CategoryNamed(table_.CategoryOfModule(tree_.names[name]))) {
          module = ScopeModule{name, *c};
          break;
        }
      }
    }
    if (module.name == kNoOp) return std::nullopt;
    return Found{module.category, module.name, true};
  }

  // ScopeModule is a scope's innermost listed module: its name, kNoOp for none, or kUntold.
  struct ScopeModule {
    uint32_t name = kUntold;
    CategoryId category = 0;
  };

  const OpTree& tree_;
  const LaunchingOpTable& table_;
  const RuleSet& rules_;
  absl::flat_hash_map<uint32_t, std::optional<Found>> op_;  // by op name
  std::vector<ScopeModule> scope_;
};

}  // namespace

void ClassifyByLaunchingOp(const OpTree& tree, const LaunchingOpTable& table,
                           TraceProfile* profile) {
  TraceProfile& p = *profile;
  p.by_op.names.clear();
  p.by_op.state = ByOpClassification::State::kDone;
  // Per name left in the default category, the kernel time (and count) each category and op
  // that launched it hold.
  struct Share {
    int64_t time_ns = 0;
    uint64_t kernels = 0;
    bool operator<(const Share& o) const {
      return time_ns != o.time_ns ? time_ns < o.time_ns : kernels < o.kernels;
    }
  };
  absl::flat_hash_map<uint32_t, absl::btree_map<std::pair<CategoryId, uint64_t>, Share>> found;
  if (!p.any_in_default_by_name()) {
    p.by_op.state = ByOpClassification::State::kNothingLeft;
    return;
  }
  if (tree.group_launch.empty()) return;
  OpCategories categories(tree, table, p.classifier->rule_set());
  p.kernels.ForEach([&](const KernelRecord& k) {
    if (k.group == kNoGroup || !p.in_default_by_name(k.name)) return;
    const std::optional<OpCategories::Found> f =
        categories.Of(tree.group_launch[k.group], tree.group_unit[k.group]);
    if (!f) return;
    const uint64_t by = (uint64_t{f->by} << 1) | uint64_t{f->module};
    Share& share = found[k.name][{f->category, by}];
    share.time_ns += k.dur_ns;
    ++share.kernels;
  });
  for (const auto& [name, shares] : found) {
    // The category with most time, then the op with most time in it; ties go to the lower id.
    absl::btree_map<CategoryId, Share> per_category;
    for (const auto& [key, share] : shares) {
      Share& c = per_category[key.first];
      c.time_ns += share.time_ns;
      c.kernels += share.kernels;
    }
    auto best = per_category.begin();
    for (auto it = per_category.begin(); it != per_category.end(); ++it) {
      if (best->second < it->second) best = it;
    }
    const std::pair<CategoryId, uint64_t>* op = nullptr;
    Share op_share;
    for (const auto& [key, share] : shares) {
      if (key.first == best->first && (op == nullptr || op_share < share)) {
        op = &key;
        op_share = share;
      }
    }
    const std::string& op_name = tree.names[op->second >> 1];
    p.by_op.names[name] =
        NameByOp{best->first, (op->second & 1) ? StrCat("nn.Module: ", op_name) : op_name};
  }
}

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
