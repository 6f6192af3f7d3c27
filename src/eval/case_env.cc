// Per-side library versions for a case (env.json): a cached virtual
// environment per requirement set, layered on the main environment so that
// torch and magneton come from there and only the listed packages differ.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/eval_env.h"

namespace magneton::eval {
namespace {

namespace fs = std::filesystem;

constexpr const char* kReadyMarker = ".magneton-env-ready";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

Status WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  out.close();
  return out ? Status::Ok() : Internal("cannot write " + p.string());
}

std::string Tail(const std::string& s, size_t n) { return s.size() > n ? "..." + s.substr(s.size() - n) : s; }

uint64_t Fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The interpreter's facts, printed one per line by the interpreter itself.
constexpr const char* kQueryScript =
    "import sys\n"
    "print(sys.version.split()[0])\n"
    "import torch\n"
    "print(torch.__version__.split('+')[0])\n"
    "for p in sys.path:\n"
    "    if p.endswith(('site-packages', 'dist-packages')):\n"
    "        print(p)\n";

}  // namespace

StatusOr<CaseEnv> ReadCaseEnv(const std::string& case_dir) {
  const fs::path p = fs::path(case_dir) / "env.json";
  CaseEnv env;
  std::error_code ec;
  if (!fs::exists(p, ec)) return env;
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(p.string() + " is not a JSON object");
  for (const char* side : {"a", "b"}) {
    auto it = j.find(side);
    if (it == j.end()) continue;
    if (!it->is_array()) return InvalidArgument(p.string() + ": \"" + side + "\" must be a list of requirements");
    for (const auto& r : *it) {
      if (!r.is_string() || r.get<std::string>().empty()) {
        return InvalidArgument(p.string() + ": \"" + side + "\" must hold non-empty strings");
      }
      // Never let a case swap torch under the recorder: torch comes from the main environment.
      std::string name = r.get<std::string>();
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      const bool is_torch =
          name.rfind("torch", 0) == 0 && (name.size() == 5 || std::string("=<>!~[ ;").find(name[5]) != std::string::npos);
      if (is_torch) {
        return InvalidArgument(p.string() + ": torch cannot be a per-side requirement (it is pinned to the main "
                                            "environment's version)");
      }
      (side[0] == 'a' ? env.a : env.b).push_back(r.get<std::string>());
    }
  }
  return env;
}

std::string DefaultEnvCacheRoot() {
  if (const char* p = std::getenv("MAGNETON_ENV_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "magneton" / "envs").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/tmp") / ".cache" / "magneton" / "envs").string();
}

StatusOr<BasePython> QueryBasePython(const std::string& python, const CommandRunner& run) {
  std::string out;
  const int code = run({python, "-c", kQueryScript}, &out);
  if (code != 0) {
    return FailedPrecondition("cannot query '" + python + "' for its Python and torch versions (exit " +
                              std::to_string(code) + "): " + Tail(out, 400));
  }
  std::vector<std::string> lines = Lines(out);
  if (lines.size() < 2) return Internal("unexpected answer from '" + python + "': " + Tail(out, 400));
  BasePython b;
  b.python = python;
  b.version = lines[0];
  b.torch_version = lines[1];
  b.site_packages.assign(lines.begin() + 2, lines.end());
  return b;
}

std::string EnvKey(const std::vector<std::string>& requirements, const BasePython& base) {
  std::vector<std::string> reqs = requirements;
  std::sort(reqs.begin(), reqs.end());
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(base.python, ec);
  std::string key = "python=" + (ec ? base.python : canonical.string()) + "\nversion=" + base.version +
                    "\ntorch=" + base.torch_version + "\n";
  for (const std::string& r : reqs) key += "req=" + r + "\n";
  return fmt::format("{:016x}", Fnv1a64(key));
}

StatusOr<std::string> EnsureCaseEnv(const std::vector<std::string>& requirements, const BasePython& base,
                                    const std::string& cache_root, const CommandRunner& run,
                                    const Progress& progress) {
  if (requirements.empty()) return base.python;
  const fs::path dir = fs::path(cache_root) / EnvKey(requirements, base);
  const fs::path python = dir / "bin" / "python";
  std::error_code ec;
  if (fs::exists(dir / kReadyMarker, ec) && fs::exists(python, ec)) return python.string();

  std::string reqs_text;
  for (const std::string& r : requirements) reqs_text += (reqs_text.empty() ? "" : " ") + r;
  progress("creating the environment " + dir.string() + " for " + reqs_text + " (once; reused afterwards)");
  fs::remove_all(dir, ec);  // a half-built one from an interrupted run
  fs::create_directories(dir.parent_path(), ec);
  std::string out;
  if (run({base.python, "-m", "venv", "--system-site-packages", dir.string()}, &out) != 0) {
    return Internal("python -m venv " + dir.string() + " failed: " + Tail(out, 600));
  }
  // A venv made from a venv's python is based on the base interpreter, so it
  // would not see the main environment's site-packages (magneton, torch):
  // name them in a .pth file, after the env's own site-packages, so the pinned
  // packages installed here win and everything else comes from the main one.
  if (run({python.string(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"}, &out) != 0) {
    return Internal("cannot find the site-packages of " + dir.string() + ": " + Tail(out, 400));
  }
  const std::vector<std::string> purelib = Lines(out);
  if (purelib.empty()) return Internal("cannot find the site-packages of " + dir.string());
  std::string pth;
  for (const std::string& p : base.site_packages) pth += p + "\n";
  if (Status st = WriteFile(fs::path(purelib.back()) / "_magneton_main_env.pth", pth); !st.ok()) return st;
  const fs::path constraints = dir / "constraints.txt";
  if (Status st = WriteFile(constraints, "torch==" + base.torch_version + "\n"); !st.ok()) return st;

  std::vector<std::string> pip = {python.string(), "-m", "pip", "install", "--disable-pip-version-check",
                                  "-c", constraints.string()};
  pip.insert(pip.end(), requirements.begin(), requirements.end());
  progress("pip install " + reqs_text + " (torch pinned to " + base.torch_version + ")");
  const int code = run(pip, &out);
  (void)WriteFile(dir / "install.log", out);
  if (code != 0) {
    return Internal("pip install " + reqs_text + " into " + dir.string() + " failed (exit " + std::to_string(code) +
                    "; log in " + (dir / "install.log").string() + "): " + Tail(out, 600));
  }
  // The environment must still run the recorder on the main torch.
  const std::string check = "import torch, magneton._bootstrap; assert torch.__version__.split('+')[0] == '" +
                            base.torch_version + "', torch.__version__";
  if (run({python.string(), "-c", check}, &out) != 0) {
    return Internal("the environment " + dir.string() + " cannot import torch " + base.torch_version +
                    " and magneton: " + Tail(out, 600));
  }
  std::string marker;
  for (const std::string& r : requirements) marker += r + "\n";
  if (Status st = WriteFile(dir / kReadyMarker, marker); !st.ok()) return st;
  return python.string();
}

}  // namespace magneton::eval
