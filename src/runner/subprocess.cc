#include "runner/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace magneton::runner {
namespace {

std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    std::string key(kv.substr(0, eq));
    if (!extra.count(key)) env.emplace_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> CArgs(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int RunChild(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
             std::string* error, const std::string& cwd, const std::string& log_path) {
  std::vector<std::string> args = argv;
  std::vector<std::string> env = MergedEnv(extra_env);
  auto cargs = CArgs(args);
  auto cenv = CArgs(env);
  pid_t pid = 0;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // Opened by the child after the chdir: make a relative log path ours.
  std::error_code ec;
  const std::string log = log_path.empty() ? "" : std::filesystem::absolute(log_path, ec).string();
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  int rc = posix_spawnp(&pid, cargs[0], &actions, nullptr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (error) *error = "cannot start '" + argv[0] + "': " + std::strerror(rc);
    return -1;
  }
  // The child shares our terminal; let Ctrl-C reach it and end it, not us,
  // so that we can still report what was recorded.
  struct sigaction ignore{}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

namespace {

// Runs argv with its stdout (and stderr when merge_stderr) on a pipe read to
// the end into *output; returns the exit code (128 + signal if killed), or -1
// with *spawn_error set when it could not start.
int SpawnReading(const std::vector<std::string>& argv, bool merge_stderr, std::string* output, int* spawn_error) {
  int fds[2];
  if (pipe(fds) != 0) {
    *spawn_error = errno;
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (merge_stderr) posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<std::string> args = argv;
  auto cargs = CArgs(args);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *spawn_error = rc;
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) output->append(buf, n);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv) {
  std::string out;
  int spawn_error = 0;
  if (SpawnReading(argv, /*merge_stderr=*/false, &out, &spawn_error) != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

int RunCapture(const std::vector<std::string>& argv, std::string* output) {
  std::string out;
  int spawn_error = 0;
  const int code = SpawnReading(argv, /*merge_stderr=*/true, &out, &spawn_error);
  if (code < 0) out = "cannot start '" + argv[0] + "': " + std::strerror(spawn_error);
  if (output) *output = std::move(out);
  return code;
}

std::string FindPython() {
  if (const char* p = std::getenv("MAGNETON_PYTHON")) return p;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* name : {"python3", "python"}) {
      auto candidate = exe.parent_path() / name;
      if (std::filesystem::exists(candidate, ec)) return candidate.string();
    }
  }
  return "python3";
}

std::optional<std::string> FindBootstrapDir(const std::string& python, std::string* error) {
  if (const char* dir = std::getenv("MAGNETON_BOOTSTRAP_DIR")) return std::string(dir);
  // The probe runs in whatever directory the user is in (a downloaded
  // trace's folder, for `magneton replay`): `python -c` would put that folder
  // first on sys.path, where a magneton/ or argparse.py of someone else's
  // would run. Only PYTHONPATH (the user's own setting) and site-packages
  // may locate the package.
  auto out = CaptureOutput({python, "-c",
                            "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
                            "import os, magneton._bootstrap as b; print(os.path.dirname(b.__file__))"});
  if (!out || out->empty()) {
    if (error) {
      *error = "cannot import the magneton Python package with '" + python +
               "'; install it into that interpreter (pip install --no-build-isolation .)";
    }
    return std::nullopt;
  }
  return out;
}

}  // namespace magneton::runner
