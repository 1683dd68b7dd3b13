// Test helpers for files and the CLI: a temporary directory removed with its contents, and a
// run of the `headway` tool with its stdout and stderr captured.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace headway::test {

class TempDir {
 public:
  // A fresh directory /tmp/headway_<tag>_XXXXXX.
  explicit TempDir(const char* tag) {
    std::string tmpl = std::string("/tmp/headway_") + tag + "_XXXXXX";
    const char* d = mkdtemp(tmpl.data());
    REQUIRE(d != nullptr);
    path_ = d;
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct RunResult {
  int exit_code = -1;  // -1: ended by a signal
  std::string out, err;
};

// Runs `CLI ARGS` (ARGS starts with the subcommand) with stdout and stderr captured in `dir`;
// `env`: shell assignments put before the command ("A=1 B=2"), or empty.
inline RunResult run_cli(const char* cli, const TempDir& dir, const std::string& args, const std::string& env = "") {
  const std::string out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = env + " '" + cli + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace headway::test
