// Fusion differences from the op alignment: FindFusionDifferences() (op_compare.h).
//
// Performance: a candidate may be every step's graph replay, so no candidate's kernels are held.
// Each trace's kernel records are read three times, in start order: to intern each candidate
// unit's category sequence (a replay of the same graph is the same sequence), to sum the time of
// each piece of each candidate, and to fetch the kernels of one example per difference. The
// alignments run once per distinct pair of sequences, not once per candidate.
#include <algorithm>
#include <bitset>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "oneapi/tbb/parallel_invoke.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/classify/kernel_roles.h"

namespace tracefuse {

int64_t FusionDifference::saving_ns() const {
  return sides[unfused()].time_ns - sides[fused_by].time_ns;
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

const char* FusionRelationName(FusionRelation relation) {
  switch (relation) {
    case FusionRelation::kSplit:
      return "split";
    case FusionRelation::kFusion:
      return "fusion";
    case FusionRelation::kAlgorithm:
      return "algorithm";
  }
  return "fusion";
}

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// A sequence of kernels, two bytes each: the kernel's category (CategoryId is a byte) and its
// role (an index into RoleTable). Cheap to hash and intern.
using Types = std::string;

uint32_t KernelCount(const Types& t) { return static_cast<uint32_t>(t.size() / 2); }
CategoryId CategoryAt(const Types& t, uint32_t i) { return static_cast<uint8_t>(t[2 * i]); }
uint8_t RoleAt(const Types& t, uint32_t i) { return static_cast<uint8_t>(t[2 * i + 1]); }

Side Other(Side side) { return Opposite(side); }

using CategorySet = std::bitset<kMaxCategories>;

// RoleInfo is a KernelRole with its categories as the traces' category ids.
struct RoleInfo {
  bool helper = false;
  bool serves_any = false;  // a helper of whatever main kernel follows it
  CategorySet serves, covers;
};

// RoleTable holds the roles both traces' kernels take, each once (index 0: a plain main kernel),
// and what the kernel-roles data says of the categories.
struct RoleTable {
  std::vector<RoleInfo> roles{RoleInfo()};
  std::vector<KernelRole> known{KernelRole()};
  CategorySet heavy;
  std::vector<CategorySet> absorbs;  // per category
  std::optional<CategoryId> communication;

  uint8_t Intern(const KernelRole& role, const TraceProfile& p) {
    for (size_t i = 0; i < known.size(); ++i) {
      if (known[i] == role) return static_cast<uint8_t>(i);
    }
    if (known.size() > UINT8_MAX) return 0;  // more roles than a byte holds: a main kernel
    RoleInfo info;
    info.helper = role.is_helper();
    for (const std::string& c : role.serves) {
      if (c == "any") info.serves_any = true;
      if (auto id = p.classifier->rule_set().category_index(c)) info.serves.set(*id);
    }
    for (const std::string& c : role.covers) {
      if (auto id = p.classifier->rule_set().category_index(c)) info.covers.set(*id);
    }
    known.push_back(role);
    roles.push_back(info);
    return static_cast<uint8_t>(known.size() - 1);
  }
};

// Operation is one operation of a sequence: a main kernel and the helpers that serve it, or a
// helper that serves no neighbour, alone.
struct Operation {
  CategoryId key = 0;             // the main kernel's category (the lone helper's)
  uint32_t main = kNone;          // the main kernel's position
  std::vector<uint32_t> kernels;  // positions, ascending
};

// Operations() groups a sequence's kernels into operations, in order.
std::vector<Operation> Operations(const Types& t, const RoleTable& roles) {
  const uint32_t n = KernelCount(t);
  auto is_main = [&](uint32_t i) { return !roles.roles[RoleAt(t, i)].helper; };
  std::vector<uint32_t> owner(n, kNone);  // the main kernel each kernel belongs to
  for (uint32_t i = 0; i < n; ++i) {
    if (is_main(i)) {
      owner[i] = i;
      continue;
    }
    const RoleInfo& role = roles.roles[RoleAt(t, i)];
    uint32_t before = i, after = i;
    while (before > 0 && !is_main(before - 1)) --before;
    while (after < n && !is_main(after)) ++after;
    const bool has_before = before > 0, has_after = after < n;
    auto serves = [&](uint32_t m) { return role.serves.test(CategoryAt(t, m)); };
    if (role.serves_any && has_after) {
      owner[i] = after;
    } else if (role.serves_any && has_before) {
      owner[i] = before - 1;
    } else if (has_before && serves(before - 1)) {
      owner[i] = before - 1;
    } else if (has_after && serves(after)) {
      owner[i] = after;
    }
  }
  std::vector<Operation> ops;
  std::vector<uint32_t> op_of_main(n, kNone);
  for (uint32_t i = 0; i < n; ++i) {
    if (owner[i] != i && owner[i] != kNone) continue;
    Operation op;
    op.key = CategoryAt(t, i);
    if (owner[i] == i) {
      op.main = i;
      op_of_main[i] = static_cast<uint32_t>(ops.size());
    } else {
      op.kernels.push_back(i);
    }
    ops.push_back(std::move(op));
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (owner[i] != kNone) ops[op_of_main[owner[i]]].kernels.push_back(i);
  }
  for (Operation& op : ops) std::sort(op.kernels.begin(), op.kernels.end());
  return ops;
}

// Piece is one difference within a candidate's sequences: [begin, end) of each side's sequence,
// the relation, the unfused side's extra kernels and the fused kernel's position.
struct Piece {
  PerSide<uint32_t> begin{}, end{};
  FusionRelation relation = FusionRelation::kFusion;
  Side fused_by = Side::kTrace1;  // the side with fewer kernels
  std::vector<uint32_t> extras;   // positions on the unfused side, ascending
  uint32_t fused_kernel = kNone;  // on the fused side; kNone for kAlgorithm
  PerSide<uint32_t> types{};      // the kernels of each side's range, interned by the Finder
};

// Template is the pieces of one distinct pair of sequences, and for each kernel position of each
// side the pieces that hold it (CSR: entries piece << 1 | extra).
struct Template {
  std::vector<Piece> pieces;
  PerSide<std::vector<uint32_t>> first, entries;
};

// Aligner finds the pieces of one pair of sequences (FindFusionDifferences() in op_compare.h).
class Aligner {
 public:
  Aligner(const PerSide<const Types*>& types, const RoleTable& roles)
      : types_(types), roles_(roles) {
    // The side with more kernels first; ties by content: each kernel's category and whether it
    // is a helper, then the roles themselves (a plain main kernel first, then by helper kind,
    // served and covered categories), never by role indices, which depend on which trace was
    // read first.
    using RoleRank =
        std::tuple<int, std::string, std::vector<std::string>, std::vector<std::string>>;
    const auto key = [&](const Types* t) {
      std::string content;
      std::vector<RoleRank> ranks;
      for (uint32_t i = 0; i < KernelCount(*t); ++i) {
        content += static_cast<char>(CategoryAt(*t, i));
        content += roles.roles[RoleAt(*t, i)].helper ? 'h' : 'm';
        const KernelRole& role = roles.known[RoleAt(*t, i)];
        ranks.push_back(RoleAt(*t, i) == 0 ? RoleRank{0, "", {}, {}}
                                           : RoleRank{1, role.helper, role.serves, role.covers});
      }
      return std::make_tuple(KernelCount(*t), content, ranks);
    };
    more_ = key(types[Side::kTrace1]) > key(types[Side::kTrace2]) ? Side::kTrace1 : Side::kTrace2;
    for (Side side : kSides) ops_[side] = Operations(*types[side], roles);
  }

  std::vector<Piece> Run() {
    Align();
    PairMoved();
    std::vector<Piece> pieces;
    Splits(&pieces);
    Regions(&pieces);
    std::stable_sort(pieces.begin(), pieces.end(), [&](const Piece& a, const Piece& b) {
      return std::tie(a.begin[more_], a.end[more_], a.relation) <
             std::tie(b.begin[more_], b.end[more_], b.relation);
    });
    return pieces;
  }

 private:
  // Align() matches the operations by category and numbers the columns of the alignment:
  // matched operations share one; an unmatched one has its own.
  void Align() {
    const Side fewer = Other(more_);
    // An operation is aligned by what it is: its category and its helpers' roles, so that a GEMM
    // run with an im2col lines up with a GEMM so run rather than with a plain one. Operations
    // that differ in their helpers alone are paired again below (PairMoved()): they are splits.
    PerSide<std::vector<uint32_t>> keys;
    absl::flat_hash_map<std::string, uint32_t> ids;
    for (Side side : kSides) {
      const Types& t = *types_[side];
      for (const Operation& op : ops_[side]) {
        std::string shape(1, static_cast<char>(op.key));
        for (uint32_t k : op.kernels) {
          if (k != op.main) shape += static_cast<char>(RoleAt(t, k));
        }
        std::sort(shape.begin() + 1, shape.end());
        keys[side].push_back(
            ids.try_emplace(shape, static_cast<uint32_t>(ids.size())).first->second);
      }
      partner_[side].assign(ops_[side].size(), kNone);
      column_[side].assign(ops_[side].size(), 0);
    }
    auto matches = MyersMatches(keys[more_], keys[fewer]);
    // Where the diff could have matched an earlier unmatched operation of the same category
    // instead, match that one: the diff's choice depends on the whole sequence, and every layer
    // should read alike.
    uint32_t floor_more = 0, floor_fewer = 0;
    auto earliest = [](const std::vector<uint32_t>& k, uint32_t floor, uint32_t at) {
      for (uint32_t i = floor; i < at; ++i) {
        if (k[i] == k[at]) return i;
      }
      return at;
    };
    for (auto& [mi, fj] : matches) {
      mi = earliest(keys[more_], floor_more, mi);
      fj = earliest(keys[fewer], floor_fewer, fj);
      floor_more = mi + 1;
      floor_fewer = fj + 1;
    }
    uint32_t i = 0, j = 0, column = 0;
    auto unmatched_until = [&](uint32_t to_i, uint32_t to_j) {
      for (; i < to_i; ++i) column_[more_][i] = column++;
      for (; j < to_j; ++j) column_[fewer][j] = column++;
    };
    for (const auto& [mi, fj] : matches) {
      unmatched_until(mi, fj);
      partner_[more_][mi] = fj;
      partner_[fewer][fj] = mi;
      if (Heavy(ops_[more_][mi])) anchors_.emplace_back(mi, fj);
      column_[more_][mi] = column_[fewer][fj] = column++;
      ++i;
      ++j;
    }
    unmatched_until(static_cast<uint32_t>(ops_[more_].size()),
                    static_cast<uint32_t>(ops_[fewer].size()));
    NumberRegions();
  }

  // NumberRegions() gives each operation its stretch: the number of anchors (matched heavy
  // operations, in order on both sides) before it.
  void NumberRegions() {
    const Side fewer = Other(more_);
    for (Side side : kSides) {
      region_[side].assign(ops_[side].size(), 0);
      is_anchor_[side].assign(ops_[side].size(), false);
    }
    std::sort(anchors_.begin(), anchors_.end());
    std::vector<std::pair<uint32_t, uint32_t>> kept;  // in order on both sides
    for (const auto& [mi, fj] : anchors_) {
      if (kept.empty() || fj > kept.back().second) kept.emplace_back(mi, fj);
    }
    anchors_ = std::move(kept);
    for (const auto& [mi, fj] : anchors_) {
      is_anchor_[more_][mi] = true;
      is_anchor_[fewer][fj] = true;
    }
    for (Side side : kSides) {
      uint32_t anchors = 0;
      for (uint32_t k = 0; k < ops_[side].size(); ++k) {
        region_[side][k] = anchors;
        if (is_anchor_[side][k]) ++anchors;
      }
    }
  }

  bool Matched(Side side, uint32_t op) const { return partner_[side][op] != kNone; }
  bool Heavy(const Operation& op) const { return roles_.heavy.test(op.key); }
  // A matched heavy operation closes a stretch.
  bool IsAnchor(Side side, uint32_t op) const { return is_anchor_[side][op]; }

  // PairMoved() pairs the unmatched operations of one category that differ in their helpers or
  // moved: the same category on the other side within the same stretch between heavy matched
  // operations, or one column apart (a kernel
  // recorded before its neighbour on one side and after it on the other).
  void PairMoved() {
    const Side fewer = Other(more_);
    auto pair = [&](uint32_t i, uint32_t j) {
      partner_[more_][i] = j;
      partner_[fewer][j] = i;
      if (Heavy(ops_[more_][i])) anchors_.emplace_back(i, j);
    };
    for (uint32_t i = 0; i < ops_[more_].size(); ++i) {
      if (Matched(more_, i)) continue;
      for (uint32_t j = 0; j < ops_[fewer].size(); ++j) {
        if (Matched(fewer, j) || ops_[fewer][j].key != ops_[more_][i].key) continue;
        const uint32_t a = column_[more_][i], b = column_[fewer][j];
        if ((a > b ? a - b : b - a) <= 2 || region_[more_][i] == region_[fewer][j]) {
          pair(i, j);
          break;
        }
      }
    }
    NumberRegions();  // the heavy operations paired again close stretches too
  }

  // Splits() adds a kSplit for each matched pair whose kernel counts differ.
  void Splits(std::vector<Piece>* pieces) const {
    for (uint32_t i = 0; i < ops_[more_].size(); ++i) {
      if (!Matched(more_, i)) continue;
      PerSide<const Operation*> pair;
      pair[more_] = &ops_[more_][i];
      pair[Other(more_)] = &ops_[Other(more_)][partner_[more_][i]];
      const size_t n1 = pair[Side::kTrace1]->kernels.size(),
                   n2 = pair[Side::kTrace2]->kernels.size();
      if (n1 == n2) continue;
      Piece p;
      p.relation = FusionRelation::kSplit;
      p.fused_by = n1 < n2 ? Side::kTrace1 : Side::kTrace2;
      const Side unfused = Other(p.fused_by);
      p.extras = Unshared(unfused, *pair[unfused], *pair[p.fused_by]);
      p.fused_kernel = pair[p.fused_by]->main != kNone ? pair[p.fused_by]->main
                                                       : pair[p.fused_by]->kernels.front();
      for (Side side : kSides) {
        p.begin[side] = pair[side]->kernels.front();
        p.end[side] = pair[side]->kernels.back() + 1;
      }
      if (!OnlyCommunication(unfused, p.extras)) pieces->push_back(std::move(p));
    }
  }

  // Unshared() are the helpers of `op` (on `side`) that `other`'s do not match by category and
  // role: the main kernels are each other's partners.
  std::vector<uint32_t> Unshared(Side side, const Operation& op, const Operation& other) const {
    const Types& t = *types_[side];
    const Types& u = *types_[Other(side)];
    std::vector<bool> used(other.kernels.size());
    for (size_t m = 0; m < other.kernels.size(); ++m) used[m] = other.kernels[m] == other.main;
    std::vector<uint32_t> out;
    for (uint32_t k : op.kernels) {
      bool found = k == op.main && other.main != kNone;
      for (size_t m = 0; m < other.kernels.size() && !found; ++m) {
        const uint32_t o = other.kernels[m];
        if (!used[m] && CategoryAt(u, o) == CategoryAt(t, k) && RoleAt(u, o) == RoleAt(t, k)) {
          used[m] = found = true;
        }
      }
      if (!found) out.push_back(k);
    }
    return out;
  }

  bool OnlyCommunication(Side side, const std::vector<uint32_t>& kernels) const {
    return roles_.communication.has_value() &&
           std::all_of(kernels.begin(), kernels.end(), [&](uint32_t k) {
             return CategoryAt(*types_[side], k) == *roles_.communication;
           });
  }

  // Regions() finds, between consecutive heavy anchors, the unmatched operations of both sides
  // and what covers them.
  void Regions(std::vector<Piece>* pieces) const {
    PerSide<std::vector<std::vector<uint32_t>>> unmatched;
    PerSide<std::vector<std::vector<uint32_t>>> matched;  // and the anchors that close them
    for (Side side : kSides) {
      uint32_t region = 0;
      unmatched[side].emplace_back();
      matched[side].emplace_back();
      for (uint32_t k = 0; k < ops_[side].size(); ++k) {
        if (IsAnchor(side, k)) {
          matched[side][region].push_back(k);  // closes this region
          ++region;
          unmatched[side].emplace_back();
          matched[side].emplace_back();
          matched[side][region].push_back(k);  // opens the next
        } else if (Matched(side, k)) {
          matched[side][region].push_back(k);
        } else {
          unmatched[side][region].push_back(k);
        }
      }
    }
    const size_t regions = unmatched[Side::kTrace1].size();
    for (size_t r = 0; r < regions && r < unmatched[Side::kTrace2].size(); ++r) {
      Cover(PerSide<const std::vector<uint32_t>*>{{&unmatched[Side::kTrace1][r],
                                                   &unmatched[Side::kTrace2][r]}},
            PerSide<const std::vector<uint32_t>*>{
                {&matched[Side::kTrace1][r], &matched[Side::kTrace2][r]}},
            pieces);
    }
  }

  size_t Kernels(Side side, const std::vector<uint32_t>& ops) const {
    size_t n = 0;
    for (uint32_t op : ops) n += ops_[side][op].kernels.size();
    return n;
  }

  // Covers() tells whether kernel `k` on side `by` can do the work of kernel `e` on the other
  // side; `unmatched` whether k is one of the region's unmatched kernels.
  bool Covers(Side by, uint32_t k, uint32_t e, bool unmatched) const {
    const Types& t = *types_[by];
    const Types& u = *types_[Other(by)];
    const CategoryId kc = CategoryAt(t, k), ec = CategoryAt(u, e);
    const RoleInfo& kr = roles_.roles[RoleAt(t, k)];
    const RoleInfo& er = roles_.roles[RoleAt(u, e)];
    const bool can = kc == ec || kr.covers.test(ec) || roles_.absorbs[kc].test(ec);
    if (roles_.heavy.test(ec)) return unmatched ? roles_.heavy.test(kc) && can : kc == ec;
    return can || (er.helper && (er.serves_any || er.serves.test(kc)));
  }

  // Named() counts the kernels of `extras` (on `side`) whose category kernel `k` (on `by`) has or
  // states by its name.
  int Named(Side by, uint32_t k, Side side, const std::vector<uint32_t>& extras) const {
    const CategoryId kc = CategoryAt(*types_[by], k);
    const RoleInfo& role = roles_.roles[RoleAt(*types_[by], k)];
    int named = 0;
    for (uint32_t e : extras) {
      const CategoryId ec = CategoryAt(*types_[side], e);
      if (ec == kc || role.covers.test(ec)) ++named;
    }
    return named;
  }

  // Cover() makes the piece of one stretch, if it has one (FindFusionDifferences()).
  void Cover(PerSide<const std::vector<uint32_t>*> unmatched,
             PerSide<const std::vector<uint32_t>*> matched, std::vector<Piece>* pieces) const {
    const size_t n1 = Kernels(Side::kTrace1, *unmatched[Side::kTrace1]);
    const size_t n2 = Kernels(Side::kTrace2, *unmatched[Side::kTrace2]);
    if (n1 == n2) return;
    Piece p;
    p.fused_by = n1 < n2 ? Side::kTrace1 : Side::kTrace2;
    const Side unfused = Other(p.fused_by);
    for (uint32_t op : *unmatched[unfused]) {
      for (uint32_t k : ops_[unfused][op].kernels) p.extras.push_back(k);
    }
    std::sort(p.extras.begin(), p.extras.end());
    if (OnlyCommunication(unfused, p.extras)) return;
    // Where the extras stand in the alignment: the fused kernel nearest to them is preferred.
    const uint32_t where = column_[unfused][unmatched[unfused]->front()];
    // Candidates in order of preference: the other side's unmatched operations first; then the
    // kernels whose own category or stated operations name more of the extras (a fused add +
    // norm before the GEMM next to it, which absorbs an add too); then the nearest.
    struct Candidate {
      bool matched;
      int named;  // minus the extras whose category the kernel names
      uint32_t distance;
      uint32_t op;
      bool operator<(const Candidate& o) const {
        return std::tie(matched, named, distance, op) <
               std::tie(o.matched, o.named, o.distance, o.op);
      }
    };
    std::vector<Candidate> candidates;
    auto consider = [&](const std::vector<uint32_t>& ops, bool matched_op) {
      for (uint32_t op : ops) {
        const Operation& o = ops_[p.fused_by][op];
        if (o.main == kNone) continue;
        const uint32_t c = column_[p.fused_by][op];
        candidates.push_back({matched_op, -Named(p.fused_by, o.main, unfused, p.extras),
                              c > where ? c - where : where - c, op});
      }
    };
    consider(*unmatched[p.fused_by], false);
    consider(*matched[p.fused_by], true);
    std::sort(candidates.begin(), candidates.end());
    uint32_t covering = kNone;
    for (const Candidate& c : candidates) {
      const uint32_t main = ops_[p.fused_by][c.op].main;
      if (std::all_of(p.extras.begin(), p.extras.end(),
                      [&](uint32_t e) { return Covers(p.fused_by, main, e, !c.matched); })) {
        covering = c.op;
        break;
      }
    }
    std::vector<std::pair<Side, uint32_t>> involved;
    for (Side side : kSides) {
      for (uint32_t op : *unmatched[side]) involved.emplace_back(side, op);
    }
    if (covering != kNone) {
      const Operation& k = ops_[p.fused_by][covering];
      p.fused_kernel = k.main;
      involved.emplace_back(p.fused_by, covering);
      const Types& u = *types_[unfused];
      const CategoryId kc = CategoryAt(*types_[p.fused_by], k.main);
      const bool helpers = std::all_of(p.extras.begin(), p.extras.end(), [&](uint32_t e) {
        const RoleInfo& r = roles_.roles[RoleAt(u, e)];
        return r.helper && (r.serves_any || r.serves.test(kc));
      });
      p.relation = helpers ? FusionRelation::kSplit : FusionRelation::kFusion;
    } else if (!unmatched[p.fused_by]->empty()) {
      p.relation = FusionRelation::kAlgorithm;
    } else {
      return;  // nothing could do the extras' work: no claim
    }
    Span(involved, &p);
    pieces->push_back(std::move(p));
  }

  // Span() sets the piece's ranges: every operation of either side whose column lies between the
  // involved operations' (and their partners') first and last.
  void Span(const std::vector<std::pair<Side, uint32_t>>& involved, Piece* p) const {
    uint32_t lo = UINT32_MAX, hi = 0;
    auto take = [&](Side side, uint32_t op) {
      lo = std::min(lo, column_[side][op]);
      hi = std::max(hi, column_[side][op]);
    };
    for (const auto& [side, op] : involved) {
      take(side, op);
      // An operation paired again after the diff stands in its own column, apart from its partner.
      if (Matched(side, op)) take(Other(side), partner_[side][op]);
    }
    for (Side side : kSides) {
      p->begin[side] = UINT32_MAX;
      p->end[side] = 0;
      for (uint32_t k = 0; k < ops_[side].size(); ++k) {
        if (column_[side][k] < lo || column_[side][k] > hi) continue;
        p->begin[side] = std::min(p->begin[side], ops_[side][k].kernels.front());
        p->end[side] = std::max(p->end[side], ops_[side][k].kernels.back() + 1);
      }
      if (p->begin[side] == UINT32_MAX) p->begin[side] = p->end[side] = 0;
    }
  }

  const PerSide<const Types*> types_;
  const RoleTable& roles_;
  Side more_ = Side::kTrace1;
  PerSide<std::vector<Operation>> ops_;
  PerSide<std::vector<uint32_t>> partner_, column_;
  PerSide<std::vector<uint32_t>> region_;  // per operation: the heavy anchors before it
  std::vector<std::pair<uint32_t, uint32_t>> anchors_;  // (more side, fewer side), in order
  PerSide<std::vector<bool>> is_anchor_;
};

// Pieces() are the pieces of a distinct pair of sequences, with their positions indexed.
Template Pieces(const PerSide<const Types*>& types, const RoleTable& roles) {
  Template t;
  t.pieces = Aligner(types, roles).Run();
  for (Side side : kSides) {
    const uint32_t n = KernelCount(*types[side]);
    std::vector<std::vector<uint32_t>> at(n);
    for (uint32_t i = 0; i < t.pieces.size(); ++i) {
      const Piece& p = t.pieces[i];
      for (uint32_t k = p.begin[side]; k < p.end[side] && k < n; ++k) {
        const bool extra =
            side == Other(p.fused_by) && std::binary_search(p.extras.begin(), p.extras.end(), k);
        at[k].push_back(i << 1 | (extra ? 1 : 0));
      }
    }
    t.first[side].reserve(n + 1);
    for (uint32_t k = 0; k < n; ++k) {
      t.first[side].push_back(static_cast<uint32_t>(t.entries[side].size()));
      t.entries[side].insert(t.entries[side].end(), at[k].begin(), at[k].end());
    }
    t.first[side].push_back(static_cast<uint32_t>(t.entries[side].size()));
  }
  return t;
}

// Signature is what instances of one fusion difference share, and their totals.
struct Signature {
  FusionDifferenceKind kind;
  uint32_t scope;
  PerSide<std::vector<uint32_t>> ops;  // op name ids (see Finder::OpId)
  PerSide<uint32_t> types;             // Finder::piece_types_ ids
  const Piece* piece;                  // the first instance's (its template's)
  uint64_t instances = 0;
  PerSide<int64_t> time_ns{};
  int64_t extra_time_ns = 0;
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
  std::vector<uint8_t> role;         // per kernel name: its RoleTable index
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
          t += static_cast<char>(role[k.name]);
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
  }

  std::vector<FusionDifference> Run() {
    if (ops_.candidates.empty()) return {};
    ReadRoles();
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
  // ReadRoles() gives each kernel name of a candidate unit its role, and the table what the
  // kernel-roles data says of the traces' categories.
  void ReadRoles() {
    const KernelRoles& data = *KernelRoles::Builtin();
    const TraceProfile& p = *sides_[Side::kTrace1].profile;
    roles_.absorbs.resize(kMaxCategories);
    for (CategoryId c : CategoryIds(p.category_count())) {
      const std::string& name = p.category_name(c);
      if (name == "Communication") roles_.communication = c;
      if (data.heavy(name)) roles_.heavy.set(c);
      for (CategoryId d : CategoryIds(p.category_count())) {
        if (data.absorbs(name, p.category_name(d))) roles_.absorbs[c].set(d);
      }
    }
    for (Side side : kSides) {
      SideKernels& s = sides_[side];
      s.role.resize(s.profile->names.size());
      for (uint32_t n = 0; n < s.role.size(); ++n) {
        s.role[n] = roles_.Intern(data.RoleOf(s.profile->names[n]), *s.profile);
      }
    }
  }

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
      unit.offset = KernelCount(joined);
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
  uint32_t TemplateOf(const PerSide<uint32_t>& ids) {
    const uint64_t key = (uint64_t{ids[Side::kTrace1]} << 32) | ids[Side::kTrace2];
    auto [it, added] = template_ids_.try_emplace(key, static_cast<uint32_t>(templates_.size()));
    if (added) {
      const PerSide<const Types*> types = {{&sides_[Side::kTrace1].interned[ids[Side::kTrace1]],
                                            &sides_[Side::kTrace2].interned[ids[Side::kTrace2]]}};
      Template t = Pieces(types, roles_);
      for (Piece& piece : t.pieces) {
        for (Side side : kSides) {
          piece.types[side] = PieceTypes(types[side]->substr(
              2 * piece.begin[side], 2 * (piece.end[side] - piece.begin[side])));
        }
      }
      templates_.push_back(std::move(t));
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
          TemplateOf({{JoinedTypes(Side::kTrace1, c), JoinedTypes(Side::kTrace2, c)}});
      candidate_template_.push_back(t);
      const std::vector<Piece>& pieces = templates_[t].pieces;
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
          Signature sig{c.kind, c.scope, ops, piece.types, &piece};
          auto [id, new_signature] = signature_ids.try_emplace(
              SignatureKey(sig), static_cast<uint32_t>(signatures_.size()));
          if (new_signature) signatures_.push_back(std::move(sig));
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
      // A step's replays are one candidate, however many: each name once.
      if (c.kind == FusionDifferenceKind::kGraph &&
          std::find(ops->begin(), ops->end(), op_of_name[name]) != ops->end()) {
        continue;
      }
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
    // What the piece says of its kernels, relative to its ranges.
    const Piece& p = *sig.piece;
    key += static_cast<char>(p.relation);
    key += static_cast<char>(p.fused_by);
    AppendNumber(p.fused_kernel == kNone ? kNone : p.fused_kernel - p.begin[p.fused_by], &key);
    for (uint32_t e : p.extras) AppendNumber(e - p.begin[Other(p.fused_by)], &key);
    return key;
  }

  // SumTimes() adds each candidate kernel's duration to the slots whose piece holds it, and to
  // their extra time where it is one of the piece's extras.
  void SumTimes(Side side) {
    SideKernels& s = sides_[side];
    std::vector<int64_t>& time = slot_time_[side];
    // The extras' time is only ever summed per signature: no slot keeps it.
    std::vector<int64_t>& extra = signature_extra_time_[side];
    time.assign(slot_signature_.size(), 0);
    extra.assign(signatures_.size(), 0);
    s.ForEachCandidateKernel(
        [&](uint32_t, const CandidateUnit& unit, uint32_t position, const KernelRecord& k) {
          const uint32_t c = unit.slot;
          const uint32_t at = unit.offset + position;
          const Template& t = templates_[candidate_template_[c]];
          if (at + 1 >= t.first[side].size()) return;
          for (uint32_t e = t.first[side][at]; e < t.first[side][at + 1]; ++e) {
            const uint32_t slot = candidate_slot_[c] + (t.entries[side][e] >> 1);
            time[slot] += k.dur_ns;
            if (t.entries[side][e] & 1) extra[slot_signature_[slot]] += k.dur_ns;
          }
        });
  }

  // ChooseExamples() totals each signature's time and picks, as its example, the slot whose two
  // sides differ most in time (the first such, in step order).
  void ChooseExamples() {
    for (uint32_t g = 0; g < signatures_.size(); ++g) {
      signatures_[g].extra_time_ns =
          signature_extra_time_[Side::kTrace1][g] + signature_extra_time_[Side::kTrace2][g];
    }
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
              const bool extra = side == Other(piece.fused_by) &&
                                 std::binary_search(piece.extras.begin(), piece.extras.end(), at);
              out[side][g].push_back(FusionKernel{
                  s.tree->families[s.tree->name_family[k.name]], s.profile->names[k.name],
                  s.profile->category_name(s.category[k.name]), k.dur_ns, extra});
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
    for (uint32_t i = 0; i < KernelCount(types); ++i) {
      counts[p.category_name(CategoryAt(types, i))] += times;
    }
    return {counts.begin(), counts.end()};
  }

  std::vector<std::string> TypeNames(const Types& types) const {
    std::vector<std::string> names;
    const TraceProfile& p = *sides_[Side::kTrace1].profile;
    for (uint32_t i = 0; i < KernelCount(types); ++i) {
      names.push_back(p.category_name(CategoryAt(types, i)));
    }
    return names;
  }

  std::vector<FusionDifference> Describe() {
    PerSide<std::vector<std::vector<FusionKernel>>> examples = ExampleKernels();
    std::vector<FusionDifference> out(signatures_.size());
    AddInstanceUnits(&out);
    for (uint32_t g = 0; g < signatures_.size(); ++g) {
      const Signature& sig = signatures_[g];
      FusionDifference& d = out[g];
      d.kind = sig.kind;
      d.scope = ops_.candidate_scopes[sig.scope];
      if (sig.kind != FusionDifferenceKind::kModule) d.op = op_names_[sig.ops[Side::kTrace1][0]];
      const Piece& piece = *sig.piece;
      d.relation = piece.relation;
      d.fused_by = piece.fused_by;
      d.instances = sig.instances;
      d.extra_time_ns = sig.extra_time_ns;
      for (Side side : kSides) {
        FusionDifferenceSide& fs = d.sides[side];
        for (uint32_t op : sig.ops[side]) fs.ops.push_back(op_names_[op]);
        const Types& types = piece_types_[sig.types[side]];
        fs.types = TypeNames(types);
        fs.kernels = uint64_t{KernelCount(types)} * sig.instances;
        fs.categories = ByCategory(types, sig.instances);
        fs.time_ns = sig.time_ns[side];
        fs.example = std::move(examples[side][g]);
      }
      Extras(sig, &d);
      const std::vector<FusionKernel>& fused = d.sides[d.fused_by].example;
      if (piece.fused_kernel != kNone &&
          piece.fused_kernel - piece.begin[d.fused_by] < fused.size()) {
        const FusionKernel& k = fused[piece.fused_kernel - piece.begin[d.fused_by]];
        d.fused_kernel = k.family;
        d.fused_kernel_name = k.name;
        d.fused_kernel_category = k.category;
      }
      const FusionCandidate& c = ops_.candidates[CandidateOf(sig.example_slot)];
      d.example_step = c.step;
      d.example_index = ExampleIndex(c);
    }
    return out;
  }

  // AddInstanceUnits() gives each signature's difference the first unit, per side, of each
  // candidate it was found in.
  void AddInstanceUnits(std::vector<FusionDifference>* out) const {
    for (uint32_t c = 0; c < ops_.candidates.size(); ++c) {
      const FusionCandidate& candidate = ops_.candidates[c];
      for (uint32_t slot = candidate_slot_[c]; slot < candidate_slot_[c + 1]; ++slot) {
        FusionDifference& d = (*out)[slot_signature_[slot]];
        for (Side side : kSides) {
          if (candidate.units_begin[side] == candidate.units_end[side]) continue;
          d.instance_units[side].push_back(ops_.candidate_units[side][candidate.units_begin[side]]);
        }
      }
    }
    for (FusionDifference& d : *out) {
      for (std::vector<uint32_t>& units : d.instance_units) {
        std::sort(units.begin(), units.end());
        units.erase(std::unique(units.begin(), units.end()), units.end());
      }
    }
  }

  // Extras() lists the unfused side's extra kernels by category and by family (the example's,
  // times the instances), each family with its first kernel's full name.
  void Extras(const Signature& sig, FusionDifference* d) const {
    std::map<std::string, uint64_t> categories;
    std::map<std::pair<std::string, std::string>, std::pair<uint64_t, const std::string*>> families;
    for (const FusionKernel& k : d->sides[d->unfused()].example) {
      if (!k.extra) continue;
      categories[k.category] += sig.instances;
      auto& [count, example] = families[{k.family, k.category}];
      count += sig.instances;
      if (example == nullptr) example = &k.name;
    }
    d->extra_categories.assign(categories.begin(), categories.end());
    for (const auto& [family, counted] : families) {
      d->extra_kernels.push_back(
          ExtraKernels{family.first, *counted.second, family.second, counted.first});
    }
    // Most first, then by name.
    std::stable_sort(
        d->extra_kernels.begin(), d->extra_kernels.end(),
        [](const ExtraKernels& a, const ExtraKernels& b) { return a.count > b.count; });
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
      return std::tie(d.kind, d.relation, d.scope, d.op, d.sides[unfused].types,
                      d.sides[d.fused_by].types, d.sides[unfused].ops, d.sides[d.fused_by].ops);
    };
    std::stable_sort(out->begin(), out->end(),
                     [&](const FusionDifference& a, const FusionDifference& b) {
                       if (a.saving_ns() != b.saving_ns()) return a.saving_ns() > b.saving_ns();
                       return key(a) < key(b);
                     });
  }

  OpComparison& ops_;
  RoleTable roles_;
  PerSide<SideKernels> sides_;
  StringMap<uint32_t> op_ids_;
  std::vector<std::string> op_names_;
  PerSide<std::vector<uint32_t>> op_of_name_;  // per side, an OpTree name -> its op id
  // Each distinct pair of sequences aligned once: (trace-1 id, trace-2 id) -> template. Slots
  // point at the templates' pieces, which stay put as `templates_` grows.
  absl::flat_hash_map<uint64_t, uint32_t> template_ids_;
  std::vector<Template> templates_;
  std::vector<uint32_t> candidate_template_;
  absl::flat_hash_map<Types, uint32_t> piece_type_ids_;
  std::vector<Types> piece_types_;
  std::vector<Signature> signatures_;
  std::vector<uint32_t> candidate_slot_;  // per candidate: its first slot; one more at the end
  std::vector<uint32_t> slot_signature_;
  std::vector<const Piece*> slot_piece_;
  PerSide<std::vector<int64_t>> slot_time_;
  PerSide<std::vector<int64_t>> signature_extra_time_;
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
