// `tracefuse pairs`: the traces of two runs paired by rank (distributedInfo.rank, else a token
// in the file name) or by name, into a manifest; unpaired files listed, clashes refused.
#include <filesystem>

#include "gtest/gtest.h"
#include "test_util.h"
#include "tracefuse/batch/manifest.h"
#include "tracefuse/batch/pairing.h"

namespace tracefuse {
namespace {

using testing::RunCommand;
using testing::RunResult;

std::string Bin() { return TRACEFUSE_BINARY; }

void Generate(const std::string& path, const std::string& platform, int rank, int world_size = 8) {
  RunResult r =
      RunCommand(std::string(TRACEFUSE_GEN) + " --platform " + platform +
                 " --steps 2 --world-size " + std::to_string(world_size) + " --seed " +
                 std::to_string(rank + 1) + " --rank " + std::to_string(rank) + " -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// A trace without distributedInfo: only its name can say its rank.
constexpr char kBareTrace[] = R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}])";

TEST(RankFromFileName, TokensOfTheDocumentedForms) {
  EXPECT_EQ(RankFromFileName("trace_rank3.json"), 3);
  EXPECT_EQ(RankFromFileName("rank-12.pt.trace.json"), 12);
  EXPECT_EQ(RankFromFileName("RANK_5.json.gz"), 5);
  EXPECT_EQ(RankFromFileName("host1_rank7_step2.json"), 7);
  EXPECT_EQ(RankFromFileName("worker_7.json.gz"), 7);
  EXPECT_EQ(RankFromFileName("worker_7.json.zst"), 7);
  EXPECT_EQ(RankFromFileName("run_2_7.json"), 7);  // the last _<N>. token
  EXPECT_EQ(RankFromFileName("worker-3.json"), std::nullopt);
  EXPECT_EQ(RankFromFileName("model.json"), std::nullopt);
  EXPECT_EQ(RankFromFileName("ranking.json"), std::nullopt);
}

TEST(Pairs, EightRanksOfTwoRunsPairByDistributedInfoAndAnUnpairedFileIsListed) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/amd");
  std::filesystem::create_directories(dir.path() + "/nv");
  // Names carry no rank token, and sort otherwise than ranks: only distributedInfo pairs them.
  const char* names[] = {"h", "g", "f", "e", "d", "c", "b", "a"};
  for (int rank = 0; rank < 8; ++rank) {
    Generate(dir.path() + "/amd/mi300-" + names[rank] + ".json", "amd", rank);
    Generate(dir.path() + "/nv/h100-" + names[7 - rank] + ".json", "nvidia", rank);
  }
  Generate(dir.path() + "/nv/h100-z.json", "nvidia", 8, 9);  // a rank the AMD run lacks
  dir.File("nv/README.txt", "not a trace");
  RunResult r = RunCommand(Bin() + " pairs " + dir.path() + "/amd " + dir.path() + "/nv -o " +
                           dir.path() + "/manifest.tsv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "tracefuse: pairs: unpaired: " + dir.path() + "/nv/h100-z.json: no rank 8 in " +
                       dir.path() + "/amd\n");
  absl::StatusOr<Manifest> m = ReadManifest(dir.path() + "/manifest.tsv");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->rows.size(), 8u);
  for (int rank = 0; rank < 8; ++rank) {
    const ManifestRow& row = m->rows[rank];
    EXPECT_EQ(row.label, "rank" + std::to_string(rank));
    EXPECT_EQ(row.trace1, dir.path() + "/amd/mi300-" + names[rank] + ".json");
    EXPECT_EQ(row.trace2, dir.path() + "/nv/h100-" + names[7 - rank] + ".json");
  }
  ASSERT_EQ(m->comments.size(), 2u);
  EXPECT_EQ(m->comments[1],
            " unpaired: " + dir.path() + "/nv/h100-z.json: no rank 8 in " + dir.path() + "/amd");
}

TEST(Pairs, RankFromTheFileNameWhenTheTraceHasNoDistributedInfo) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/a");
  std::filesystem::create_directories(dir.path() + "/b");
  dir.File("a/run_rank1.json", kBareTrace);
  dir.File("a/run_rank0.json", kBareTrace);
  dir.File("a/notes.json", kBareTrace);
  dir.File("b/worker_0.json", kBareTrace);
  dir.File("b/worker_1.json", kBareTrace);
  absl::StatusOr<Pairing> p = PairTraces(dir.path() + "/a", dir.path() + "/b", PairBy::kRank);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->manifest.rows.size(), 2u);
  EXPECT_EQ(p->manifest.rows[0].trace1, dir.path() + "/a/run_rank0.json");
  EXPECT_EQ(p->manifest.rows[0].trace2, dir.path() + "/b/worker_0.json");
  EXPECT_EQ(p->manifest.rows[1].label, "rank1");
  ASSERT_EQ(p->unpaired.size(), 1u);
  EXPECT_EQ(p->unpaired[0], dir.path() +
                                "/a/notes.json: no rank (no distributedInfo.rank, and none in "
                                "its name)");
}

TEST(Pairs, TwoFilesClaimingOneRankAreAnError) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/a");
  std::filesystem::create_directories(dir.path() + "/b");
  Generate(dir.path() + "/a/first.json", "amd", 3);
  dir.File("a/second_rank3.json", kBareTrace);
  RunResult r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tracefuse: error: " + dir.path() +
                       "/a: rank 3 is claimed by both first.json (distributedInfo.rank) and "
                       "second_rank3.json (file name)\n");
  EXPECT_EQ(r.out, "");
}

