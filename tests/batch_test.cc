// `tracefuse batch`: pairs of a manifest, their reports and status files, skipping, per-row
// options, task selection, SIGTERM; and the library's row options and task selection.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "gtest/gtest.h"
#include "test_util.h"
#include "tracefuse/batch/run.h"
#include "tracefuse/report/json.h"

namespace tracefuse {
namespace {

using testing::RunCommand;
using testing::RunResult;

// Commands run without the Slurm variables of the environment the tests run in.
std::string Batch(const std::string& args, const std::string& env = "") {
  return "env -u SLURM_ARRAY_TASK_ID -u SLURM_JOB_ID -u SLURM_ARRAY_JOB_ID " + env + " " +
         TRACEFUSE_BINARY + " batch " + args;
}

Json ReadJson(const std::string& path) { return Json::parse(testing::ReadFile(path)); }

constexpr char kTruncated[] = R"({"traceEvents": [{"cat": "kernel", "name": "a", "ts": 1)";

// Traces shared by the tests: amd.json, nvidia.json and a truncated one, bad.json.
class BatchCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    traces_ = new testing::TempDir();
    for (const char* p : {"amd", "nvidia"}) {
      ASSERT_EQ(RunCommand(std::string(TRACEFUSE_GEN) + " --platform " + p +
                           " --steps 30 --seed 1 -o " + traces_->path() + "/" + p + ".json")
                    .exit_code,
                0);
    }
    traces_->File("bad.json", kTruncated);
  }
  static void TearDownTestSuite() { delete traces_; }

  static std::string Trace(const std::string& name) { return traces_->path() + "/" + name; }

  // A manifest in the test's directory with absolute trace paths; `rows` are
  // "label<TAB>trace1<TAB>trace2[<TAB>options]" with trace names in the shared directory.
  std::string Manifest(const std::vector<std::vector<std::string>>& rows) {
    std::string text = "label\ttrace1\ttrace2\toptions\n";
    for (const auto& r : rows) {
      text +=
          r[0] + "\t" + Trace(r[1]) + "\t" + Trace(r[2]) + "\t" + (r.size() > 3 ? r[3] : "") + "\n";
    }
    return dir_.File("m.tsv", text);
  }
  std::string Out(const std::string& name = "") const { return dir_.path() + "/out/" + name; }
  std::string ThreePairs() {
    return Manifest({{"p0", "amd.json", "nvidia.json"},
                     {"p1", "bad.json", "nvidia.json"},
                     {"p2", "nvidia.json", "amd.json", "--label1 H100 --label2 MI300X"}});
  }

  static testing::TempDir* traces_;
  testing::TempDir dir_;
};
testing::TempDir* BatchCli::traces_ = nullptr;

// The compare JSON without the values that differ from run to run.
Json WithoutTimings(Json j) {
  j["tracefuse"].erase("timings_seconds");
  for (Json& trace : j["tracefuse"]["traces"]) trace.erase("cpu_seconds");
  return j;
}

