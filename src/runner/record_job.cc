#include "runner/record_job.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "magneton/trace_reader.h"

namespace magneton::runner {

namespace fs = std::filesystem;

namespace {

// A trace file and its SQLite companions (a killed rank leaves its WAL).
const char* const kCompanions[] = {"", "-wal", "-shm"};

void RemoveTrace(const fs::path& p) {
  std::error_code ec;
  for (const char* suffix : kCompanions) fs::remove(p.string() + suffix, ec);
}

Status RenameTrace(const fs::path& from, const fs::path& to) {
  RemoveTrace(to);
  for (const char* suffix : kCompanions) {
    std::error_code ec;
    if (!fs::exists(from.string() + suffix, ec)) continue;
    fs::rename(from.string() + suffix, to.string() + suffix, ec);
    if (ec) return Internal("cannot rename " + from.string() + suffix + ": " + ec.message());
  }
  return Status::Ok();
}

// Rank traces (<stem>.rank<N>.mtrace) and spawn-child traces (<stem>.pid<P>.mtrace) next to base_path.
std::vector<fs::path> JobTraces(const std::string& base_path, const char* kind) {
  const fs::path stem(JobStem(base_path));
  fs::path dir = stem.parent_path();
  if (dir.empty()) dir = ".";
  const std::regex name(std::regex_replace(stem.filename().string(), std::regex(R"([.^$|()\[\]{}*+?\\])"),
                                           R"(\$&)") +
                        "\\." + kind + "[0-9]+\\.mtrace");
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (std::regex_match(entry.path().filename().string(), name)) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

int MetaInt(const Trace& t, const char* key, int fallback) {
  auto it = t.meta.extra.find(key);
  if (it == t.meta.extra.end()) return fallback;
  try {
    return std::stoi(it->second);
  } catch (...) {
    return fallback;
  }
}

std::map<int64_t, int> ReadExits(const std::string& path) {
  std::map<int64_t, int> exits;
  std::ifstream in(path);
  if (!in) return exits;
  std::stringstream buf;
  buf << in.rdbuf();
  auto doc = nlohmann::json::parse(buf.str(), nullptr, false);
  if (!doc.is_object()) return exits;
  for (const auto& [pid, code] : doc.items()) {
    if (code.is_number_integer()) exits[std::stoll(pid)] = code.get<int>();
  }
  return exits;
}

}  // namespace

void RemoveOldJob(const std::string& base_path) {
  for (const char* kind : {"rank", "pid"}) {
    for (const fs::path& p : JobTraces(base_path, kind)) RemoveTrace(p);
  }
  std::error_code ec;
  fs::remove(JobManifestPath(base_path), ec);
  fs::remove(JobStem(base_path) + ".exits.json", ec);
}

StatusOr<std::optional<JobManifest>> CollectJob(const std::string& base_path, const std::string& command_line,
                                                int launcher_exit_code) {
  // Spawn children learnt their rank only from init_process_group: name their traces after it.
  for (const fs::path& p : JobTraces(base_path, "pid")) {
    auto trace = ReadTrace(p.string());
    const int rank = trace.ok() ? MetaInt(*trace, "dist.rank", -1) : -1;
    if (rank < 0) {
      RemoveTrace(p);  // a helper process (a data loader worker), not a rank
      continue;
    }
    MAGNETON_RETURN_IF_ERROR(RenameTrace(p, RankTracePath(base_path, rank)));
  }
  const std::string exits_path = JobStem(base_path) + ".exits.json";
  const std::map<int64_t, int> exits = ReadExits(exits_path);
  std::error_code ec;
  fs::remove(exits_path, ec);
  const std::vector<fs::path> traces = JobTraces(base_path, "rank");
  if (traces.empty()) return std::optional<JobManifest>();

  JobManifest m;
  m.command_line = command_line;
  m.launcher_exit_code = launcher_exit_code;
  for (const fs::path& p : traces) {
    RankEntry r;
    r.trace = p.filename().string();
    const std::string n = r.trace.substr(fs::path(JobStem(base_path)).filename().string().size() + 5);
    r.rank = std::stoi(n);  // the name matched <stem>.rank<digits>.mtrace
    auto trace = ReadTrace(p.string());
    if (trace.ok()) {
      r.local_rank = MetaInt(*trace, "dist.local_rank", -1);
      r.pid = MetaInt(*trace, "dist.pid", 0);
      r.host = trace->meta.host;
      auto backend = trace->meta.extra.find("dist.backend");
      if (backend != trace->meta.extra.end()) r.backend = backend->second;
      m.world_size = std::max(m.world_size, MetaInt(*trace, "dist.world_size", 0));
      r.ops = trace->ops.size();
    } else {
      r.trace_error = trace.status().message();
    }
    auto exit = exits.find(r.pid);
    if (r.pid != 0 && exit != exits.end()) {
      if (exit->second < 0) {
        r.signal = -exit->second;
      } else {
        r.exit_code = exit->second;
      }
    }
    if (m.backend.empty()) m.backend = r.backend;
    m.ranks.push_back(std::move(r));
  }
  std::sort(m.ranks.begin(), m.ranks.end(), [](const RankEntry& a, const RankEntry& b) { return a.rank < b.rank; });
  m.world_size = std::max<int>(m.world_size, static_cast<int>(m.ranks.size()));

  // The root's own trace: kept when the root itself ran ops (a script that
  // spawns its ranks may also compute), removed when it only launched.
  if (fs::exists(base_path, ec)) {
    auto root = ReadTrace(base_path);
    if (root.ok() && root->ops.empty()) {
      RemoveTrace(base_path);
    } else {
      m.launcher_trace = fs::path(base_path).filename().string();
    }
  }
  MAGNETON_RETURN_IF_ERROR(WriteJobManifest(JobManifestPath(base_path), m));
  return std::optional<JobManifest>(std::move(m));
}

}  // namespace magneton::runner
