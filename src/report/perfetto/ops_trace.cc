// The op-level comparison as one Perfetto trace (tracefuse/report/perfetto.h).
//
// Written in four passes over what the comparison kept, each in time order where Perfetto needs
// it: the fusion differences (first, so that their flows begin before the op slices that end
// them), each side's steps and top-level ops, then each side's kernels, memcpys and memsets
// merged by start with the devices' busy counters. Slices of one track come in start order,
// which is what lanes need: a slice takes the first lane of its track free at its start.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "report/perfetto/trace_writer.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/kernel_roles.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/perfetto.h"

namespace tracefuse {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference;
  if (__builtin_sub_overflow(a, b, &difference)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return difference;
}

// SideClock moves one side's recorded times onto the trace's clock: a time moves by the offset
// of the region it falls in, the regions beginning at the side's matched steps. Offsets never
// decrease from region to region, so the side keeps its order, and a gap never shrinks.
class SideClock {
 public:
  void AddRegion(int64_t start_ns, int64_t offset_ns) {
    starts_.push_back(start_ns);
    offsets_.push_back(offset_ns);
  }
  int64_t OffsetAt(int64_t ts_ns) const {
    auto after = std::upper_bound(starts_.begin(), starts_.end(), ts_ns);
    const size_t region = after == starts_.begin() ? 0 : (after - starts_.begin()) - 1;
    return offsets_.empty() ? 0 : offsets_[region];
  }
  // Place() is [start, end) of a recorded [ts, ts + dur) on the trace's clock: the duration is
  // kept.
  std::pair<int64_t, int64_t> Place(int64_t ts_ns, int64_t dur_ns) const {
    const int64_t start = SaturatingAdd(ts_ns, OffsetAt(ts_ns));
    return {start, SaturatingAdd(start, dur_ns)};
  }
  bool single() const { return offsets_.size() <= 1; }
  int64_t first_offset() const { return offsets_.empty() ? 0 : offsets_[0]; }

 private:
  std::vector<int64_t> starts_;  // the first from the start of time
  std::vector<int64_t> offsets_;
};

// Lanes places the slices of one track, in start order, each on the first lane free at its
// start: Perfetto nests the slices of a track, and kernels that overlap on one stream (real
// traces have them) do not nest.
class Lanes {
 public:
  size_t Place(int64_t start_ns, int64_t end_ns) {
    for (size_t lane = 0; lane < ends_.size(); ++lane) {
      if (ends_[lane] <= start_ns) {
        ends_[lane] = end_ns;
        return lane;
      }
    }
    ends_.push_back(end_ns);
    return ends_.size() - 1;
  }

