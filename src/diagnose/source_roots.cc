// Which source files a report may read: only the recorded program's own
// Python files, never whatever path a trace's frames name.
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "diagnose/diagnose.h"

namespace magneton::diagnose {
namespace {

namespace fs = std::filesystem;

// A root that would let a trace name any file: `/`, or the home directory
// itself (~/.ssh, ~/.aws, dotfiles of every tool).
std::string TooWide(const fs::path& real) {
  if (real == real.root_path()) return "it is the file system's root";
  const char* home = std::getenv("HOME");
  std::error_code ec;
  if (home != nullptr && *home != '\0' && fs::canonical(home, ec) == real && !ec) return "it is the home directory";
  return "";
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// The recorded program's import paths: meta python.sys_path, a JSON list
// (relative entries, "" included, are relative to its working directory).
std::vector<std::string> ImportPaths(const Trace& trace) {
  std::vector<std::string> out;
  auto it = trace.meta.extra.find("python.sys_path");
  if (it == trace.meta.extra.end()) return out;
  const nlohmann::json paths = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!paths.is_array()) return out;
  for (const nlohmann::json& p : paths) {
    if (!p.is_string()) continue;
    const fs::path path(p.get<std::string>());
    if (path.is_absolute()) {
      out.push_back(path.string());
    } else if (!trace.meta.cwd.empty()) {
      out.push_back((fs::path(trace.meta.cwd) / path).string());
    }
  }
  return out;
}

}  // namespace

SourceRoots SourceRoots::Of(const Trace& trace) {
  SourceRoots roots;
  roots.AddFoldersOf(trace);
  return roots;
}

SourceRoots SourceRoots::Of(const Trace& a, const Trace& b) {
  SourceRoots roots;
  roots.AddFoldersOf(a);
  roots.AddFoldersOf(b);
  return roots;
}

void SourceRoots::AddFoldersOf(const Trace& trace) {
  if (!trace.meta.cwd.empty()) Add(trace.meta.cwd);
  for (const std::string& dir : ImportPaths(trace)) Add(dir);
}

void SourceRoots::Add(const std::string& dir) { (void)AddExplicit(dir); }

Status SourceRoots::AddExplicit(const std::string& dir) {
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (ec || !fs::is_directory(real, ec)) return InvalidArgument("source root " + dir + " is not a directory");
  if (std::string why = TooWide(real); !why.empty()) {
    return InvalidArgument("source root " + dir + " is too wide (" + why + "); name the project's folder");
  }
  const std::string text = real.string();
  for (const std::string& d : dirs_) {
    if (d == text) return Status::Ok();
  }
  dirs_.push_back(text);
  return Status::Ok();
}

std::vector<std::string> SourceRoots::files_read() const { return {read_->begin(), read_->end()}; }

StatusOr<std::string> SourceRoots::Check(const std::string& file) const {
  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  if (ec) return NotFound("cannot read " + file);
  // The resolved file decides: a link named x.py to /etc/shadow is not Python source.
  if (real.extension() != ".py" || !fs::is_regular_file(real, ec)) {
    return PermissionDenied(file + " is not a Python source file (.py); reports show no other files");
  }
  const std::string text = real.string();
  for (const std::string& dir : dirs_) {
    if (IsUnder(text, dir)) {
      read_->insert(text);
      return text;
    }
  }
  return PermissionDenied(file + " is outside the folders reports read source from (the current directory, "
                          "--source-root, and a verified trace's own working directory and import paths)");
}

}  // namespace magneton::diagnose
