#include "tracefuse/batch/pairing.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <system_error>

#include "tracefuse/base/strings.h"
#include "tracefuse/parse/importer.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse {
namespace {

namespace fs = std::filesystem;

// IsTraceFile() tells a trace by its name: JSON (the PyTorch profiler's, rocprofv3's), plain or
// compressed; or an SQLite database (Nsight Systems and rocpd exports) by its name and content.
bool IsTraceFile(const fs::path& path) {
  const std::string name = path.filename().string();
  auto ends_with = [&](std::string_view suffix) {
    return name.size() > suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".json") || ends_with(".json.gz") || ends_with(".json.zst")) return true;
  if (!ends_with(".sqlite") && !ends_with(".sqlite3") && !ends_with(".db")) return false;
  absl::StatusOr<TraceFormat> format = DetectTraceFormat(path.string());
  return format.ok() && *format != TraceFormat::kKineto;
}

// TracesIn() lists a directory's trace files (absolute paths), sorted by name.
absl::StatusOr<std::vector<fs::path>> TracesIn(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return absl::NotFoundError(StrCat(dir, ": ", ec.message()));
  std::vector<fs::path> traces;
  for (const fs::directory_entry& entry : it) {
    if (entry.is_regular_file(ec) && IsTraceFile(entry.path())) {
      traces.push_back(fs::absolute(entry.path()).lexically_normal());
    }
  }
  std::sort(traces.begin(), traces.end());
  return traces;
}

// A trace with the rank it claims and where that claim comes from.
struct RankedTrace {
  fs::path path;
  int64_t rank = 0;
  std::string source;  // "distributedInfo.rank" or "file name"
};

// RankedTraces() maps each rank of a directory to its trace; traces without a rank go to
// `unranked`. Two traces claiming one rank are an error.
absl::StatusOr<std::map<int64_t, RankedTrace>> RankedTraces(const std::string& dir,
                                                            std::vector<std::string>* unranked) {
  absl::StatusOr<std::vector<fs::path>> traces = TracesIn(dir);
  if (!traces.ok()) return traces.status();
  std::map<int64_t, RankedTrace> by_rank;
  for (const fs::path& path : *traces) {
    // A trace whose leading keys cannot be read is still paired by its name, so that its
    // comparison fails with the reader's error where the batch reports it.
    absl::StatusOr<TraceMetadata> metadata = ReadLeadingMetadata(path.string());
    RankedTrace t{path, 0, "distributedInfo.rank"};
    if (metadata.ok() && metadata->rank) {
      t.rank = *metadata->rank;
    } else if (std::optional<int64_t> rank = RankFromFileName(path.filename().string())) {
      t.rank = *rank;
      t.source = "file name";
    } else {
      unranked->push_back(StrCat(
          path.string(), ": no rank (",
          metadata.ok() ? "no distributedInfo.rank" : std::string(metadata.status().message()),
          ", and none in its name)"));
      continue;
    }
    auto [it, inserted] = by_rank.try_emplace(t.rank, t);
    if (!inserted) {
      return absl::InvalidArgumentError(StrCat(
          dir, ": rank ", t.rank, " is claimed by both ", it->second.path.filename().string(), " (",
          it->second.source, ") and ", path.filename().string(), " (", t.source, ")"));
    }
  }
  return by_rank;
}

absl::StatusOr<Pairing> PairByRank(const std::string& dir1, const std::string& dir2) {
  Pairing pairing;
  absl::StatusOr<std::map<int64_t, RankedTrace>> ranks1 = RankedTraces(dir1, &pairing.unpaired);
  if (!ranks1.ok()) return ranks1.status();
  absl::StatusOr<std::map<int64_t, RankedTrace>> ranks2 = RankedTraces(dir2, &pairing.unpaired);
  if (!ranks2.ok()) return ranks2.status();
  for (const auto& [rank, t1] : *ranks1) {
    auto t2 = ranks2->find(rank);
    if (t2 == ranks2->end()) {
      pairing.unpaired.push_back(StrCat(t1.path.string(), ": no rank ", rank, " in ", dir2));
      continue;
    }
    pairing.manifest.rows.push_back(
        ManifestRow{StrCat("rank", rank), t1.path.string(), t2->second.path.string(), {}, 0});
  }
  for (const auto& [rank, t2] : *ranks2) {
    if (!ranks1->count(rank)) {
      pairing.unpaired.push_back(StrCat(t2.path.string(), ": no rank ", rank, " in ", dir1));
    }
  }
  return pairing;
}