TEST(Pairs, ByNameAndErrors) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/a");
  std::filesystem::create_directories(dir.path() + "/b");
  dir.File("a/llama 8b.json", kBareTrace);
  dir.File("a/only-a.json.gz", kBareTrace);
  dir.File("b/llama 8b.json", kBareTrace);
  RunResult r =
      RunCommand(Bin() + " pairs '" + dir.path() + "/a' '" + dir.path() + "/b' --match name");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "label\ttrace1\ttrace2\n# tracefuse pairs " + dir.path() + "/a " + dir.path() +
                       "/b --match name: 1 pairs, 1 unpaired files\n# unpaired: " + dir.path() +
                       "/a/only-a.json.gz: no file of that name in " + dir.path() +
                       "/b\nllama_8b\t" + dir.path() + "/a/llama 8b.json\t" + dir.path() +
                       "/b/llama 8b.json\n");
  r = RunCommand(Bin() + " pairs " + dir.path() + "/nosuch " + dir.path() + "/b");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.rfind("tracefuse: error: " + dir.path() + "/nosuch: ", 0), 0u) << r.err;
  r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b --match size");
  EXPECT_EQ(r.exit_code, 2);
}

// zstd traces are traces too: listed, read for their rank and labelled without their suffixes.
TEST(Pairs, ZstdTracesPairLikeOthers) {
  testing::TempDir dir;
  for (const char* side : {"a", "b"}) {
    std::filesystem::create_directories(dir.path() + "/" + side);
    dir.File(std::string(side) + "/worker_2.json", kBareTrace);
    ASSERT_EQ(RunCommand("zstd -q --rm " + dir.path() + "/" + side + "/worker_2.json").exit_code,
              0);
  }
  RunResult r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nrank2\t" + dir.path() + "/a/worker_2.json.zst\t" + dir.path() +
                       "/b/worker_2.json.zst\n"),
            std::string::npos)
      << r.out;
  r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b --match name");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nworker_2\t"), std::string::npos) << r.out;
}

// The vendors' databases are traces too, by their names and content (docs/formats.md): an
// Nsight Systems export pairs by the rank in its name; an SQLite file of another kind is no trace.
TEST(Pairs, VendorDatabasesPairAndOtherDatabasesAreNoTraces) {
  testing::TempDir dir;
  const std::string write =
      "python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).executescript(sys.argv[2])' ";
  for (const char* side : {"a", "b"}) {
    const std::string d = dir.path() + "/" + side;
    std::filesystem::create_directories(d);
    ASSERT_EQ(RunCommand(write + d +
                         "/report_rank3.sqlite 'CREATE TABLE StringIds (id, value); CREATE TABLE "
                         "CUPTI_ACTIVITY_KIND_KERNEL (start);'")
                  .exit_code,
              0);
    ASSERT_EQ(RunCommand(write + d + "/notes.db 'CREATE TABLE notes (text);'").exit_code, 0);
  }
  RunResult r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "label\ttrace1\ttrace2\n# tracefuse pairs " + dir.path() + "/a " + dir.path() +
                       "/b --match rank: 1 pairs, 0 unpaired files\nrank3\t" + dir.path() +
                       "/a/report_rank3.sqlite\t" + dir.path() + "/b/report_rank3.sqlite\n");
  r = RunCommand(Bin() + " pairs " + dir.path() + "/a " + dir.path() + "/b --match name");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nreport_rank3\t"), std::string::npos) << r.out;
}

TEST(Manifest, ErrorsNameTheFileAndLine) {
  testing::TempDir dir;
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"", ":1: empty manifest: no header line"},
      {"label,trace1,trace2\n",
       ":1: the first line must be the header 'label<TAB>trace1<TAB>trace2' (optionally "
       "'<TAB>options')"},
      {"label\ttrace1\ttrace2\na\tx.json\n",
       ":2: expected 3 tab-separated columns (label, trace1, trace2), found 2"},
      {"label\ttrace1\ttrace2\n# c\na b\tx.json\ty.json\n",
       ":3: bad label 'a b': use letters, digits, '.', '_' and '-' (it names output files)"},
      {"label\ttrace1\ttrace2\na\tx.json\ty.json\n\na\tz.json\tw.json\n",
       ":4: duplicate label 'a' (first on line 2)"},
  };
  for (const Case& c : cases) {
    std::string path = dir.File("m.tsv", c.text);
    absl::StatusOr<Manifest> m = ReadManifest(path);
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().message(), path + c.message);
  }
  EXPECT_EQ(ReadManifest(dir.path() + "/none.tsv").status().code(), absl::StatusCode::kNotFound);
}

TEST(Manifest, OptionsAndRelativePathsRoundTrip) {
  testing::TempDir dir;
  std::string text =
      "label\ttrace1\ttrace2\toptions\n# made by hand\nr0\ta/x.json\t/abs/y.json\t"
      "--ruleset wafer-kernel  --min-group-size 20\nr1\tx.json\ty.json\t\n";
  std::string path = dir.File("m.tsv", text);
  absl::StatusOr<Manifest> m = ReadManifest(path);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->rows.size(), 2u);
  EXPECT_EQ(m->rows[0].options,
            (std::vector<std::string>{"--ruleset", "wafer-kernel", "--min-group-size", "20"}));
  EXPECT_TRUE(m->rows[1].options.empty());
  EXPECT_EQ(ResolveTracePath(*m, m->rows[0].trace1), dir.path() + "/a/x.json");
  EXPECT_EQ(ResolveTracePath(*m, m->rows[0].trace2), "/abs/y.json");
  EXPECT_EQ(ManifestText(*m),
            "label\ttrace1\ttrace2\toptions\n# made by hand\nr0\ta/x.json\t/abs/y.json\t"
            "--ruleset wafer-kernel --min-group-size 20\nr1\tx.json\ty.json\t\n");
}

}  // namespace
}  // namespace tracefuse
