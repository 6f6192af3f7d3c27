#include "trace/job_manifest.h"

#include <string.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace magneton {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr char kFormat[] = "magneton-job";
constexpr int kVersion = 1;
}  // namespace

std::string JobStem(const std::string& base_path) {
  fs::path p(base_path);
  if (p.extension() == ".mtrace" || p.extension() == ".mjob") p.replace_extension();
  return p.string();
}

std::string JobManifestPath(const std::string& base_path) { return JobStem(base_path) + ".mjob"; }

std::string RankTracePath(const std::string& base_path, int rank) {
  return JobStem(base_path) + ".rank" + std::to_string(rank) + ".mtrace";
}

std::optional<std::string> FindJobManifest(const std::string& arg) {
  std::error_code ec;
  if (fs::path(arg).extension() == ".mjob") return arg;
  // A plain trace that exists is a trace, even if a manifest of the same stem exists.
  if (fs::path(arg).extension() == ".mtrace" && fs::is_regular_file(arg, ec)) return std::nullopt;
  const std::string manifest = JobManifestPath(arg);
  if (fs::is_regular_file(manifest, ec)) return manifest;
  return std::nullopt;
}

std::string DescribeRankEnd(const RankEntry& r) {
  if (r.signal > 0) {
    const char* abbrev = sigabbrev_np(r.signal);
    return "killed by " + (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(r.signal));
  }
  if (!r.exit_code) return "exit status unknown";
  if (*r.exit_code == 0) return "exited normally";
  return "exit code " + std::to_string(*r.exit_code);
}

Status WriteJobManifest(const std::string& path, const JobManifest& m) {
  json ranks = json::array();
  for (const RankEntry& r : m.ranks) {
    json e = {{"rank", r.rank},   {"local_rank", r.local_rank}, {"trace", r.trace},       {"host", r.host},
              {"pid", r.pid},     {"backend", r.backend},       {"signal", r.signal},     {"ops", r.ops},
              {"trace_error", r.trace_error}, {"end", DescribeRankEnd(r)}};
    e["exit_code"] = r.exit_code ? json(*r.exit_code) : json(nullptr);
    ranks.push_back(std::move(e));
  }
  json doc = {{"format", kFormat},          {"version", kVersion},
              {"world_size", m.world_size}, {"backend", m.backend},
              {"command_line", m.command_line}, {"launcher_exit_code", m.launcher_exit_code},
              {"launcher_trace", m.launcher_trace}, {"ranks", std::move(ranks)}};
  std::ofstream out(path, std::ios::trunc);
  out << doc.dump(2) << "\n";
  out.close();
  if (!out) return Internal("cannot write the job manifest " + path + ": " + strerror(errno));
  return Status::Ok();
}

StatusOr<JobManifest> ReadJobManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open the job manifest " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  json doc = json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgument(path + " is not a job manifest (not JSON)");
  if (doc.value("format", "") != kFormat) return InvalidArgument(path + " is not a magneton job manifest");
  if (doc.value("version", 0) != kVersion) {
    return InvalidArgument(path + ": job manifest version " + std::to_string(doc.value("version", 0)) +
                           "; this magneton reads version " + std::to_string(kVersion));
  }
  JobManifest m;
  try {
    m.world_size = doc.value("world_size", 0);
    m.backend = doc.value("backend", "");
    m.command_line = doc.value("command_line", "");
    m.launcher_exit_code = doc.value("launcher_exit_code", 0);
    m.launcher_trace = doc.value("launcher_trace", "");
    for (const json& e : doc.at("ranks")) {
      RankEntry r;
      r.rank = e.at("rank").get<int>();
      r.local_rank = e.value("local_rank", -1);
      r.trace = e.at("trace").get<std::string>();
      r.host = e.value("host", "");
      r.pid = e.value("pid", int64_t{0});
      r.backend = e.value("backend", "");
      r.signal = e.value("signal", 0);
      r.ops = e.value("ops", size_t{0});
      r.trace_error = e.value("trace_error", "");
      if (e.contains("exit_code") && e["exit_code"].is_number_integer()) r.exit_code = e["exit_code"].get<int>();
      m.ranks.push_back(std::move(r));
    }
  } catch (const json::exception& e) {
    return InvalidArgument(path + ": malformed job manifest: " + e.what());
  }
  // A manifest is data from whoever sent it: the traces it lists are file
  // names beside it, never a path that reaches elsewhere (docs/SECURITY.md).
  auto plain_name = [](const std::string& name) {
    return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
  };
  if (!m.launcher_trace.empty() && !plain_name(m.launcher_trace)) {
    return InvalidArgument(path + ": its launcher trace '" + m.launcher_trace +
                           "' is not a file name in the manifest's folder");
  }
  for (const RankEntry& r : m.ranks) {
    if (!plain_name(r.trace)) {
      return InvalidArgument(path + ": rank " + std::to_string(r.rank) + "'s trace '" + r.trace +
                             "' is not a file name in the manifest's folder");
    }
  }
  return m;
}

std::string RankTracePathIn(const std::string& manifest_path, const RankEntry& rank) {
  return (fs::path(manifest_path).parent_path() / rank.trace).string();
}

}  // namespace magneton