// LabelFromName() makes a file name a label: its trace suffixes dropped, other characters than
// letters, digits, '.', '_' and '-' replaced by '_'.
std::string LabelFromName(std::string name) {
  for (std::string_view suffix :
       {".gz", ".zst", ".json", ".pt.trace", ".trace", ".sqlite", ".sqlite3", ".db"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
    }
  }
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return IsValidLabel(name) ? name : "trace_" + name;
}

absl::StatusOr<Pairing> PairByName(const std::string& dir1, const std::string& dir2) {
  absl::StatusOr<std::vector<fs::path>> traces1 = TracesIn(dir1), traces2 = TracesIn(dir2);
  if (!traces1.ok()) return traces1.status();
  if (!traces2.ok()) return traces2.status();
  std::map<std::string, fs::path> by_name2;
  for (const fs::path& p : *traces2) by_name2[p.filename().string()] = p;
  Pairing pairing;
  std::map<std::string, int> label_uses;
  for (const fs::path& p : *traces1) {
    auto t2 = by_name2.find(p.filename().string());
    if (t2 == by_name2.end()) {
      pairing.unpaired.push_back(StrCat(p.string(), ": no file of that name in ", dir2));
      continue;
    }
    std::string label = LabelFromName(p.filename().string());
    // Names that differ only in characters a label cannot hold still get distinct labels.
    if (int uses = label_uses[label]++; uses > 0) label += StrCat("-", uses + 1);
    pairing.manifest.rows.push_back(ManifestRow{label, p.string(), t2->second.string(), {}, 0});
    by_name2.erase(t2);
  }
  for (const auto& [name, p] : by_name2) {
    pairing.unpaired.push_back(StrCat(p.string(), ": no file of that name in ", dir1));
  }
  return pairing;
}

}  // namespace

std::optional<int64_t> RankFromFileName(const std::string& file_name) {
  std::string lower(file_name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto digits_at = [&](size_t at) -> std::optional<int64_t> {
    size_t end = at;
    while (end < lower.size() && end - at < 9 &&
           std::isdigit(static_cast<unsigned char>(lower[end])))
      ++end;
    if (end == at) return std::nullopt;
    return std::stoll(lower.substr(at, end - at));
  };
  for (size_t at = lower.find("rank"); at != std::string::npos; at = lower.find("rank", at + 1)) {
    size_t digits = at + 4;
    if (digits < lower.size() && (lower[digits] == '-' || lower[digits] == '_')) ++digits;
    if (std::optional<int64_t> rank = digits_at(digits)) return rank;
  }
  // "_<N>." : the last such token, so that "run_2_7.json" is rank 7.
  for (size_t at = lower.rfind('_'); at != std::string::npos;
       at = at == 0 ? std::string::npos : lower.rfind('_', at - 1)) {
    size_t end = at + 1;
    while (end < lower.size() && std::isdigit(static_cast<unsigned char>(lower[end]))) ++end;
    if (end > at + 1 && end < lower.size() && lower[end] == '.') return digits_at(at + 1);
  }
  return std::nullopt;
}

absl::StatusOr<Pairing> PairTraces(const std::string& dir1, const std::string& dir2, PairBy by) {
  absl::StatusOr<Pairing> pairing =
      by == PairBy::kRank ? PairByRank(dir1, dir2) : PairByName(dir1, dir2);
  if (!pairing.ok()) return pairing.status();
  Manifest& m = pairing->manifest;
  m.comments.push_back(StrCat(" tracefuse pairs ", dir1, " ", dir2, " --match ",
                              by == PairBy::kRank ? "rank" : "name", ": ", m.rows.size(),
                              " pairs, ", pairing->unpaired.size(), " unpaired files"));
  for (const std::string& u : pairing->unpaired) m.comments.push_back(StrCat(" unpaired: ", u));
  return pairing;
}

}  // namespace tracefuse
