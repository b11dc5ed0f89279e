// Helpers shared by the tests: locating ../shared, temporary files, running the binaries.
#ifndef TRACEFUSE_TESTS_TEST_UTIL_H_
#define TRACEFUSE_TESTS_TEST_UTIL_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tracefuse::testing {

inline std::string SharedDir() { return TRACEFUSE_SHARED_DIR; }

inline bool HaveShared() { return std::filesystem::is_directory(SharedDir() + "/golden"); }

// Skips the calling test, visibly, when ../shared is absent.
#define TRACEFUSE_REQUIRE_SHARED()                                                        \
  do {                                                                                    \
    if (!::tracefuse::testing::HaveShared()) {                                            \
      GTEST_SKIP() << "skipped: " << ::tracefuse::testing::SharedDir()                    \
                   << " (golden outputs and real traces) is not present on this machine"; \
    }                                                                                     \
  } while (0)

// ReadFile() is the whole content of `path` ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

inline std::vector<std::string> FilesIn(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string p = e.path().string();
    if (p.size() >= suffix.size() &&
        p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tracefuse-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command through /bin/sh, capturing stdout and stderr.
inline RunResult RunCommand(const std::string& command, const std::string& stdin_text = "") {
  TempDir dir;
  std::string in = dir.File("stdin", stdin_text);
  std::string cmd = command + " <" + in + " >" + dir.path() + "/out 2>" + dir.path() + "/err";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  r.out = slurp(dir.path() + "/out");
  r.err = slurp(dir.path() + "/err");
  return r;
}

}  // namespace tracefuse::testing

#endif  // TRACEFUSE_TESTS_TEST_UTIL_H_
