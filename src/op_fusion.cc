// Fusion differences from the op alignment: FindFusionDifferences() (op_compare.h).
//
// Performance: a candidate may be every step's graph replay, so no candidate's kernels are held.
// Each trace's kernel records are read three times, in start order: to intern each candidate
// unit's category sequence (a replay of the same graph is the same sequence), to sum the time of
// each piece of each candidate, and to fetch the kernels of one example per difference. The
// alignments run once per distinct pair of sequences, not once per candidate.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "oneapi/tbb/parallel_invoke.h"
#include "tracefuse/op_compare.h"

namespace tracefuse {

int64_t FusionDifference::saving_ns() const {
  const Side unfused = fused_by == Side::kTrace1 ? Side::kTrace2 : Side::kTrace1;
  return sides[unfused].time_ns - sides[fused_by].time_ns;
}

const char* FusionDifferenceKindName(FusionDifferenceKind kind) {
  switch (kind) {
    case FusionDifferenceKind::kOp:
      return "op";
    case FusionDifferenceKind::kModule:
      return "module";
    case FusionDifferenceKind::kGraph:
      return "graph";
  }
  return "op";
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// A category sequence, one byte per kernel (CategoryId is a byte): cheap to hash and intern.
using Types = std::string;

Side Other(Side side) { return side == Side::kTrace1 ? Side::kTrace2 : Side::kTrace1; }

// Piece is one difference within a candidate's sequences: [begin, end) of each side's sequence,
// the side that runs fewer kernels there, the unfused side's extra kernels and the fused
// kernel's position.
struct Piece {
  PerSide<uint32_t> begin{}, end{};
  Side fused_by = Side::kTrace1;
  Types extras;
  uint32_t fused_kernel = 0;  // on the fused side
  PerSide<uint32_t> types{};  // the categories of each side's range, interned by the Finder
};

// OnlyCommunication() says whether every extra kernel is a collective: one side communicating
// where the other does not is a different parallel set-up, not work run in fewer kernels.
bool OnlyCommunication(const Types& extras, std::optional<CategoryId> communication) {
  return communication.has_value() && std::all_of(extras.begin(), extras.end(), [&](char c) {
           return static_cast<CategoryId>(c) == *communication;
         });
}

// Pieces() aligns two sequences (the side with more kernels first, so that the result does not
// depend on which trace is which) and cuts them into pieces by the rules of the header.
std::vector<Piece> Pieces(FusionDifferenceKind kind, const PerSide<Types>& types,
                          std::optional<CategoryId> communication) {
  const Side more =
      types[Side::kTrace1].size() > types[Side::kTrace2].size() ? Side::kTrace1 : Side::kTrace2;
  const Side fewer = Other(more);
  auto ids = [](const Types& t) { return std::vector<uint32_t>(t.begin(), t.end()); };
  const std::vector<std::pair<uint32_t, uint32_t>> matches =
      MyersMatches(ids(types[more]), ids(types[fewer]));
  const auto n_more = static_cast<uint32_t>(types[more].size());
  const auto n_fewer = static_cast<uint32_t>(types[fewer].size());
  std::vector<Piece> pieces;
  if (kind != FusionDifferenceKind::kGraph) {
    Piece p;
    p.end[more] = n_more;
    p.end[fewer] = n_fewer;
    p.fused_by = fewer;
    std::vector<bool> matched_more(n_more), matched_fewer(n_fewer);
    for (const auto& [i, j] : matches) matched_more[i] = matched_fewer[j] = true;
    for (uint32_t i = 0; i < n_more; ++i) {
      if (!matched_more[i]) p.extras += types[more][i];
    }
    const auto unmatched = std::find(matched_fewer.begin(), matched_fewer.end(), false);
    if (unmatched != matched_fewer.end()) {
      p.fused_kernel = static_cast<uint32_t>(unmatched - matched_fewer.begin());
    } else {
      const auto first_extra = static_cast<uint32_t>(
          std::find(matched_more.begin(), matched_more.end(), false) - matched_more.begin());
      // The partner of the last match before the first extra, else of the first one after.
      p.fused_kernel = matches.front().second;
      for (const auto& [i, j] : matches) {
        if (i < first_extra) p.fused_kernel = j;
      }
    }
    if (!OnlyCommunication(p.extras, communication)) pieces.push_back(std::move(p));
    return pieces;
  }
  uint32_t i0 = 0, j0 = 0;
  auto close = [&](uint32_t i, uint32_t j) {
    const uint32_t length_more = i - i0, length_fewer = j - j0;
    if (length_more != length_fewer) {
      // In a stretch, the side that runs fewer kernels may be either.
      const bool reversed = length_fewer > length_more;
      Piece p;
      p.fused_by = reversed ? more : fewer;
      p.begin[more] = i0;
      p.end[more] = i;
      p.begin[fewer] = j0;
      p.end[fewer] = j;
      const Side unfused = Other(p.fused_by);
      p.extras = types[unfused].substr(p.begin[unfused], p.end[unfused] - p.begin[unfused]);
      if (p.begin[p.fused_by] == p.end[p.fused_by]) {
        // Nothing runs in its place: the matched kernel beside it covers it.
        if (i0 > 0 || j0 > 0) {
          --p.begin[more];
          --p.begin[fewer];
          p.fused_kernel = p.begin[p.fused_by];
        } else {
          p.fused_kernel = p.end[p.fused_by];
          ++p.end[more];
          ++p.end[fewer];
        }
      } else {
        p.fused_kernel = p.begin[p.fused_by];
      }
      if (!OnlyCommunication(p.extras, communication)) pieces.push_back(std::move(p));
    }
    i0 = i + 1;
    j0 = j + 1;
  };
  for (const auto& [i, j] : matches) close(i, j);
  close(n_more, n_fewer);
  return pieces;
}

// Signature is what instances of one fusion difference share, and their totals.
struct Signature {
  FusionDifferenceKind kind;
  uint32_t scope;
  PerSide<std::vector<uint32_t>> ops;  // op name ids (see Finder::OpId)
  PerSide<uint32_t> types;             // Finder::piece_types_ ids
  Side fused_by;
  Types extras;  // per instance
  uint32_t fused_kernel;
  uint64_t instances = 0;
  PerSide<int64_t> time_ns{};
  uint32_t example_slot = kNone;  // the slot (candidate piece) that differs most
  int64_t example_delta = -1;
};

// CandidateUnit is what one unit of a candidate holds.
struct CandidateUnit {
  uint32_t slot = kNone;   // the candidate it belongs to
  uint32_t offset = 0;     // where its kernels begin in the candidate's sequence
  uint32_t types = kNone;  // its interned sequence
  uint32_t seen = 0;       // its kernels met so far in a pass
};

// SideKernels is one trace's view of the candidates: their units, kept apart from the others so
// that memory follows the candidates, not the trace.
struct SideKernels {
  const TraceProfile* profile = nullptr;
  const OpTree* tree = nullptr;
  std::vector<CategoryId> category;  // per kernel name
  std::vector<bool> in_candidate;    // per unit
  absl::flat_hash_map<uint32_t, CandidateUnit> units;
  std::vector<Types> interned;
  absl::flat_hash_map<Types, uint32_t> intern_ids;

  uint32_t Intern(Types t) {
    auto [it, added] = intern_ids.try_emplace(std::move(t), static_cast<uint32_t>(interned.size()));
    if (added) interned.push_back(it->first);
    return it->second;
  }

  // ForEachCandidateKernel() calls f(unit, its CandidateUnit, position in the unit, kernel) for
  // each kernel of a candidate unit, in start order (stable on trace order, as KernelTypesOf()).
  template <typename F>
  void ForEachCandidateKernel(F&& f) {
    for (auto& [unit, c] : units) c.seen = 0;
    uint32_t last = kNone;
    CandidateUnit* info = nullptr;  // the last unit's: a unit's kernels mostly come together
    profile->kernels.ForEachInTsOrder([&](const KernelRecord& k) {
      if (k.group == kNoGroup) return;
      const uint32_t unit = tree->group_unit[k.group];
      if (unit == kNoUnit || !in_candidate[unit]) return;
      if (unit != last) {
        last = unit;
        info = &units.find(unit)->second;
      }
      f(unit, *info, info->seen++, k);
    });
  }

  // InternUnits() gives each candidate unit its interned sequence, holding only the sequences
  // of units whose kernels are still arriving.
  void InternUnits() {
    // A unit's kernels mostly arrive together: the one being filled stays out of the map.
    absl::flat_hash_map<uint32_t, Types> open;
    uint32_t filling = kNone;
    Types t;
    ForEachCandidateKernel(
        [&](uint32_t unit, CandidateUnit& info, uint32_t position, const KernelRecord& k) {
          if (unit != filling) {
            if (filling != kNone) open[filling] = std::move(t);
            t.clear();
            if (auto it = open.find(unit); it != open.end()) {
              t = std::move(it->second);
              open.erase(it);
            }
            filling = unit;
          }
          t += static_cast<char>(category[k.name]);
          if (position + 1 == tree->units[unit].kernels) {
            info.types = Intern(std::move(t));
            t.clear();
            filling = kNone;
          }
        });
    if (filling != kNone) open[filling] = std::move(t);
    // Units whose kernel count was not reached (none in a consistent trace) keep what arrived.
    for (auto& [unit, t] : open) units[unit].types = Intern(std::move(t));
    for (auto& [unit, info] : units) {
      if (info.types == kNone) info.types = Intern(Types());
    }
  }
};

// Finder runs FindFusionDifferences() in its steps.
class Finder {
 public:
  Finder(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees, OpComparison* ops)
      : ops_(*ops) {
    for (Side side : kSides) {
      SideKernels& s = sides_[side];
      s.profile = profiles[side];
      s.tree = trees[side];
      s.category = profiles[side]->NameCategories();
    }
    const TraceProfile& p = *profiles[Side::kTrace1];
    for (size_t c = 0; c < p.category_count(); ++c) {
      if (p.category_name(static_cast<CategoryId>(c)) == "Communication") {
        communication_ = static_cast<CategoryId>(c);
      }
    }
  }

  std::vector<FusionDifference> Run() {
    if (ops_.candidates.empty()) return {};
    MarkCandidateUnits();
    tbb::parallel_invoke([&] { sides_[Side::kTrace1].InternUnits(); },
                         [&] { sides_[Side::kTrace2].InternUnits(); });
    SignCandidates();
    tbb::parallel_invoke([&] { SumTimes(Side::kTrace1); }, [&] { SumTimes(Side::kTrace2); });
    ChooseExamples();
    std::vector<FusionDifference> out = Describe();
    Sort(&out);
    return out;
  }

 private:
  // MarkCandidateUnits() tells each unit its candidate and its offset in the candidate's joined
  // sequence (a unit belongs to at most one candidate: candidates are matched pairs or
  // unmatched stretches).
  void MarkCandidateUnits() {
    for (Side side : kSides) {
      SideKernels& s = sides_[side];
      s.in_candidate.assign(s.tree->units.size(), false);
      const std::vector<uint32_t>& units = ops_.candidate_units[side];
      for (uint32_t c = 0; c < ops_.candidates.size(); ++c) {
        const FusionCandidate& candidate = ops_.candidates[c];
        for (uint32_t i = candidate.units_begin[side]; i < candidate.units_end[side]; ++i) {
          s.in_candidate[units[i]] = true;
          s.units[units[i]].slot = c;
        }
      }
    }
  }

  // JoinedTypes() is the candidate's sequence on `side`, interned: its units' in turn.
  uint32_t JoinedTypes(Side side, const FusionCandidate& c) {
    SideKernels& s = sides_[side];
    const std::vector<uint32_t>& units = ops_.candidate_units[side];
    if (c.units_end[side] - c.units_begin[side] == 1)
      return s.units[units[c.units_begin[side]]].types;
    Types joined;
    for (uint32_t i = c.units_begin[side]; i < c.units_end[side]; ++i) {
      CandidateUnit& unit = s.units[units[i]];
      unit.offset = static_cast<uint32_t>(joined.size());
      joined += s.interned[unit.types];
    }
    return s.Intern(std::move(joined));
  }

  uint32_t PieceTypes(Types t) {
    auto [it, added] =
        piece_type_ids_.try_emplace(std::move(t), static_cast<uint32_t>(piece_types_.size()));
    if (added) piece_types_.push_back(it->first);
    return it->second;
  }

  // Template() is the index of the template of a distinct pair of sequences, aligned once.
  uint32_t Template(FusionDifferenceKind kind, const PerSide<uint32_t>& ids) {
    const uint64_t key = (uint64_t{ids[Side::kTrace1]} << 32) | ids[Side::kTrace2];
    auto [it, added] = template_ids_[static_cast<size_t>(kind)].try_emplace(
        key, static_cast<uint32_t>(templates_.size()));
    if (added) {
      const PerSide<const Types*> types = {{&sides_[Side::kTrace1].interned[ids[Side::kTrace1]],
                                            &sides_[Side::kTrace2].interned[ids[Side::kTrace2]]}};
      std::vector<Piece> pieces =
          Pieces(kind, {{*types[Side::kTrace1], *types[Side::kTrace2]}}, communication_);
      for (Piece& piece : pieces) {
        for (Side side : kSides) {
          piece.types[side] = PieceTypes(
              types[side]->substr(piece.begin[side], piece.end[side] - piece.begin[side]));
        }
      }
      templates_.push_back(std::move(pieces));
    }
    return it->second;
  }

  uint32_t OpId(const std::string& name) {
    auto [it, added] = op_ids_.try_emplace(name, static_cast<uint32_t>(op_names_.size()));
    if (added) op_names_.push_back(name);
    return it->second;
  }

  // SignCandidates() aligns each distinct pair of sequences once and gives each piece of each
  // candidate (a slot) its signature. Candidates alike (the same template, scope and ops: every
  // replay of one graph) share their pieces' signatures, found once.
  void SignCandidates() {
    StringMap<uint32_t> signature_ids;
    StringMap<uint32_t> alike;  // a candidate's key -> where its signatures begin in `signed`
    std::vector<uint32_t> signed_pieces;
    std::string key;
    PerSide<std::vector<uint32_t>> ops;
    candidate_slot_.reserve(ops_.candidates.size() + 1);
    for (const FusionCandidate& c : ops_.candidates) {
      candidate_slot_.push_back(static_cast<uint32_t>(slot_signature_.size()));
      const uint32_t t =
          Template(c.kind, {{JoinedTypes(Side::kTrace1, c), JoinedTypes(Side::kTrace2, c)}});
      const std::vector<Piece>& pieces = templates_[t];
      if (pieces.empty()) continue;
      key.clear();
      AppendNumber(t, &key);
      AppendNumber(c.scope, &key);
      for (Side side : kSides) {
        CandidateOps(side, c, &ops[side]);
        AppendNumber(static_cast<uint32_t>(ops[side].size()), &key);
        for (uint32_t op : ops[side]) AppendNumber(op, &key);
      }
      auto [known, added] = alike.try_emplace(key, static_cast<uint32_t>(signed_pieces.size()));
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (added) {
          const Piece& piece = pieces[i];
          Signature sig{c.kind, c.scope, ops, piece.types, piece.fused_by, piece.extras, 0};
          auto [id, new_signature] = signature_ids.try_emplace(
              SignatureKey(sig), static_cast<uint32_t>(signatures_.size()));
          if (new_signature) {
            sig.fused_kernel = piece.fused_kernel - piece.begin[piece.fused_by];
            signatures_.push_back(std::move(sig));
          }
          signed_pieces.push_back(id->second);
        }
        const uint32_t signature = signed_pieces[known->second + i];
        ++signatures_[signature].instances;
        slot_signature_.push_back(signature);
        slot_piece_.push_back(&pieces[i]);
      }
    }
    candidate_slot_.push_back(static_cast<uint32_t>(slot_signature_.size()));
  }

  static void AppendNumber(uint32_t n, std::string* key) {
    key->append(reinterpret_cast<const char*>(&n), sizeof n);
  }

  // CandidateOps() are the op name ids of the candidate's units on `side`.
  void CandidateOps(Side side, const FusionCandidate& c, std::vector<uint32_t>* ops) {
    const OpTree& tree = *sides_[side].tree;
    std::vector<uint32_t>& op_of_name = op_of_name_[side];
    if (op_of_name.empty()) op_of_name.assign(tree.names.size(), kNone);
    ops->clear();
    const std::vector<uint32_t>& units = ops_.candidate_units[side];
    for (uint32_t i = c.units_begin[side]; i < c.units_end[side]; ++i) {
      const uint32_t name = tree.units[units[i]].name;
      if (op_of_name[name] == kNone) op_of_name[name] = OpId(tree.names[name]);
      ops->push_back(op_of_name[name]);
    }
  }

  static std::string SignatureKey(const Signature& sig) {
    std::string key(1, static_cast<char>(sig.kind));
    AppendNumber(sig.scope, &key);
    for (Side side : kSides) {
      AppendNumber(static_cast<uint32_t>(sig.ops[side].size()), &key);
      for (uint32_t op : sig.ops[side]) AppendNumber(op, &key);
      AppendNumber(sig.types[side], &key);
    }
    return key;
  }

  // SumTimes() adds each candidate kernel's duration to the slots whose piece holds it.
  void SumTimes(Side side) {
    SideKernels& s = sides_[side];
    std::vector<int64_t>& time = slot_time_[side];
    time.assign(slot_signature_.size(), 0);
    s.ForEachCandidateKernel(
        [&](uint32_t, const CandidateUnit& unit, uint32_t position, const KernelRecord& k) {
          const uint32_t c = unit.slot;
          const uint32_t at = unit.offset + position;
          // A candidate's pieces follow each other along both sequences, and two share at most the
          // matched kernel between them: only the last two that begin at or before `at` can hold
          // it.
          const auto first = slot_piece_.begin() + candidate_slot_[c];
          const auto last = slot_piece_.begin() + candidate_slot_[c + 1];
          auto after = std::upper_bound(first, last, at, [side](uint32_t position, const Piece* p) {
            return position < p->begin[side];
          });
          for (int back = 0; back < 2 && after != first; ++back) {
            --after;
            if (at < (*after)->end[side]) time[after - slot_piece_.begin()] += k.dur_ns;
          }
        });
  }

  // ChooseExamples() totals each signature's time and picks, as its example, the slot whose two
  // sides differ most in time (the first such, in step order).
  void ChooseExamples() {
    for (uint32_t slot = 0; slot < slot_signature_.size(); ++slot) {
      Signature& sig = signatures_[slot_signature_[slot]];
      const int64_t t1 = slot_time_[Side::kTrace1][slot], t2 = slot_time_[Side::kTrace2][slot];
      sig.time_ns[Side::kTrace1] += t1;
      sig.time_ns[Side::kTrace2] += t2;
      if (std::llabs(t1 - t2) > sig.example_delta) {
        sig.example_delta = std::llabs(t1 - t2);
        sig.example_slot = slot;
      }
    }
  }

  // CandidateOf() is the candidate that holds `slot`.
  uint32_t CandidateOf(uint32_t slot) const {
    return static_cast<uint32_t>(
        std::upper_bound(candidate_slot_.begin(), candidate_slot_.end(), slot) -
        candidate_slot_.begin() - 1);
  }

  // ExampleKernels() fetches the examples' kernels: per side, per signature.
  PerSide<std::vector<std::vector<FusionKernel>>> ExampleKernels() {
    PerSide<std::vector<std::vector<FusionKernel>>> out;
    // Per candidate: the signatures it is the example of, as a list through `next`.
    std::vector<uint32_t> first(ops_.candidates.size(), kNone), next(signatures_.size(), kNone);
    for (uint32_t g = 0; g < signatures_.size(); ++g) {
      uint32_t& head = first[CandidateOf(signatures_[g].example_slot)];
      next[g] = head;
      head = g;
    }
    auto fetch = [&](Side side) {
      SideKernels& s = sides_[side];
      out[side].resize(signatures_.size());
      s.ForEachCandidateKernel(
          [&](uint32_t, const CandidateUnit& unit, uint32_t position, const KernelRecord& k) {
            const uint32_t at = unit.offset + position;
            for (uint32_t g = first[unit.slot]; g != kNone; g = next[g]) {
              const Piece& piece = *slot_piece_[signatures_[g].example_slot];
              if (at < piece.begin[side] || at >= piece.end[side]) continue;
              out[side][g].push_back(FusionKernel{s.tree->families[s.tree->name_family[k.name]],
                                                  s.profile->category_name(s.category[k.name]),
                                                  k.dur_ns});
            }
          });
    };
    tbb::parallel_invoke([&] { fetch(Side::kTrace1); }, [&] { fetch(Side::kTrace2); });
    return out;
  }

  std::vector<std::pair<std::string, uint64_t>> ByCategory(const Types& types,
                                                           uint64_t times) const {
    std::map<std::string, uint64_t> counts;
    const TraceProfile& p = *sides_[Side::kTrace1].profile;
    for (char c : types) counts[p.category_name(static_cast<CategoryId>(c))] += times;
    return {counts.begin(), counts.end()};
  }

  std::vector<std::string> TypeNames(const Types& types) const {
    std::vector<std::string> names;
    const TraceProfile& p = *sides_[Side::kTrace1].profile;
    for (char c : types) names.push_back(p.category_name(static_cast<CategoryId>(c)));
    return names;
  }

  std::vector<FusionDifference> Describe() {
    PerSide<std::vector<std::vector<FusionKernel>>> examples = ExampleKernels();
    std::vector<FusionDifference> out;
    out.reserve(signatures_.size());
    for (uint32_t g = 0; g < signatures_.size(); ++g) {
      const Signature& sig = signatures_[g];
      FusionDifference d;
      d.kind = sig.kind;
      d.scope = ops_.candidate_scopes[sig.scope];
      if (sig.kind != FusionDifferenceKind::kModule) d.op = op_names_[sig.ops[Side::kTrace1][0]];
      d.fused_by = sig.fused_by;
      d.instances = sig.instances;
      for (Side side : kSides) {
        FusionDifferenceSide& fs = d.sides[side];
        for (uint32_t op : sig.ops[side]) fs.ops.push_back(op_names_[op]);
        const Types& types = piece_types_[sig.types[side]];
        fs.types = TypeNames(types);
        fs.kernels = types.size() * sig.instances;
        fs.categories = ByCategory(types, sig.instances);
        fs.time_ns = sig.time_ns[side];
        fs.example = std::move(examples[side][g]);
      }
      d.extra_categories = ByCategory(sig.extras, sig.instances);
      const std::vector<FusionKernel>& fused = d.sides[d.fused_by].example;
      if (sig.fused_kernel < fused.size()) d.fused_kernel = fused[sig.fused_kernel].family;
      const FusionCandidate& c = ops_.candidates[CandidateOf(sig.example_slot)];
      d.example_step = c.step;
      d.example_index = ExampleIndex(c);
      out.push_back(std::move(d));
    }
    return out;
  }

  // ExampleIndex() is the position (from 1) of the candidate's first trace-1 unit in its step.
  uint64_t ExampleIndex(const FusionCandidate& c) const {
    const OpTree& tree = *sides_[Side::kTrace1].tree;
    const uint32_t unit = ops_.candidate_units[Side::kTrace1][c.units_begin[Side::kTrace1]];
    uint32_t first = unit;
    while (first > 0 && tree.units[first - 1].step == tree.units[unit].step) --first;
    return unit - first + 1;
  }

  // Sort() orders by saving, then by what does not depend on which trace is which.
  static void Sort(std::vector<FusionDifference>* out) {
    auto key = [](const FusionDifference& d) {
      const Side unfused = Other(d.fused_by);
      return std::tie(d.kind, d.scope, d.op, d.sides[unfused].types, d.sides[d.fused_by].types,
                      d.sides[unfused].ops, d.sides[d.fused_by].ops);
    };
    std::stable_sort(out->begin(), out->end(),
                     [&](const FusionDifference& a, const FusionDifference& b) {
                       if (a.saving_ns() != b.saving_ns()) return a.saving_ns() > b.saving_ns();
                       return key(a) < key(b);
                     });
  }

  OpComparison& ops_;
  std::optional<CategoryId> communication_;  // the rule set's category of collectives, if any
  PerSide<SideKernels> sides_;
  StringMap<uint32_t> op_ids_;
  std::vector<std::string> op_names_;
  PerSide<std::vector<uint32_t>> op_of_name_;  // per side, an OpTree name -> its op id
  // Each distinct (kind, sequences) aligned once: per kind, (trace-1 id, trace-2 id) -> template.
  // Slots point at the templates' pieces, which stay put as `templates_` grows.
  absl::flat_hash_map<uint64_t, uint32_t> template_ids_[3];
  std::vector<std::vector<Piece>> templates_;
  absl::flat_hash_map<Types, uint32_t> piece_type_ids_;
  std::vector<Types> piece_types_;
  std::vector<Signature> signatures_;
  std::vector<uint32_t> candidate_slot_;  // per candidate: its first slot; one more at the end
  std::vector<uint32_t> slot_signature_;
  std::vector<const Piece*> slot_piece_;
  PerSide<std::vector<int64_t>> slot_time_;
};

}  // namespace

void FindFusionDifferences(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees,
                           OpComparison* ops) {
  ops->fusion_differences = Finder(profiles, trees, ops).Run();
  ops->candidates = {};
  ops->candidate_units = {};
  ops->candidate_scopes = {};
}

}  // namespace tracefuse