 private:
  std::vector<int64_t> ends_;
};

// Placement is where a kernel, memcpy or memset ran.
struct Placement {
  int32_t device = -1;
  int32_t stream = -1;
  bool operator<(const Placement& o) const {
    return std::tie(device, stream) < std::tie(o.device, o.stream);
  }
};

std::string DeviceName(int32_t device) {
  return device < 0 ? std::string("GPU ?") : StrCat("GPU ", device);
}

std::string StreamTrackName(Placement p, size_t lane) {
  std::string name =
      StrCat(DeviceName(p.device), " stream ", p.stream < 0 ? std::string("?") : StrCat(p.stream));
  if (lane > 0) name += StrCat(" (overlap ", lane, ")");
  return name;
}

// SideExtent is what the clocks need of one side: where its first event starts, and where its
// kernels ran.
struct SideExtent {
  int64_t first_ns = std::numeric_limits<int64_t>::max();
  std::set<Placement> placements;
};

SideExtent ExtentOf(const TraceProfile& profile, const OpTree& tree) {
  SideExtent e;
  std::optional<Placement> last;  // most kernels run where the one before did: no set lookup
  profile.kernels.ForEach([&](const KernelRecord& k) {
    e.first_ns = std::min(e.first_ns, k.ts_ns);
    if (!last || last->device != k.device || last->stream != k.stream) {
      last = Placement{k.device, k.stream};
      e.placements.insert(*last);
    }
  });
  for (const TransferRecord& t : profile.transfers) {
    e.first_ns = std::min(e.first_ns, t.ts_ns);
    e.placements.insert(Placement{t.device, t.stream});
  }
  for (size_t u = 0; u < tree.unit_spans.size(); ++u) {
    e.first_ns = std::min(e.first_ns, tree.unit_spans[u].ts_ns);
  }
  for (const StepSpan& s : tree.steps) e.first_ns = std::min(e.first_ns, s.ts_ns);
  if (e.first_ns == std::numeric_limits<int64_t>::max()) e.first_ns = 0;
  return e;
}

// ClocksFor() places both sides: both begin at 0 (short timestamps, where recorded ones are
// nanoseconds since 1970), and with kSteps their matched steps start together, each step where
// the later of the two sides' stretches before it fits.
PerSide<SideClock> ClocksFor(const PerSide<const OpTree*>& trees, const PerSide<SideExtent>& extent,
                             PerfettoAlign align) {
  constexpr int64_t origin = 0;
  PerSide<SideClock> clocks;
  const size_t steps = align == PerfettoAlign::kNone ? 0
                                                     : std::min(trees[Side::kTrace1]->steps.size(),
                                                                trees[Side::kTrace2]->steps.size());
  if (steps == 0) {
    for (Side side : kSides) {
      clocks[side].AddRegion(std::numeric_limits<int64_t>::min(),
                             SaturatingSub(origin, extent[side].first_ns));
    }
    return clocks;
  }
  auto step_start = [&](Side side, size_t k) { return trees[side]->steps[k].ts_ns; };
  int64_t aligned = origin;
  for (Side side : kSides) {
    aligned = std::max(
        aligned, SaturatingAdd(origin, SaturatingSub(step_start(side, 0), extent[side].first_ns)));
  }
  for (size_t k = 0; k < steps; ++k) {
    if (k > 0) {
      int64_t widest = 0;
      for (Side side : kSides) {
        widest = std::max(widest, SaturatingSub(step_start(side, k), step_start(side, k - 1)));
      }
      aligned = SaturatingAdd(aligned, widest);
    }
    for (Side side : kSides) {
      clocks[side].AddRegion(k == 0 ? std::numeric_limits<int64_t>::min() : step_start(side, k),
                             SaturatingSub(aligned, step_start(side, k)));
    }
  }
  return clocks;
}

// ScopeTexts interns each of a tree's scope paths once, when first asked for (ids are a
// writer's: one ScopeTexts per writer).
class ScopeTexts {
 public:
  explicit ScopeTexts(const OpTree& tree) : tree_(tree), ids_(tree.scopes.size()) {}
  InternedText Of(TraceWriter* w, uint32_t scope) {
    if (ids_[scope].iid == 0) ids_[scope] = w->Text(tree_.ScopePath(scope));
    return ids_[scope];
  }

