#include <cstdio>

#include "command.h"
#include "tracefuse/batch/pairing.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse::cli {
namespace {

struct PairsArgs {
  std::string dir1, dir2;
  std::string match = "rank";
  std::string output = "-";
};

int RunPairs(const PairsArgs& a) {
  absl::StatusOr<Pairing> pairing =
      PairTraces(a.dir1, a.dir2, a.match == "name" ? PairBy::kName : PairBy::kRank);
  if (!pairing.ok()) return Fail(pairing.status());
  for (const std::string& u : pairing->unpaired) {
    std::fprintf(stderr, "tracefuse: pairs: unpaired: %s\n", u.c_str());
  }
  absl::Status written = WriteOutput(a.output, ManifestText(pairing->manifest));
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, PairsArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "pairs",
      "Pair the traces of two runs (one per rank, say) into a manifest for `tracefuse batch`");
  cmd->add_option("DIR1", a->dir1,
                  "directory of the first run's traces (.json, .json.gz, .json.zst, and Nsight "
                  "Systems or rocpd databases: .sqlite, .sqlite3, .db)")
      ->required();
  cmd->add_option("DIR2", a->dir2, "directory of the second run's traces")->required();
  cmd->add_option("--match", a->match,
                  "rank: the same distributedInfo.rank (else a rank<N> / rank-<N> / _<N>. token "
                  "in the file name); name: the same file name")
      ->check(CLI::IsMember({"rank", "name"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "write the manifest to FILE (atomically)");
  return cmd;
}

}  // namespace

Command AddPairsCommand(CLI::App* app) { return MakeCommand(app, Declare, RunPairs); }

}  // namespace tracefuse::cli
