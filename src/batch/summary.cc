// `tracefuse merge`: a batch's output directory as one MergeSummary.
#include "tracefuse/batch/summary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>
#include <tuple>

#include "tracefuse/base/strings.h"
#include "tracefuse/batch/manifest.h"

namespace tracefuse {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStatusSuffix = ".status.json";

// StatusFiles() lists the status files of `dir` by name.
absl::StatusOr<std::vector<fs::path>> StatusFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(StrCat(dir, ": No such file or directory"));
  if (!fs::is_directory(dir, ec)) {
    return absl::FailedPreconditionError(StrCat(dir, ": not a directory"));
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t n = kStatusSuffix.size();
    if (name.size() > n && std::string_view(name).substr(name.size() - n) == kStatusSuffix) {
      files.push_back(it->path());
    }
  }
  if (ec) return absl::UnavailableError(StrCat(dir, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

// ReadPair() reads one pair's status file and, for a complete pair, its report; a file that
// cannot be read makes the pair failed, with the message as its error. Only SIGTERM or SIGINT
// (Cancelled) is an error.
absl::StatusOr<MergedPair> ReadPair(const fs::path& status_file, const SummaryOptions& options,
                                    std::string* manifest) {
  MergedPair pair;
  const std::string name = status_file.filename().string();
  pair.label = name.substr(0, name.size() - kStatusSuffix.size());
  pair.status_file = status_file.string();
  auto bad_file = [&](const absl::Status& s) {
    pair.state = PairState::kFailed;
    pair.error = std::string(s.message());
    if (options.on_bad_file) options.on_bad_file(pair.error);
  };
  absl::StatusOr<RecordedStatus> status = ReadPairStatus(pair.status_file);
  if (absl::IsCancelled(status.status())) return status.status();
  if (!status.ok()) {
    bad_file(status.status());
    return pair;
  }
  pair.state = status->state;
  pair.exit_code = status->exit_code;
  pair.error = status->error;
  pair.task = status->task;
  pair.elapsed_seconds = status->elapsed_seconds;
  pair.peak_rss_bytes = status->peak_rss_bytes;
  pair.host = status->host;
  pair.started_at = status->started_at;
  pair.traces[Side::kTrace1].path = status->trace1;
  pair.traces[Side::kTrace2].path = status->trace2;
  for (Side s : kSides) {
    pair.traces[s].timeline = std::move(status->timelines[s]);
    if (pair.traces[s].timeline) pair.traces[s].timeline->pair = pair.label;
  }
  *manifest = status->manifest;
  if (pair.state != PairState::kComplete) return pair;
  pair.report_file = (status_file.parent_path() / (pair.label + ".json")).string();
  absl::Status report = ReadPairReport(pair.report_file, &pair);
  if (absl::IsCancelled(report)) return report;
  if (!report.ok()) {
    bad_file(report);
    return pair;
  }
  // A pair compared --by-op: its op comparison.
  const fs::path ops_file = status_file.parent_path() / StrCat(pair.label, kOpsReportSuffix);
  std::error_code ec;
  if (!fs::exists(ops_file, ec)) return pair;
  absl::StatusOr<MergedOps> ops = ReadPairOps(ops_file.string());
  if (absl::IsCancelled(ops.status())) return ops.status();
  if (!ops.ok()) {
    bad_file(ops.status());
    return pair;
  }
  pair.ops = std::move(*ops);
  return pair;
}

// ReadManifestInto() records the manifest's path, rows or error in `summary`, and returns its
// rows (none when it cannot be read).
std::vector<ManifestRow> ReadManifestInto(const std::string& path, MergeSummary* summary) {
  summary->manifest_path = path;
  if (path.empty()) {
    summary->manifest_error = "none given (--manifest) and no status file records one";
    return {};
  }
  absl::StatusOr<Manifest> manifest = ReadManifest(path);
  if (!manifest.ok()) {
    summary->manifest_error = std::string(manifest.status().message());
    return {};
  }
  summary->manifest_rows = manifest->rows.size();
  for (ManifestRow& row : manifest->rows) {
    row.trace1 = ResolveTracePath(*manifest, row.trace1);
    row.trace2 = ResolveTracePath(*manifest, row.trace2);
  }
  return std::move(manifest->rows);
}

// OrderPairs() lists the manifest's rows in its order, a missing pair for each row without a
// status file, then the pairs the manifest does not name, by task and label.
std::vector<MergedPair> OrderPairs(std::vector<MergedPair> found,
                                   const std::vector<ManifestRow>& rows) {
  std::sort(found.begin(), found.end(), [](const MergedPair& a, const MergedPair& b) {
    const int64_t ta = a.task.value_or(INT64_MAX), tb = b.task.value_or(INT64_MAX);
    return ta != tb ? ta < tb : a.label < b.label;
  });
  std::map<std::string, size_t> by_label;
  for (size_t i = 0; i < found.size(); ++i) by_label[found[i].label] = i;
  std::vector<bool> placed(found.size(), false);
  std::vector<MergedPair> pairs;
  for (const ManifestRow& row : rows) {
    auto it = by_label.find(row.label);
    if (it != by_label.end()) {
      pairs.push_back(std::move(found[it->second]));
      placed[it->second] = true;
      continue;
    }
    MergedPair missing;
    missing.label = row.label;
    missing.state = PairState::kMissing;
    missing.error = StrCat("no status file (manifest line ", row.line, ")");
    missing.traces[Side::kTrace1].path = row.trace1;
    missing.traces[Side::kTrace2].path = row.trace2;
    pairs.push_back(std::move(missing));
  }
  for (size_t i = 0; i < found.size(); ++i) {
    if (!placed[i]) pairs.push_back(std::move(found[i]));
  }
  return pairs;
}

std::vector<MergedPair*> CompletePairs(MergeSummary* summary) {
  std::vector<MergedPair*> complete;
  for (MergedPair& p : summary->pairs) {
    if (p.state == PairState::kComplete && p.has_report) complete.push_back(&p);
  }
  return complete;
}

// Sides() names the summary's sides and marks the pairs whose traces are the other way round:
// by platform when every complete pair compares the same two known platforms, else by position.
PerSide<std::string> Sides(const std::vector<MergedPair*>& complete) {
  const PerSide<std::string> by_position{{"trace1", "trace2"}};
  if (complete.empty()) return by_position;
  const PerSide<std::string> platforms{{complete.front()->traces[Side::kTrace1].platform,
                                        complete.front()->traces[Side::kTrace2].platform}};
  for (const std::string& platform : platforms) {
    if (platform.empty() || platform == "unknown") return by_position;
  }
  if (platforms[Side::kTrace1] == platforms[Side::kTrace2]) return by_position;
  for (const MergedPair* p : complete) {
    const std::string& a = p->traces[Side::kTrace1].platform;
    const std::string& b = p->traces[Side::kTrace2].platform;
    const bool same = a == platforms[Side::kTrace1] && b == platforms[Side::kTrace2];
    const bool swapped = a == platforms[Side::kTrace2] && b == platforms[Side::kTrace1];
    if (!same && !swapped) return by_position;
  }
  for (MergedPair* p : complete) {
    p->sides_swapped = p->traces[Side::kTrace1].platform != platforms[Side::kTrace1];
  }
  return platforms;
}

// Stats() is one side of one category over the complete pairs (0 where a pair has none).
SideStats Stats(const std::string& category, Side side, const std::vector<MergedPair*>& complete) {
  SideStats stats;
  std::vector<double> values;
  for (const MergedPair* p : complete) {
    double us = 0;
    for (const auto& [name, time] : p->OnSide(side).time_us_by_category) {
      if (name == category) us = time, ++stats.pairs_with_kernels;
    }
    if (values.empty() || us < stats.min_us) stats.min_us = us, stats.min_pair = p->label;
    if (values.empty() || us > stats.max_us) stats.max_us = us, stats.max_pair = p->label;
    stats.sum_us += us;
    values.push_back(us);
  }
  stats.median_us = Median(std::move(values));
  return stats;
}

std::vector<CategorySummary> Categories(const std::vector<MergedPair*>& complete) {
  std::vector<std::string> names;  // in order of first appearance
  for (const MergedPair* p : complete) {
    for (Side s : kSides) {
      for (const auto& [name, us] : p->OnSide(s).time_us_by_category) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    }
  }
  std::vector<CategorySummary> categories;
  for (const std::string& name : names) {
    categories.push_back(
        {name, {{Stats(name, Side::kTrace1, complete), Stats(name, Side::kTrace2, complete)}}});
  }
  auto total = [](const CategorySummary& c) {
    return c.sides[Side::kTrace1].sum_us + c.sides[Side::kTrace2].sum_us;
  };
  std::stable_sort(categories.begin(), categories.end(),
                   [&](const auto& a, const auto& b) { return total(a) > total(b); });
  return categories;
}

std::vector<RecurringOpportunity> Recurring(const std::vector<MergedPair*>& complete) {
  std::vector<RecurringOpportunity> recurring;  // in order of first appearance
  std::vector<std::vector<double>> ratios;
  for (const MergedPair* p : complete) {
    for (const MergedOpportunity& o : p->opportunities) {
      const Side side = p->sides_swapped ? Opposite(o.fused_by) : o.fused_by;
      auto it = std::find_if(recurring.begin(), recurring.end(), [&](const auto& r) {
        return r.kernel_type == o.kernel_type && r.fused_by == side;
      });
      if (it == recurring.end()) {
        recurring.push_back({o.kernel_type, side, {}, 0});
        ratios.emplace_back();
        it = recurring.end() - 1;
      }
      it->pairs.push_back(p->label);
      ratios[it - recurring.begin()].push_back(o.ratio);
    }
  }
  for (size_t i = 0; i < recurring.size(); ++i) recurring[i].median_ratio = Median(ratios[i]);
  std::stable_sort(recurring.begin(), recurring.end(), [](const auto& a, const auto& b) {
    if (a.pairs.size() != b.pairs.size()) return a.pairs.size() > b.pairs.size();
    if (a.median_ratio != b.median_ratio) return a.median_ratio > b.median_ratio;
    return a.kernel_type < b.kernel_type;
  });
  return recurring;
}

// Ranks() is one side's ranks: the complete pairs with that side's timeline.
RankAnalysis Ranks(Side side, const std::vector<MergedPair*>& complete, double threshold) {
  std::vector<const RankTimeline*> ranks;
  for (const MergedPair* p : complete) {
    if (const std::optional<RankTimeline>& t = p->OnSide(side).timeline) ranks.push_back(&*t);
  }
  return AnalyzeRanks(ranks, threshold);
}

// OnSummarySide() is `pair`'s value of `values` on the summary's side `side`.
template <typename T>
const T& OnSummarySide(const MergedPair& pair, const PerSide<T>& values, Side side) {
  return values[pair.sides_swapped ? Opposite(side) : side];
}

// OpFusionDifferences() is every fusion difference of the pairs compared --by-op, once, summed
// over the pairs where it appears.
std::vector<OpFusionDifference> OpFusionDifferences(const std::vector<MergedPair*>& complete) {
  // The extra kernels by family: their counts, over the instances, are summed.
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::optional<Side>,
                         std::string, std::vector<std::string>>;
  std::map<Key, size_t> index;
  std::vector<OpFusionDifference> merged;
  for (const MergedPair* p : complete) {
    if (!p->ops) continue;
    for (const OpFusionDifference& d : p->ops->fusion_differences) {
      std::optional<Side> fused_by = d.fused_by;
      if (fused_by && p->sides_swapped) fused_by = Opposite(*fused_by);
      std::vector<std::string> families;
      for (const auto& kernel : d.extra_kernels) families.push_back(kernel.first);
      const Key key{d.kind, d.scope, d.op, d.relation, fused_by, d.fused_kernel, families};
      auto [at, inserted] = index.try_emplace(key, merged.size());
      if (inserted) {
        OpFusionDifference& m = merged.emplace_back();
        std::tie(m.kind, m.scope, m.op, m.relation, m.fused_by, m.fused_kernel, std::ignore) = key;
        for (const std::string& family : families) m.extra_kernels.emplace_back(family, 0);
      }
      OpFusionDifference& m = merged[at->second];
      for (size_t i = 0; i < d.extra_kernels.size(); ++i) {
        m.extra_kernels[i].second += d.extra_kernels[i].second;
      }
      m.instances += d.instances;
      m.extra_time_us += d.extra_time_us;
      m.saving_us += d.saving_us;
      for (Side side : kSides) m.time_us[side] += OnSummarySide(*p, d.time_us, side);
      if (m.pairs.empty() || m.pairs.back() != p->label) m.pairs.push_back(p->label);
    }
  }
  std::stable_sort(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
    if (a.pairs.size() != b.pairs.size()) return a.pairs.size() > b.pairs.size();
    return a.extra_time_us > b.extra_time_us;
  });
  return merged;
}

// OpTimesAcrossPairs() is every op matched in a pair compared --by-op, its times summed over
// those pairs, the largest difference either way first.
std::vector<OpTimes> OpTimesAcrossPairs(const std::vector<MergedPair*>& complete) {
  std::map<std::pair<std::string, std::string>, OpTimes> by_op;
  for (const MergedPair* p : complete) {
    if (!p->ops) continue;
    for (const OpTimes& row : p->ops->ops) {
      OpTimes& m = by_op[{row.op, row.scope}];
      m.op = row.op;
      m.scope = row.scope;
      m.instances += row.instances;
      for (Side side : kSides) m.time_us[side] += OnSummarySide(*p, row.time_us, side);
      ++m.pairs;
    }
  }
  std::vector<OpTimes> ops;
  for (auto& entry : by_op) ops.push_back(std::move(entry.second));
  std::stable_sort(ops.begin(), ops.end(), [](const OpTimes& a, const OpTimes& b) {
    return std::abs(a.DeltaUs()) > std::abs(b.DeltaUs());
  });
  return ops;
}

}  // namespace

absl::StatusOr<MergeSummary> SummarizeBatch(const std::string& dir, const SummaryOptions& options) {
  absl::StatusOr<std::vector<fs::path>> files = StatusFiles(dir);
  if (!files.ok()) return files.status();
  MergeSummary summary;
  summary.dir = dir;
  summary.top = options.top;
  std::vector<MergedPair> found;
  std::string recorded_manifest;  // the first one a status file records
  for (const fs::path& file : *files) {
    std::string manifest;
    absl::StatusOr<MergedPair> pair = ReadPair(file, options, &manifest);
    if (!pair.ok()) return pair.status();
    found.push_back(std::move(*pair));
    if (recorded_manifest.empty()) recorded_manifest = manifest;
  }
  const std::vector<ManifestRow> rows =
      ReadManifestInto(options.manifest.empty() ? recorded_manifest : options.manifest, &summary);
  summary.pairs = OrderPairs(std::move(found), rows);
  const std::vector<MergedPair*> complete = CompletePairs(&summary);
  summary.side_names = Sides(complete);
  summary.categories = Categories(complete);
  summary.recurring = Recurring(complete);
  summary.straggler_threshold = options.straggler_threshold;
  for (Side side : kSides) {
    summary.ranks[side] = Ranks(side, complete, options.straggler_threshold);
  }
  for (const MergedPair* p : complete) summary.pairs_with_ops += p->ops ? 1 : 0;
  summary.fusion_differences = OpFusionDifferences(complete);
  summary.ops = OpTimesAcrossPairs(complete);
  return summary;
}

}  // namespace tracefuse