 private:
  const OpTree& tree_;
  std::vector<InternedText> ids_;
};

std::string RoleText(const KernelRole& role) {
  if (role.is_helper())
    return StrCat("helper: ", role.helper, " of ", absl::StrJoin(role.serves, ", "));
  if (!role.covers.empty()) return StrCat("main, fuses ", absl::StrJoin(role.covers, ", "));
  return "main";
}

// Each writer numbers its tracks from (sequence - 1) << kUuidBits: short varints in every packet,
// room for a million tracks a side.
constexpr int kUuidBits = 20;
constexpr uint64_t kDifferenceFlows = uint64_t{1} << 33;  // matched pairs' flows are below

// Ranks of a side's tracks under its process.
constexpr int32_t kStepsRank = 0;
constexpr int32_t kCpuOpsRank = 1;       // + lane
constexpr int32_t kCountersRank = 1000;  // + device ordinal
constexpr int32_t kStreamsRank = 2000;   // + placement ordinal x kLanesPerRank + lane
constexpr int32_t kLanesPerRank = 64;

// GpuWriter writes one side's kernels, memcpys and memsets merged by start, each on its stream's
// first free lane, and each device's busy counter: 1 from where an activity starts on an idle
// device, 0 where the last running one ends. What repeats per kernel (its name's family, full
// name, category and role; its op's name and scope) is interned once per name, op or scope.
class GpuWriter {
 public:
  GpuWriter(TraceWriter* writer, const TraceProfile& profile, const OpTree& tree,
            const SideClock& clock, uint64_t process, const std::vector<Placement>& placements,
            const KernelRoles& roles)
      : w_(*writer),
        profile_(profile),
        tree_(tree),
        clock_(clock),
        process_(process),
        placements_(placements),
        roles_(roles),
        names_(profile.names.size()),
        ops_(tree.names.size()),
        scopes_(tree),
        arg_{w_.ArgName("name"),       w_.ArgName("category"), w_.ArgName("role"),
             w_.ArgName("op"),         w_.ArgName("scope"),    w_.ArgName("step"),
             w_.ArgName("correlation")},
        no_op_(w_.Text("[no CPU op]")) {}

  void Write() {
    std::vector<uint32_t> transfers(profile_.transfers.size());
    std::iota(transfers.begin(), transfers.end(), 0u);
    std::stable_sort(transfers.begin(), transfers.end(), [&](uint32_t a, uint32_t b) {
      return profile_.transfers[a].ts_ns < profile_.transfers[b].ts_ns;
    });
    size_t next_transfer = 0;
    auto transfers_before = [&](std::optional<int64_t> ts_ns) {  // nullopt: all that are left
      while (next_transfer < transfers.size() &&
             (!ts_ns || profile_.transfers[transfers[next_transfer]].ts_ns < *ts_ns)) {
        WriteTransfer(profile_.transfers[transfers[next_transfer++]]);
      }
    };
    profile_.kernels.ForEachInTsOrder([&](const KernelRecord& k) {
      transfers_before(k.ts_ns);
      WriteKernel(k);
    });
    transfers_before(std::nullopt);
    for (auto& [device, busy] : busy_) {
      if (busy.running) w_.Counter(busy.track, busy.end_ns, 0);
    }
  }

 private:
  struct NameIds {
    bool known = false;
    uint64_t family = 0;
    InternedText name, category, role;
  };
  struct Stream {
    size_t ordinal = 0;
    Lanes lanes;
    std::vector<uint64_t> tracks;  // per lane, 0 until declared
  };
  // DeviceBusy is a device's running activities, as their latest end.
  struct DeviceBusy {
    uint64_t track = 0;
    bool running = false;
    int64_t end_ns = 0;
  };

  void WriteKernel(const KernelRecord& k) {
    const auto [start, end] = clock_.Place(k.ts_ns, k.dur_ns);
    const uint64_t track = StreamTrack(Placement{k.device, k.stream}, start, end);
    MarkBusy(k.device, start, end);
    const NameIds& name = Name(k.name);
    args_.clear();
    args_.push_back({arg_.name, name.name});
    args_.push_back({arg_.category, name.category});
    args_.push_back({arg_.role, name.role});
    const uint32_t unit = k.group < tree_.group_unit.size() ? tree_.group_unit[k.group] : kNoUnit;
    if (unit != kNoUnit) {
      const OpUnit& u = tree_.units[unit];
      args_.push_back({arg_.op, Op(u.name)});
      if (u.scope != kRootScope) args_.push_back({arg_.scope, scopes_.Of(&w_, u.scope)});
      if (u.step != kNoStep) args_.push_back({arg_.step, int64_t{u.step}});
    } else {
      args_.push_back({arg_.op, no_op_});
    }
    if (const std::optional<int64_t> correlation = profile_.GroupCorrelation(k.group, &cursor_)) {
      args_.push_back({arg_.correlation, *correlation});
    }
    w_.Slice(track, start, end, name.family, args_);
  }

