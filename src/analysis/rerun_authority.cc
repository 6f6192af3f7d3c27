#include "analysis/rerun_authority.h"

#include "trace/redact.h"
#include "trace/rerun_plan.h"
#include "trust/trace_trust.h"

namespace magneton::analysis {

StatusOr<RunPlan> RerunnablePlan(const Trace& trace) {
  auto plan = StoredRunPlan(trace.meta);
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kNotFound) {
      return FailedPrecondition("it was recorded before re-run plans, so magneton never re-runs it");
    }
    return FailedPrecondition(plan.status().message() + ", so magneton never re-runs it");
  }
  if (PlanHoldsRedaction(*plan)) {
    return FailedPrecondition("its command holds a redacted part (" + std::string(kRedacted) +
                              "), so a re-run cannot reproduce the run and magneton never re-runs it");
  }
  return plan;
}

std::string RefuseUntrusted(const std::vector<std::pair<std::string, const Trace*>>& sides, const std::string& step,
                            const std::string& would_run, const RerunPolicy& policy, const Say& say) {
  std::string refused;
  bool any_unplanned = false;
  auto refuse = [&](const std::string& path, const std::string& why) {
    say("will not re-run the command recorded in " + path + " for " + step + ": " + why);
    if (!refused.empty()) refused += "; ";
    refused += path + ": " + why;
  };
  for (const auto& [path, trace] : sides) {
    if (auto plan = RerunnablePlan(*trace); !plan.ok()) {
      refuse(path, plan.status().message());  // --rerun does not change this
      any_unplanned = true;
      continue;
    }
    const trust::RerunAuthority auth = trust::VerifyRerunAuthority(*trace);
    if (auth.trusted) continue;
    if (policy.allow_foreign) {
      say("--rerun: running the command recorded in " + path + " although " + auth.reason);
      continue;
    }
    refuse(path, auth.reason);
  }
  if (refused.empty()) return "";
  say("it would run (run it yourself if you want " + step + ")\n" + would_run);
  if (any_unplanned) return "not re-run (" + refused + "); run the command yourself";
  say("pass --rerun to run it (only if you trust where the trace came from: its command line is code)");
  return "not re-run, a trace is not trusted (" + refused + "); --rerun runs it";
}

StatusOr<RunPlan> PlanToRerun(const Trace& trace, const RerunPolicy& policy) {
  MAGNETON_ASSIGN_OR_RETURN(RunPlan plan, RerunnablePlan(trace));
  if (!policy.allow_foreign) {
    const trust::RerunAuthority auth = trust::VerifyRerunAuthority(trace);
    if (!auth.trusted) return PermissionDenied(auth.reason);
  }
  return plan;
}

std::string WouldRun(const std::vector<std::pair<std::string, const Trace*>>& sides) {
  std::string out;
  for (const auto& [path, t] : sides) {
    if (!out.empty()) out += "\n";
    auto plan = StoredRunPlan(t->meta);
    out += "  for " + path + ":\n    " + (plan.ok() ? DescribeRunPlan(*plan) : t->meta.command_line);
  }
  return out;
}

}  // namespace magneton::analysis