TEST_F(BatchCli, AllRunsEveryPairAndItsReportsAreCompares) {
  const std::string manifest = ThreePairs();
  RunResult r = RunCommand(
      Batch(manifest + " --out " + Out() + " --all --threads 2 --format " + "markdown,text,csv"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("tracefuse: batch: p0: complete in "), std::string::npos) << r.err;
  const std::string error =
      Trace("bad.json") + ": truncated JSON: the input ends at byte 55 inside the events array";
  EXPECT_NE(r.err.find("tracefuse: batch: p1: failed (exit 1): " + error +
                       " (--lenient reads the events before the cut)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("tracefuse: batch: p2: complete in "), std::string::npos) << r.err;

  Json failed = ReadJson(Out("p1.status.json"));
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_EQ(failed["exit_code"], 1);
  EXPECT_EQ(failed["error"], error);
  EXPECT_EQ(failed["reports"], Json::array());
  EXPECT_EQ(failed["bytes_read"], 0);
  EXPECT_FALSE(std::filesystem::exists(Out("p1.json")));

  const std::pair<std::string, std::string> pairs[] = {
      {"p0", Trace("amd.json") + " " + Trace("nvidia.json")},
      {"p2", Trace("nvidia.json") + " " + Trace("amd.json") + " --label1 H100 --label2 MI300X"}};
  for (const auto& [label, args] : pairs) {
    Json status = ReadJson(Out(label + ".status.json"));
    EXPECT_EQ(status["state"], "complete") << label;
    EXPECT_EQ(status["exit_code"], 0) << label;
    EXPECT_TRUE(status["error"].is_null()) << label;
    EXPECT_EQ(status["reports"],
              Json::array({label + ".json", label + ".md", label + ".txt", label + ".csv"}));
    const std::string compare = std::string(TRACEFUSE_BINARY) + " compare --threads 2 " + args;
    RunResult json = RunCommand(compare + " --format json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    EXPECT_EQ(DumpJson(WithoutTimings(Json::parse(json.out))),
              DumpJson(WithoutTimings(ReadJson(Out(label + ".json")))))
        << label;
    for (const auto& [format, ext] :
         {std::pair<std::string, std::string>{"markdown", "md"}, {"text", "txt"}, {"csv", "csv"}}) {
      RunResult report = RunCommand(compare + " --format " + format);
      ASSERT_EQ(report.exit_code, 0) << report.err;
      EXPECT_EQ(report.out, testing::ReadFile(Out(label + "." + ext))) << label << " " << format;
    }
  }
}

TEST_F(BatchCli, TaskSelectsOneRowDefaultingToTheSlurmArrayTask) {
  const std::string manifest = ThreePairs();
  RunResult r = RunCommand(Batch(manifest + " --out " + Out() + " --task 0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::FilesIn(Out(), ".status.json"),
            std::vector<std::string>{Out("p0.status.json")});
  r = RunCommand(Batch(manifest + " --out " + Out() + " --task 1"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(testing::FilesIn(Out(), ".status.json").size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(Out("p2.status.json")));

  r = RunCommand(Batch(manifest + " --out " + Out(), "SLURM_ARRAY_TASK_ID=2"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json status = ReadJson(Out("p2.status.json"));
  EXPECT_EQ(status["task"], 2);
  EXPECT_EQ(status["slurm"]["array_task_id"], "2");
  // --task wins over the variable.
  std::filesystem::remove_all(Out());
  r = RunCommand(Batch(manifest + " --out " + Out() + " --task 0", "SLURM_ARRAY_TASK_ID=2"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(Out("p0.status.json")));
  EXPECT_FALSE(std::filesystem::exists(Out("p2.status.json")));
}

TEST_F(BatchCli, RowsPerTaskRunsAnArrayTasksRowsInOneProcess) {
  const std::string manifest = ThreePairs();
  // Task 0 of 2 rows each: p0 and the failing p1, in one process, in order.
  RunResult r = RunCommand(Batch(manifest + " --out " + Out() + " --task 0 --rows-per-task 2"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p0: complete in ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("\ntracefuse: batch: p1: failed (exit 1): "), std::string::npos) << r.err;
  EXPECT_EQ(testing::FilesIn(Out(), ".status.json"),
            (std::vector<std::string>{Out("p0.status.json"), Out("p1.status.json")}));
  Json p0 = ReadJson(Out("p0.status.json"));
  Json p1 = ReadJson(Out("p1.status.json"));
  EXPECT_EQ(p0["task"], 0);
  EXPECT_EQ(p1["task"], 1);
  EXPECT_TRUE(p0["pid"].is_number_integer());
  EXPECT_EQ(p0["pid"], p1["pid"]);

  // The last task takes what is left: task 1 of 2 rows each is p2 alone, here from Slurm's
  // variable, which the status records.
  r = RunCommand(
      Batch(manifest + " --out " + Out() + " --rows-per-task 2", "SLURM_ARRAY_TASK_ID=1"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p2: complete in ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("p0"), std::string::npos) << r.err;
  Json p2 = ReadJson(Out("p2.status.json"));
  EXPECT_EQ(p2["task"], 2);
  EXPECT_EQ(p2["slurm"]["array_task_id"], "1");
  EXPECT_NE(p2["pid"], p0["pid"]);

  // A range of rows, as sbatch --array writes one: p1 and p2; the complete p2 is skipped.
  r = RunCommand(Batch(manifest + " --out " + Out() + " --task 1-2"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p1: failed (exit 1): ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("\ntracefuse: batch: p2: complete, skipped (--force re-runs it)\n"),
            std::string::npos)
      << r.err;
  r = RunCommand(Batch(manifest + " --out " + Out() + " --task 2-2 --rows-per-task 1 --force"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p2: complete in ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("p1"), std::string::npos) << r.err;
}

TEST_F(BatchCli, UsageErrorsSayWhatIsMissing) {
  const std::string manifest = ThreePairs();
  const std::string out = " --out " + Out();
  struct Case {
    std::string args, env;
    int exit_code;
    std::string err;
  };
  const Case cases[] = {
      {manifest + out, "", 2,
       "no pair selected: give --task N or --all (or set SLURM_ARRAY_TASK_ID)"},
      {manifest + out + " --task 3", "", 2,
       "task 3 is out of range: " + manifest + " has 3 rows (tasks 0 to 2)"},
      {manifest + out, "SLURM_ARRAY_TASK_ID=7", 2,
       "task 7 (from SLURM_ARRAY_TASK_ID) is out of range: " + manifest +
           " has 3 rows (tasks 0 to 2)"},
      {manifest + out, "SLURM_ARRAY_TASK_ID=x", 2,
       "SLURM_ARRAY_TASK_ID='x' is not a task index (0, 1, ...)"},
      {manifest + out + " --task 0 --all", "", 2,
       "--all excludes --task (run 'tracefuse batch --help')"},
      {manifest + out + " --task 2 --rows-per-task 2", "", 2,
       "task 2 is out of range: " + manifest + " has 3 rows (tasks 0 to 1 at 2 rows per task)"},
      {manifest + out + " --rows-per-task 3", "SLURM_ARRAY_TASK_ID=1", 2,
       "task 1 (from SLURM_ARRAY_TASK_ID) is out of range: " + manifest +
           " has 3 rows (tasks 0 to 0 at 3 rows per task)"},
      {manifest + out + " --task 1-3", "", 2,
       "task 1-3 is out of range: " + manifest + " has 3 rows (tasks 0 to 2)"},
      {manifest + out + " --task 3-4", "", 2,
       "task 3-4 is out of range: " + manifest + " has 3 rows (tasks 0 to 2)"},
      {manifest + out + " --task 0-1 --rows-per-task 2", "", 2,
       "--task 0-1 is a range of rows: --rows-per-task 2 applies to an array task's index "
       "(--task N or SLURM_ARRAY_TASK_ID)"},
      {manifest + out + " --task 2-1", "", 2,
       "--task: '2-1' is not a task index N nor a range of rows FIRST-LAST (FIRST <= LAST) (run "
       "'tracefuse batch --help')"},
      {manifest + out + " --task -1", "", 2,
       "--task: '-1' is not a task index N nor a range of rows FIRST-LAST (FIRST <= LAST) (run "
       "'tracefuse batch --help')"},
      {manifest + out + " --task 1-", "", 2,
       "--task: '1-' is not a task index N nor a range of rows FIRST-LAST (FIRST <= LAST) (run "
       "'tracefuse batch --help')"},
      {manifest + out + " --task 0 --rows-per-task 0", "", 2,
       "--rows-per-task: '0' is not a positive integer (run 'tracefuse batch --help')"},
      {manifest + out + " --all --rows-per-task 2", "", 2,
       "--all excludes --rows-per-task (run 'tracefuse batch --help')"},
      {manifest + " --all", "", 2, "--out is required (run 'tracefuse batch --help')"},
      {manifest + out + " --all --format pdf", "", 2,
       "--format: pdf not in {text,json,csv,markdown,html} (run 'tracefuse batch --help')"},
      {dir_.path() + "/none.tsv" + out + " --all", "", 3,
       dir_.path() + "/none.tsv: cannot open manifest"},
      {dir_.File("bad.tsv", "label\ttrace1\n") + out + " --all", "", 2,
       dir_.path() + "/bad.tsv:1: the first line must be the header 'label<TAB>trace1<TAB>trace2' "
                     "(optionally '<TAB>options')"},
      {manifest + " --out " + manifest + " --all", "", 3,
       manifest + ": cannot make the output directory: Not a directory"},
  };
  for (const Case& c : cases) {
    RunResult r = RunCommand(Batch(c.args, c.env));
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args;
    EXPECT_EQ(r.err, "tracefuse: error: " + c.err + "\n") << c.args;
  }
  EXPECT_FALSE(std::filesystem::exists(Out()));
}

TEST_F(BatchCli, RerunSkipsCompletePairsAndForceRerunsThem) {
  const std::string manifest = Manifest({{"p0", "amd.json", "nvidia.json"}});
  const std::string run = Batch(manifest + " --out " + Out() + " --all --format csv");
  ASSERT_EQ(RunCommand(run).exit_code, 0);
  const auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (const char* f : {"p0.json", "p0.csv", "p0.status.json"}) {
    std::filesystem::last_write_time(Out(f), old_time);
  }
  RunResult r = RunCommand(run);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "tracefuse: batch: p0: complete, skipped (--force re-runs it)\n");
  for (const char* f : {"p0.json", "p0.csv", "p0.status.json"}) {
    EXPECT_EQ(std::filesystem::last_write_time(Out(f)), old_time) << f;
  }
  // A format not written yet makes the pair run again, as does --force.
  r = RunCommand(Batch(manifest + " --out " + Out() + " --all --format csv,markdown"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p0: complete in ", 0), 0u) << r.err;
  EXPECT_TRUE(std::filesystem::exists(Out("p0.md")));
  std::filesystem::last_write_time(Out("p0.json"), old_time);
  r = RunCommand(run + " --force");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("tracefuse: batch: p0: complete in ", 0), 0u) << r.err;
  EXPECT_NE(std::filesystem::last_write_time(Out("p0.json")), old_time);
  // A run removes the reports of an earlier one: the status lists what the directory holds.
  EXPECT_FALSE(std::filesystem::exists(Out("p0.md")));
  EXPECT_EQ(ReadJson(Out("p0.status.json"))["reports"], Json::array({"p0.json", "p0.csv"}));
}

TEST_F(BatchCli, RowOptionsOverrideTheCommandLine) {
  const std::string manifest =
      Manifest({{"default", "amd.json", "nvidia.json"},
                {"row", "amd.json", "nvidia.json", "--min-group-size 10 --ruleset=wafer-kernel"},
                {"bad", "amd.json", "nvidia.json", "--min-group-size 10 --threads 4"},
                {"zero", "amd.json", "nvidia.json", "--min-group-size 0"},
                {"novalue", "amd.json", "nvidia.json", "--label1"}});
  RunResult r = RunCommand(Batch(manifest + " --out " + Out() + " --all --min-group-size 20"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  Json j = ReadJson(Out("default.json"));
  EXPECT_EQ(j["tracefuse"]["min_group_size"], 20);
  EXPECT_EQ(j["tracefuse"]["rule_set"], "tracefuse");
  j = ReadJson(Out("row.json"));
  EXPECT_EQ(j["tracefuse"]["min_group_size"], 10);
  EXPECT_EQ(j["tracefuse"]["rule_set"], "wafer-kernel");
  const std::pair<const char*, std::string> errors[] = {
      {"bad",
       ":4: unsupported option '--threads' in the options column (supported: --ruleset, "
       "--min-group-size, --label1, --label2, --by-op)"},
      {"zero", ":5: --min-group-size: '0' is not a positive integer"},
      {"novalue", ":6: --label1 needs a value"}};
  for (const auto& [label, error] : errors) {
    Json status = ReadJson(Out(std::string(label) + ".status.json"));
    EXPECT_EQ(status["state"], "failed") << label;
    EXPECT_EQ(status["exit_code"], 2) << label;
    EXPECT_EQ(status["error"], manifest + error) << label;
    EXPECT_NE(r.err.find(std::string("tracefuse: batch: ") + label +
                         ": failed (exit 2): " + manifest + error + "\n"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(BatchCli, StatusFileSchema) {
  dir_.File("amd.json", testing::ReadFile(Trace("amd.json")));
  dir_.File("nvidia.json", testing::ReadFile(Trace("nvidia.json")));
  const std::string manifest =
      dir_.File("m.tsv", "label\ttrace1\ttrace2\n# comment\nx\tamd.json\tnvidia.json\n");
  RunResult r = RunCommand(Batch(manifest + " --out " + Out() + " --task 0", "SLURM_JOB_ID=77"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json s = ReadJson(Out("x.status.json"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : s.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "label", "state", "exit_code", "error", "trace1", "trace2", "manifest",
                      "task", "reports", "elapsed_seconds", "peak_rss_bytes", "bytes_read",
                      "gpu_timeline", "host", "pid", "slurm", "started_at", "tracefuse_version"}));
  EXPECT_EQ(s["label"], "x");
  EXPECT_EQ(s["state"], "complete");
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_TRUE(s["error"].is_null());
  EXPECT_EQ(s["trace1"], dir_.path() + "/amd.json");  // taken from the manifest's directory
  EXPECT_EQ(s["trace2"], dir_.path() + "/nvidia.json");
  EXPECT_EQ(s["manifest"], manifest);
  EXPECT_EQ(s["task"], 0);
  EXPECT_EQ(s["reports"], Json::array({"x.json"}));
  EXPECT_TRUE(s["elapsed_seconds"].is_number_float());
  EXPECT_GT(s["elapsed_seconds"].get<double>(), 0);
  EXPECT_TRUE(s["peak_rss_bytes"].is_number_unsigned());
  EXPECT_GT(s["peak_rss_bytes"].get<uint64_t>(), 1u << 20);
  EXPECT_EQ(s["bytes_read"], std::filesystem::file_size(Trace("amd.json")) +
                                 std::filesystem::file_size(Trace("nvidia.json")));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(s["host"], std::string(host));
  EXPECT_TRUE(s["pid"].is_number_integer());
  EXPECT_GT(s["pid"].get<int64_t>(), 0);
  EXPECT_NE(s["pid"].get<int64_t>(), getpid());  // batch's, not the test's
  EXPECT_EQ(s["slurm"],
            (Json{{"job_id", "77"}, {"array_job_id", nullptr}, {"array_task_id", nullptr}}));
  const std::string started = s["started_at"];
  EXPECT_EQ(started.size(), 20u) << started;  // 2025-01-31T12:34:56Z
  EXPECT_EQ(started[10], 'T');
  EXPECT_EQ(started.back(), 'Z');
  EXPECT_EQ(s["tracefuse_version"], TRACEFUSE_VERSION);
  // Each side's timeline as `stats` gives it (less each step's figures), and its collectives in
  // columns of one length.
  for (const auto& [side, trace] : {std::pair{"trace1", "amd.json"}, {"trace2", "nvidia.json"}}) {
    RunResult stats =
        RunCommand(std::string(TRACEFUSE_BINARY) + " stats --format json " + Trace(trace));
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    Json timeline = s["gpu_timeline"][side];
    Json collectives = timeline["collectives"];
    ASSERT_EQ(timeline.erase("collectives"), 1u);
    Json want = Json::parse(stats.out)["gpu_timeline"];
    for (Json& device : want["devices"]) ASSERT_EQ(device.erase("steps"), 1u);
    EXPECT_GT(want["steps"]["count"], 0);
    EXPECT_EQ(timeline, want) << side;
    EXPECT_EQ(collectives["device"].size(), collectives["name"].size());
    EXPECT_EQ(collectives["device"].size(), collectives["duration_us"].size());
  }
}

// Waits up to 10 s for a reader to open the FIFO; -1 when none does.
int OpenFifoForWriting(const std::string& path) {
  for (int i = 0; i < 1000; ++i) {
    int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// The interrupted pair's rows after it never start: those of `--all`, and those of an array task
// of several rows.
class BatchSigterm : public BatchCli,
                     public ::testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(BatchSigterm, StopsTheBatchAndRecordsTheInterruption) {
  const std::string fifo = dir_.path() + "/slow.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string manifest =
      dir_.File("m.tsv", "label\ttrace1\ttrace2\nslow\tslow.json\t" + Trace("nvidia.json") +
                             "\nnext\t" + Trace("amd.json") + "\t" + Trace("nvidia.json") + "\n");
  const std::string err = dir_.path() + "/err";
  const std::string out = Out();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    std::vector<std::string> args = {"tracefuse", "batch",     manifest, "--out",
                                     out,         "--threads", "2"};
    args.insert(args.end(), GetParam().begin(), GetParam().end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(TRACEFUSE_BINARY, argv.data());
    _exit(127);
  }
  int fd = OpenFifoForWriting(fifo);
  ASSERT_GE(fd, 0) << "batch never opened " << fifo;
  const std::string head = testing::ReadFile(Trace("amd.json")).substr(0, 20000);
  ASSERT_EQ(write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  // Once batch has read every byte written, it waits in read() for more.
  for (int unread = 1, i = 0; unread > 0 && i < 1000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(ioctl(fd, FIONREAD, &unread), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Json running = ReadJson(Out("slow.status.json"));
  EXPECT_EQ(running["state"], "running");
  EXPECT_TRUE(running["exit_code"].is_null());
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  close(fd);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 143);

  const std::string error = "interrupted by SIGTERM after 20000 bytes of " + fifo;
  Json status = ReadJson(Out("slow.status.json"));
  EXPECT_EQ(status["state"], "interrupted");
  EXPECT_EQ(status["exit_code"], 143);
  EXPECT_EQ(status["error"], error);
  EXPECT_EQ(testing::ReadFile(err),
            "tracefuse: batch: slow: interrupted (exit 143): " + error + "\n");
  // No report, no temporary, and the next pair never started.
  EXPECT_EQ(testing::FilesIn(Out(), ""), std::vector<std::string>{Out("slow.status.json")});
}

INSTANTIATE_TEST_SUITE_P(Selections, BatchSigterm,
                         ::testing::Values(std::vector<std::string>{"--all"},
                                           std::vector<std::string>{"--task", "0",
                                                                    "--rows-per-task", "2"}));

TEST(BatchLibrary, RowOptions) {
  Manifest m;
  m.path = "dir/m.tsv";
  ManifestRow row;
  row.line = 3;
  row.options = {"--label1=A", "--label2", "B", "--ruleset", "rules/my.yaml", "--min-group-size=7"};
  CompareOptions o;
  ASSERT_TRUE(ApplyRowOptions(m, row, &o).ok());
  EXPECT_EQ(o.label1, "A");
  EXPECT_EQ(o.label2, "B");
  EXPECT_EQ(o.ruleset, "dir/rules/my.yaml");  // rule files, like traces, from the manifest's dir
  EXPECT_EQ(o.min_group_size, 7u);
  row.options = {"--ruleset", "wafer-op", "--min-group-size", "12x"};
  absl::Status st = ApplyRowOptions(m, row, &o);
  EXPECT_EQ(o.ruleset, "wafer-op");
  EXPECT_EQ(st.message(), "dir/m.tsv:3: --min-group-size: '12x' is not a positive integer");
  row.options = {"-o", "x"};
  EXPECT_EQ(ApplyRowOptions(m, row, &o).message(),
            "dir/m.tsv:3: unsupported option '-o' in the options column (supported: --ruleset, "
            "--min-group-size, --label1, --label2, --by-op)");
  EXPECT_FALSE(o.by_op);
  row.options = {"--by-op"};
  ASSERT_TRUE(ApplyRowOptions(m, row, &o).ok());
  EXPECT_TRUE(o.by_op);
  row.options = {"--by-op=yes"};
  EXPECT_EQ(ApplyRowOptions(m, row, &o).message(), "dir/m.tsv:3: --by-op takes no value");
}

TEST(BatchLibrary, SelectTasks) {
  Manifest m;
  m.path = "m.tsv";
  m.rows.resize(2);
  unsetenv("SLURM_ARRAY_TASK_ID");
  auto select = [&](std::optional<TaskSpec> task, bool all = false, uint32_t rows_per_task = 1) {
    return SelectTasks(m, TaskSelection{all, task, rows_per_task});
  };
  const TaskSpec one{1, 1, false}, two{2, 2, false}, zero{0, 0, false};
  EXPECT_EQ(*select(std::nullopt, true), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(*select(one), (std::vector<size_t>{1}));
  EXPECT_EQ(select(two).status().message(),
            "task 2 is out of range: m.tsv has 2 rows (tasks 0 to 1)");
  EXPECT_TRUE(absl::IsInvalidArgument(select(std::nullopt).status()));
  setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  EXPECT_EQ(*select(std::nullopt), (std::vector<size_t>{1}));
  unsetenv("SLURM_ARRAY_TASK_ID");
  m.rows.clear();
  EXPECT_EQ(select(zero).status().message(), "task 0 is out of range: m.tsv has 0 rows");
  EXPECT_EQ(select(zero, false, 4).status().message(), "task 0 is out of range: m.tsv has 0 rows");
  EXPECT_TRUE(select(std::nullopt, true)->empty());
}

TEST(BatchLibrary, SelectTasksOfSeveralRows) {
  Manifest m;
  m.path = "m.tsv";
  m.rows.resize(7);
  unsetenv("SLURM_ARRAY_TASK_ID");
  auto select = [&](std::optional<TaskSpec> task, uint32_t rows_per_task) {
    return SelectTasks(m, TaskSelection{false, task, rows_per_task});
  };
  // 7 rows, 3 per task: tasks 0, 1 and 2 (the last one row).
  EXPECT_EQ(*select(TaskSpec{0, 0, false}, 3), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(*select(TaskSpec{1, 1, false}, 3), (std::vector<size_t>{3, 4, 5}));
  EXPECT_EQ(*select(TaskSpec{2, 2, false}, 3), (std::vector<size_t>{6}));
  EXPECT_EQ(select(TaskSpec{3, 3, false}, 3).status().message(),
            "task 3 is out of range: m.tsv has 7 rows (tasks 0 to 2 at 3 rows per task)");
  EXPECT_EQ(*select(TaskSpec{0, 0, false}, 100), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  EXPECT_EQ(*select(std::nullopt, 2), (std::vector<size_t>{6}));
  EXPECT_EQ(select(std::nullopt, 4).status().message(),
            "task 3 (from SLURM_ARRAY_TASK_ID) is out of range: m.tsv has 7 rows (tasks 0 to 1 at "
            "4 rows per task)");
  unsetenv("SLURM_ARRAY_TASK_ID");
  // A large index times a large count does not wrap around.
  EXPECT_TRUE(absl::IsInvalidArgument(
      select(TaskSpec{4000000000u, 4000000000u, false}, 4000000000u).status()));
  // Ranges of rows.
  EXPECT_EQ(*select(TaskSpec{2, 4, true}, 1), (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(*select(TaskSpec{6, 6, true}, 1), (std::vector<size_t>{6}));
  EXPECT_EQ(select(TaskSpec{5, 7, true}, 1).status().message(),
            "task 5-7 is out of range: m.tsv has 7 rows (tasks 0 to 6)");
  EXPECT_EQ(select(TaskSpec{2, 4, true}, 2).status().message(),
            "--task 2-4 is a range of rows: --rows-per-task 2 applies to an array task's index "
            "(--task N or SLURM_ARRAY_TASK_ID)");
}

TEST(BatchLibrary, ParseTaskSpec) {
  auto parsed = [](std::string_view text) -> std::string {
    std::optional<TaskSpec> t = ParseTaskSpec(text);
    if (!t) return "none";
    return std::to_string(t->first) + (t->range ? "-" + std::to_string(t->last) : "");
  };
  EXPECT_EQ(parsed("0"), "0");
  EXPECT_EQ(parsed("17"), "17");
  EXPECT_EQ(parsed("3-3"), "3-3");
  EXPECT_EQ(parsed("0-99"), "0-99");
  for (const char* bad : {"", "-", "-1", "1-", "-1-2", "2-1", "1-2-3", "1,2", " 1", "1 ", "+1", "x",
                          "1-x", "4294967296", "0-4294967296"}) {
    EXPECT_EQ(parsed(bad), "none") << bad;
  }
}

TEST(BatchLibrary, ClassifierCacheLoadsEachRuleSetOnce) {
  ClassifierCache cache;
  absl::StatusOr<std::shared_ptr<const Classifier>> a = cache.Get("tracefuse");
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::shared_ptr<const Classifier>> b = cache.Get("tracefuse");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->get(), b->get());
  absl::StatusOr<std::shared_ptr<const Classifier>> c = cache.Get("wafer-op");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ((*c)->rule_set().name(), "wafer-op");
  EXPECT_FALSE(cache.Get("/nonexistent/rules.yaml").ok());
  EXPECT_FALSE(cache.Get("/nonexistent/rules.yaml").ok());
}

}  // namespace
}  // namespace tracefuse
