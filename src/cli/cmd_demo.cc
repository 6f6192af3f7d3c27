// magneton demo: the main job on an embedded default. Records two real
// configurations of a tiny random-init HF GPT-2 generate() — use_cache=False
// (A) and use_cache=True (B), same weights and prompt — diffs them, prints
// the findings and the saving, and writes the HTML and JSON reports. The diff
// re-runs both configurations once with the deviation-point function traced
// line by line (docs/DIFF.md), and the demo closes with that root cause.
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/record_child.h"
#include "cli/subprocess.h"
#include "magneton/energy_attribution.h"
#include "magneton/trace_reader.h"

namespace magneton::cli {
namespace {

// The line-level root cause from the diff's JSON report, as one line ("" if none).
std::string LineRootCause(const std::string& json_path) {
  std::ifstream in(json_path);
  nlohmann::json report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (report.is_discarded() || !report.contains("findings")) return "";
  for (const auto& f : report["findings"]) {
    const auto& d = f.value("diagnosis", nlohmann::json());
    if (!d.is_object() || !d.contains("line_diagnosis") || !d["line_diagnosis"].is_object()) continue;
    const auto& l = d["line_diagnosis"];
    if (!l.value("found", false)) return "";
    const auto& o = l["origin"];
    return fmt::format("Line-level root cause: `{}` (line {} of {}) {} because {} `{}` ({}:{}) is {} in A and {} "
                       "in B.",
                       l.value("branch_text", ""), l.value("branch_line", 0), l.value("function", ""),
                       l.value("mode", "") == "values" ? "gets different values" : "takes a different branch",
                       o.value("kind", ""), o.value("name", ""), o.value("file", ""), o.value("line", 0),
                       o.value("value_a", "?"), o.value("value_b", "?"));
  }
  return "";
}

struct RunEnergy {
  double total_uj = 0;
  std::string domain;
  Provenance provenance = Provenance::kEstimated;
  bool ok = false;
};

// The job's energy (first op to last op; interpreter start-up and imports
// excluded, as in the diff) in the trace's first domain, for the closing line.
RunEnergy TotalEnergy(const std::string& path) {
  RunEnergy out;
  auto trace = ReadTrace(path);
  if (!trace.ok() || trace->energy_samples.empty()) return out;
  out.domain = trace->energy_samples.front().domain;
  auto a = energy::AttributeEnergy(*trace, out.domain);
  if (!a.ok()) return out;
  out.total_uj = a->job_uj;
  out.provenance = a->provenance;
  out.ok = true;
  return out;
}

class DemoCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    auto* sub = app.add_subcommand(
        "demo", "Record GPT-2 generate() with use_cache=False and =True, diff them, and write the report");
    sub->add_option("-o,--output-dir", dir_, "Where to write traces and reports")->default_val("magneton-demo");
    sub->add_option("--new-tokens", new_tokens_, "Tokens to generate in each run")->default_val(24);
    return sub;
  }

  int Run() override {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return Fail("cannot create " + dir_ + ": " + ec.message());
    const std::filesystem::path dir(dir_);
    const std::string a = (dir / "use_cache_false.mtrace").string();
    const std::string b = (dir / "use_cache_true.mtrace").string();
    const std::string script = "magneton.examples.gpt2_generate";
    const std::vector<std::string> args = {"--layers", "2", "--prompt-tokens", "64", "--new-tokens",
                                           std::to_string(new_tokens_)};

    for (const auto& [path, label, no_cache] : {std::tuple{a, "use_cache=False", true},
                                                 std::tuple{b, "use_cache=True", false}}) {
      RecordRequest req;
      req.output = path;
      req.label = label;
      req.values = true;
      req.command = {FindPython(), "-m", script};
      req.command.insert(req.command.end(), args.begin(), args.end());
      if (no_cache) req.command.push_back("--no-cache");
      std::fprintf(stderr, "magneton demo: recording %s\n", ShellQuote(req.command).c_str());
      int code = RecordChild(req, /*verbose=*/true);
      if (code != 0) return code;
    }

    const std::string html = (dir / "report.html").string();
    const std::string json = (dir / "report.json").string();
    std::error_code self_ec;
    std::string self = std::filesystem::read_symlink("/proc/self/exe", self_ec).string();
    if (self_ec) self = "magneton";
    std::string error;
    int code = RunChild({self, "diff", a, b, "--html", html, "--json", json, "--min-share", "0.01"}, {}, &error);
    if (code < 0) return Fail(error);
    if (code != 0) return code;

    RunEnergy ea = TotalEnergy(a), eb = TotalEnergy(b);
    if (ea.ok && eb.ok && ea.provenance == eb.provenance && ea.total_uj > 0) {
      const char* prov = ea.provenance == Provenance::kMeasured ? "measured" : "estimated";
      std::printf(
          "\nFlipping use_cache to True (run B) changed the job's energy (first op to last op) from %.2f J to %.2f J "
          "(%s, %s): %.2f J saved, %.1f%% of run A, measured by running both configurations.\n",
          ea.total_uj / 1e6, eb.total_uj / 1e6, prov, ea.domain.c_str(), (ea.total_uj - eb.total_uj) / 1e6,
          100.0 * (ea.total_uj - eb.total_uj) / ea.total_uj);
    }
    if (const std::string cause = LineRootCause(json); !cause.empty()) std::printf("%s\n", cause.c_str());
    std::printf("reports: %s  %s\ntraces:  %s  %s\n", html.c_str(), json.c_str(), a.c_str(), b.c_str());
    return 0;
  }

 private:
  std::string dir_;
  int new_tokens_ = 24;
};

}  // namespace

std::unique_ptr<Command> MakeDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace magneton::cli