  void WriteTransfer(const TransferRecord& t) {
    const auto [start, end] = clock_.Place(t.ts_ns, t.dur_ns);
    const uint64_t track = StreamTrack(Placement{t.device, t.stream}, start, end);
    MarkBusy(t.device, start, end);
    args_.clear();
    if (t.correlation != 0) args_.push_back({arg_.correlation, t.correlation});
    w_.Slice(track, start, end, profile_.transfer_names[t.name], args_);
  }

  const NameIds& Name(uint32_t name) {
    NameIds& ids = names_[name];
    if (!ids.known) {
      ids.family = w_.EventName(tree_.families[tree_.name_family[name]]);
      ids.name = w_.Text(profile_.names[name]);
      ids.category = w_.Text(profile_.category_name(profile_.category_of_name(name)));
      ids.role = w_.Text(RoleText(roles_.RoleOf(profile_.names[name])));
      ids.known = true;
    }
    return ids;
  }

  InternedText Op(uint32_t name) {
    if (ops_[name].iid == 0) ops_[name] = w_.Text(tree_.names[name]);
    return ops_[name];
  }

  uint64_t StreamTrack(Placement p, int64_t start, int64_t end) {
    const uint64_t key =
        (uint64_t{static_cast<uint32_t>(p.device)} << 32) | static_cast<uint32_t>(p.stream);
    Stream* stream = key == last_key_ ? last_stream_ : nullptr;
    if (stream == nullptr) {
      auto [it, added] = streams_.try_emplace(key);
      if (added) {
        it->second.ordinal = static_cast<size_t>(
            std::lower_bound(placements_.begin(), placements_.end(), p) - placements_.begin());
      }
      stream = &it->second;
      last_key_ = key;
      last_stream_ = stream;
    }
    const size_t lane = stream->lanes.Place(start, end);
    if (lane >= stream->tracks.size()) stream->tracks.resize(lane + 1, 0);
    if (stream->tracks[lane] == 0) {
      const int64_t rank = kStreamsRank +
                           int64_t{kLanesPerRank} * static_cast<int64_t>(stream->ordinal) +
                           static_cast<int64_t>(std::min<size_t>(lane, kLanesPerRank - 1));
      stream->tracks[lane] = w_.AddTrack(
          process_, StreamTrackName(p, lane),
          static_cast<int32_t>(std::min<int64_t>(rank, std::numeric_limits<int32_t>::max())),
          lane == 0 ? std::string_view()
                    : std::string_view("Kernels that overlap others of the stream above"));
    }
    return stream->tracks[lane];
  }

  void MarkBusy(int32_t device, int64_t start, int64_t end) {
    auto [it, added] = busy_.try_emplace(device);
    DeviceBusy& busy = it->second;
    if (added) {
      busy.track =
          w_.AddCounterTrack(process_, StrCat(DeviceName(device), " busy"), "1 busy, 0 idle",
                             kCountersRank + static_cast<int32_t>(busy_.size()));
    }
    if (busy.running && start > busy.end_ns) {
      w_.Counter(busy.track, busy.end_ns, 0);
      busy.running = false;
    }
    if (!busy.running) {
      w_.Counter(busy.track, start, 1);
      busy.running = true;
      busy.end_ns = end;
    }
    busy.end_ns = std::max(busy.end_ns, end);
  }

