#include "analysis/rerun_authority.h"

#include "trust/trace_trust.h"

namespace magneton::analysis {

std::string RefuseUntrusted(const std::vector<std::pair<std::string, const Trace*>>& sides, const std::string& step,
                            const std::string& would_run, const RerunPolicy& policy, const Say& say) {
  std::string refused;
  for (const auto& [path, trace] : sides) {
    const trust::RerunAuthority auth = trust::VerifyRerunAuthority(*trace);
    if (auth.trusted) continue;
    if (policy.allow_foreign) {
      say("--rerun: running the command recorded in " + path + " although " + auth.reason);
      continue;
    }
    say("will not re-run the command recorded in " + path + " for " + step + ": " + auth.reason);
    if (!refused.empty()) refused += "; ";
    refused += path + ": " + auth.reason;
  }
  if (refused.empty()) return "";
  say("it would run\n" + would_run);
  say("pass --rerun to run it (only if you trust where the trace came from: its command line is code)");
  return "not re-run, a trace is not trusted (" + refused + "); --rerun runs it";
}

bool MayRerun(const Trace& trace, const RerunPolicy& policy, std::string* why) {
  if (policy.allow_foreign) return true;
  const trust::RerunAuthority auth = trust::VerifyRerunAuthority(trace);
  if (!auth.trusted && why) *why = auth.reason;
  return auth.trusted;
}

std::string WouldRun(const std::vector<std::pair<std::string, const Trace*>>& sides) {
  std::string out;
  for (const auto& [path, t] : sides) {
    if (!out.empty()) out += "\n";
    out += "  for " + path + ", in " + t->meta.cwd + ", /bin/sh -c runs:\n    " + t->meta.command_line;
  }
  return out;
}

}  // namespace magneton::analysis
