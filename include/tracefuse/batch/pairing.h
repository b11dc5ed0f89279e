// Pairing: the traces of two runs (one file per rank of a distributed job, say) matched into a
// manifest of comparisons.
#ifndef TRACEFUSE_BATCH_PAIRING_H_
#define TRACEFUSE_BATCH_PAIRING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/batch/manifest.h"

namespace tracefuse {

// PairBy says what makes two traces a pair.
enum class PairBy {
  // The same rank: a trace's `distributedInfo.rank` (read from the keys before its events),
  // else a `rank<N>`, `rank-<N>` or `rank_<N>` token in its file name, else a `_<N>.` token.
  kRank,
  kName,  // the same file name
};

// RankFromFileName() is the rank a file name spells ("trace_rank3.json", "rank-12.pt.trace.json",
// "worker_7.json.gz"), nullopt when it spells none.
std::optional<int64_t> RankFromFileName(const std::string& file_name);

// Pairing is a manifest of paired traces (rows sorted by rank, or by name) and the files that
// found no partner, each with why ("path: no rank 7 in DIR2").
struct Pairing {
  Manifest manifest;
  std::vector<std::string> unpaired;
};

// PairTraces() pairs the traces (*.json, *.json.gz) of two directories; the manifest's comments
// say how it was made and list the unpaired files. Errors: a directory that cannot be read, two
// files of one directory claiming the same rank (or, for kRank, a trace whose leading keys
// cannot be read, falls back to its name).
absl::StatusOr<Pairing> PairTraces(const std::string& dir1, const std::string& dir2, PairBy by);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_PAIRING_H_