  TraceWriter& w_;
  const TraceProfile& profile_;
  const OpTree& tree_;
  const SideClock& clock_;
  uint64_t process_;
  const std::vector<Placement>& placements_;
  const KernelRoles& roles_;
  std::vector<NameIds> names_;     // per kernel name
  std::vector<InternedText> ops_;  // per op name of the tree
  ScopeTexts scopes_;
  struct {
    uint64_t name, category, role, op, scope, step, correlation;
  } arg_;
  InternedText no_op_;
  absl::flat_hash_map<uint64_t, Stream> streams_;  // (device, stream) -> its lanes
  uint64_t last_key_ = UINT64_MAX;
  Stream* last_stream_ = nullptr;
  absl::flat_hash_map<int32_t, DeviceBusy> busy_;
  std::vector<TraceArg> args_;
  PackedCorrelations::Cursor cursor_;  // kernels come about in group order
};

// OpsTrace writes the whole trace: the processes; the fusion differences, then each side's steps
// and top-level ops on one sequence (flows begin at the earlier of their ends, and packets of
// equal time keep their order); each side's GPU on a sequence of its own. With two threads, trace
// 1's GPU is written beside the ops, then trace 2's.
class OpsTrace {
 public:
  OpsTrace(const OpComparison& ops, const PerfettoInput& input, OutputFile* out)
      : ops_(ops),
        input_(input),
        parallel_(input.threads > 1),
        sink_(out, parallel_ ? 2 : 1),
        writer_(&sink_, 1, 1),
        roles_(KernelRoles::Builtin()) {}

