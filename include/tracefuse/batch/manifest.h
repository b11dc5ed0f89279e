// Library tracefuse_batch (after pipeline and report): many comparisons, from one manifest.
//
// A manifest is a TSV file: a header line `label<TAB>trace1<TAB>trace2` (and optionally
// `<TAB>options`), then one row per pair. Lines starting with '#' are comments (`tracefuse pairs`
// lists unpaired files there). `label` names the pair's output files, so it is made of letters,
// digits, '.', '_' and '-', and is unique. `options` holds `compare` options for that pair,
// separated by spaces (`--ruleset wafer-kernel --min-group-size 20`). Relative trace paths are
// taken from the manifest's directory, so a manifest travels with its traces.
#ifndef TRACEFUSE_BATCH_MANIFEST_H_
#define TRACEFUSE_BATCH_MANIFEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tracefuse {

struct ManifestRow {
  std::string label;
  std::string trace1, trace2;        // as written in the manifest
  std::vector<std::string> options;  // compare options, split at spaces
  int line = 0;                      // in the manifest file, for messages
};

struct Manifest {
  std::string path;                   // where it was read from ("" when built in memory)
  std::vector<std::string> comments;  // without the leading '#'
  std::vector<ManifestRow> rows;
};

// ReadManifest() parses a manifest file. Errors name the file and line: a missing or wrong
// header, a row with too few or too many columns, a bad or duplicate label.
absl::StatusOr<Manifest> ReadManifest(const std::string& path);

// ManifestText() is the manifest as a file: header, comments, rows.
std::string ManifestText(const Manifest& manifest);

// ResolveTracePath() is a row's trace path as opened: relative paths are taken from the
// manifest's directory.
std::string ResolveTracePath(const Manifest& manifest, const std::string& trace);

// IsValidLabel() says whether `label` can name a pair's output files.
bool IsValidLabel(const std::string& label);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_MANIFEST_H_