  absl::Status Write() {
    PerSide<SideExtent> extent;
    for (Side side : kSides) extent[side] = ExtentOf(Profile(side), Tree(side));
    clocks_ = ClocksFor(input_.trees, extent, input_.align);
    PairPartners();
    for (Side side : kSides) {
      sides_[side].process = writer_.AddProcess(static_cast<int32_t>(side) + 1, ProcessName(side),
                                                ClockDescription(side));
      sides_[side].placements.assign(extent[side].placements.begin(),
                                     extent[side].placements.end());
    }
    if (absl::Status st = writer_.Flush(); !st.ok()) return st;  // the processes, first
    PerSide<absl::Status> gpu;
    // Trace 1's kernels on lane 1, beside the ops; the rest on lane 0.
    auto write_gpu = [&](Side side) {
      const uint32_t sequence = 2 + static_cast<uint32_t>(side);
      const int lane = parallel_ && side == Side::kTrace1 ? 1 : 0;
      TraceWriter writer(&sink_, sequence, uint64_t{sequence - 1} << kUuidBits, lane);
      GpuWriter(&writer, Profile(side), Tree(side), clocks_[side], sides_[side].process,
                sides_[side].placements, *roles_)
          .Write();
      gpu[side] = writer.Finish();
      if (lane == 1) sink_.Close(1);
    };
    absl::Status ops;
    auto write_ops = [&] {
      WriteFusionDifferences();
      for (Side side : kSides) {
        WriteSteps(side);
        WriteOps(side);
      }
      ops = writer_.Finish();
    };
    if (parallel_) {  // trace 1's kernels beside the ops, then trace 2's
      std::thread first([&] { write_gpu(Side::kTrace1); });
      write_ops();
      write_gpu(Side::kTrace2);
      sink_.Close(0);
      first.join();
    } else {
      write_ops();
      for (Side side : kSides) write_gpu(side);
    }
    if (!ops.ok()) return ops;
    for (const absl::Status& st : gpu) {
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

 private:
  // SideState is what the writer holds per side.
  struct SideState {
    uint64_t process = 0;
    std::vector<Placement> placements;  // sorted: each stream's rank
    absl::flat_hash_map<uint32_t, std::vector<uint64_t>> difference_flows;  // unit -> flows
  };

  const TraceProfile& Profile(Side side) const { return *input_.traces[side]; }
  const OpTree& Tree(Side side) const { return *input_.trees[side]; }
  const std::string& Label(Side side) const { return input_.labels[side]; }

  std::string ProcessName(Side side) const {
    const std::string& gpu = ops_.traces[side].gpu;
    return gpu.empty() ? Label(side) : StrCat(Label(side), " (", gpu, ")");
  }

  std::string ClockDescription(Side side) const {
    std::string text = StrCat("trace ", static_cast<int>(side) + 1, ": ", Profile(side).path, ". ");
    if (clocks_[side].single()) {
      return text + StrCat("Times are the recorded ones plus ", clocks_[side].first_offset(),
                           " ns (one constant for the whole side); durations are as recorded.");
    }
    return text +
           "Times are the recorded ones plus the shift of the step they fall in, so that matched "
           "steps start together (each step slice's args give its shift); durations are as "
           "recorded.";
  }

  // PairPartners() gives trace 2's units their matched units (trace 1's are the comparison's).
  void PairPartners() {
    second_partners_.assign(Tree(Side::kTrace2).units.size(), kNoUnit);
    for (uint32_t u1 = 0; u1 < ops_.partners.size(); ++u1) {
      const uint32_t u2 = ops_.partners[u1];
      if (u2 < second_partners_.size()) second_partners_[u2] = u1;
    }
  }

  uint32_t PartnerOf(Side side, uint32_t unit) const {
    const std::vector<uint32_t>& partners =
        side == Side::kTrace1 ? ops_.partners : second_partners_;
    return unit < partners.size() ? partners[unit] : kNoUnit;
  }

  std::pair<int64_t, int64_t> UnitPlace(Side side, uint32_t unit) const {
    const UnitSpan s = Tree(side).unit_spans[unit];
    return clocks_[side].Place(s.ts_ns, std::max<int64_t>(SaturatingSub(s.end_ns, s.ts_ns), 0));
  }

  bool HasSpan(Side side, uint32_t unit) const { return unit < Tree(side).unit_spans.size(); }

  // WriteFusionDifferences() writes a slice per difference on a track of its own, where its
  // first instance starts, with a flow to the top-level op of each place it was found in.
  void WriteFusionDifferences() {
    if (ops_.fusion_differences.empty()) return;
    struct Placed {
      int64_t start, end;
      size_t difference;
    };
    std::vector<Placed> placed;
    for (size_t d = 0; d < ops_.fusion_differences.size(); ++d) {
      std::optional<std::pair<int64_t, int64_t>> first;
      for (Side side : kSides) {
        for (uint32_t unit : ops_.fusion_differences[d].instance_units[side]) {
          if (!HasSpan(side, unit)) continue;
          const std::pair<int64_t, int64_t> at = UnitPlace(side, unit);
          if (!first || at.first < first->first) first = at;
        }
      }
      if (!first) first = {0, 0};
      placed.push_back(Placed{first->first, first->second, d});
    }
    std::stable_sort(placed.begin(), placed.end(),
                     [](const Placed& a, const Placed& b) { return a.start < b.start; });
    Lanes lanes;
    std::vector<uint64_t> tracks;
    uint64_t next_flow = kDifferenceFlows;
    for (const Placed& p : placed) {
      const size_t lane = lanes.Place(p.start, p.end);
      while (tracks.size() <= lane) {
        tracks.push_back(writer_.AddTrack(
            0,
            tracks.empty() ? std::string("fusion differences")
                           : StrCat("fusion differences ", tracks.size() + 1),
            static_cast<int32_t>(tracks.size()),
            "One slice per fusion difference (as tracefuse ops reports them), where its first "
            "instance starts; its flows lead to the top-level op of each place it was found in."));
      }
      std::vector<uint64_t> flows;
      const FusionDifference& d = ops_.fusion_differences[p.difference];
      for (Side side : kSides) {
        for (uint32_t unit : d.instance_units[side]) {
          if (!HasSpan(side, unit)) continue;
          flows.push_back(next_flow);
          sides_[side].difference_flows[unit].push_back(next_flow++);
        }
      }
      WriteDifference(d, tracks[lane], p.start, p.end, flows);
    }
  }

  void WriteDifference(const FusionDifference& d, uint64_t track, int64_t start, int64_t end,
                       const std::vector<uint64_t>& flows) {
    const std::string relation = FusionRelationName(d.relation);
    std::string extras;
    for (const ExtraKernels& e : d.extra_kernels) {
      if (!extras.empty()) extras += ", ";
      extras += StrCat(e.count, "x ", e.family, " (", e.category, ")");
    }
    TraceWriter& w = writer_;
    const std::vector<TraceArg> args = {
        w.Arg("relation", relation),
        w.Arg("kind", FusionDifferenceKindName(d.kind)),
        w.Arg("op", d.op),
        w.Arg("scope", d.scope),
        w.Arg("fused by", d.relation == FusionRelation::kAlgorithm ? std::string_view("neither")
                                                                   : Label(d.fused_by)),
        w.Arg("fused kernel", d.fused_kernel),
        w.Arg("fused kernel name", d.fused_kernel_name),
        w.Arg("extra kernels", extras),
        w.Arg("extra kernel time (ns)", d.extra_time_ns),
        w.Arg("saving (ns)", d.saving_ns()),
        w.Arg("instances", d.instances),
        w.Arg(StrCat("kernels, ", Label(Side::kTrace1)), d.sides[Side::kTrace1].kernels),
        w.Arg(StrCat("kernels, ", Label(Side::kTrace2)), d.sides[Side::kTrace2].kernels),
    };
    w.Slice(track, start, end, StrCat(relation, ": ", d.op.empty() ? d.scope : d.op), args, flows);
  }

  void WriteSteps(Side side) {
    const OpTree& tree = Tree(side);
    if (tree.steps.empty()) return;
    TraceWriter& w = writer_;
    const uint64_t track = w.AddTrack(sides_[side].process, "steps", kStepsRank);
    for (size_t k = 0; k < tree.steps.size(); ++k) {
      const StepSpan& s = tree.steps[k];
      const int64_t dur = std::max<int64_t>(SaturatingSub(s.end_ns, s.ts_ns), 0);
      const auto [start, end] = clocks_[side].Place(s.ts_ns, dur);
      w.Slice(track, start, end, StrCat("step ", k),
              {w.Arg("step", k), w.Arg("recorded start (ns)", s.ts_ns),
               w.Arg("shift (ns)", SaturatingSub(start, s.ts_ns))});
    }
  }

  // WriteOps() writes the side's top-level ops by start, on lanes, each matched one with both
  // sides' kernel time and a flow to its partner: it begins at the earlier of the two (trace 1's
  // when they start together, as trace 1's are written first) and ends at the other.
  void WriteOps(Side side) {
    const OpTree& tree = Tree(side);
    if (tree.unit_spans.size() != tree.units.size() || tree.units.empty()) return;
    TraceWriter& w = writer_;
    std::vector<uint32_t> order(tree.units.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return tree.unit_spans[a].ts_ns < tree.unit_spans[b].ts_ns;
    });
    const uint64_t scope_arg = w.ArgName("scope"), step_arg = w.ArgName("step"),
                   kernels_arg = w.ArgName("kernels"), matched_arg = w.ArgName("matched");
    const PerSide<uint64_t> time_arg = {
        {w.ArgName(StrCat("kernel time (ns), ", Label(Side::kTrace1))),
         w.ArgName(StrCat("kernel time (ns), ", Label(Side::kTrace2)))}};
    const uint64_t delta_arg =
        w.ArgName(StrCat("delta (ns), ", Label(Side::kTrace1), " - ", Label(Side::kTrace2)));
    const uint64_t ratio_arg =
        w.ArgName(StrCat("ratio, ", Label(Side::kTrace1), " / ", Label(Side::kTrace2)));
    const InternedText no = w.Text("no");
    std::vector<uint64_t> names(tree.names.size(), 0);
    ScopeTexts scopes(tree);
    Lanes lanes;
    std::vector<uint64_t> tracks;
    std::vector<TraceArg> args;
    std::vector<uint64_t> flows, ending;
    for (uint32_t u : order) {
      const OpUnit& unit = tree.units[u];
      const auto [start, end] = UnitPlace(side, u);
      const size_t lane = lanes.Place(start, end);
      while (tracks.size() <= lane) {
        tracks.push_back(w.AddTrack(
            sides_[side].process,
            tracks.empty() ? std::string("CPU ops")
                           : StrCat("CPU ops (overlap ", tracks.size(), ")"),
            kCpuOpsRank + static_cast<int32_t>(std::min<size_t>(tracks.size(), kCountersRank - 2)),
            "The top-level ops (the outermost cpu_op above each launch), an annotation where no "
            "op encloses a launch, or the launch itself; flows link each matched pair."));
      }
      args.clear();
      flows.clear();
      ending.clear();
      if (unit.scope != kRootScope) {
        args.push_back({scope_arg, scopes.Of(&w, unit.scope)});
      }
      if (unit.step != kNoStep) args.push_back({step_arg, int64_t{unit.step}});
      args.push_back({kernels_arg, uint64_t{unit.kernels}});
      const uint32_t partner = PartnerOf(side, u);
      if (partner != kNoUnit) {
        PerSide<int64_t> times{};
        times[side] = unit.time_ns;
        times[Opposite(side)] = Tree(Opposite(side)).units[partner].time_ns;
        args.push_back({time_arg[Side::kTrace1], times[Side::kTrace1]});
        args.push_back({time_arg[Side::kTrace2], times[Side::kTrace2]});
        args.push_back({delta_arg, times[Side::kTrace1] - times[Side::kTrace2]});
        if (times[Side::kTrace2] > 0) {
          args.push_back({ratio_arg, static_cast<double>(times[Side::kTrace1]) /
                                         static_cast<double>(times[Side::kTrace2])});
        }
        const uint32_t u1 = side == Side::kTrace1 ? u : partner;
        const int64_t partner_start = UnitPlace(Opposite(side), partner).first;
        const bool begins =
            start < partner_start || (start == partner_start && side == Side::kTrace1);
        (begins ? flows : ending).push_back(uint64_t{u1} + 1);
      } else {
        args.push_back({time_arg[side], unit.time_ns});
        args.push_back({matched_arg, no});
      }
      if (auto it = sides_[side].difference_flows.find(u);
          it != sides_[side].difference_flows.end()) {
        ending.insert(ending.end(), it->second.begin(), it->second.end());
      }
      if (names[unit.name] == 0) names[unit.name] = w.EventName(tree.names[unit.name]);
      w.Slice(tracks[lane], start, end, names[unit.name], args, flows, ending);
    }
  }

  const OpComparison& ops_;
  const PerfettoInput& input_;
  bool parallel_;
  TraceSink sink_;
  TraceWriter writer_;  // the differences, steps and ops: sequence 1
  std::shared_ptr<const KernelRoles> roles_;
  PerSide<SideClock> clocks_;
  PerSide<SideState> sides_;
  std::vector<uint32_t> second_partners_;  // per trace-2 unit: its matched trace-1 unit
};

}  // namespace

const std::vector<std::string>& PerfettoAligns() {
  static const std::vector<std::string> aligns = {"steps", "none"};
  return aligns;
}

PerfettoAlign PerfettoAlignNamed(std::string_view name) {
  return name == "none" ? PerfettoAlign::kNone : PerfettoAlign::kSteps;
}

absl::Status WriteOpsPerfetto(const OpComparison& ops, const PerfettoInput& input,
                              const std::string& path) {
  return WriteStreamedOutput(path,
                             [&](OutputFile* out) { return OpsTrace(ops, input, out).Write(); });
}

}  // namespace tracefuse
