// Case folders and their ground truth (cases/README.md).
#include <algorithm>
#include <filesystem>

#include "eval/eval.h"

namespace magneton::eval {
namespace {

std::string StringOr(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

StatusOr<Expected> ParseExpected(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("expected.json is not a JSON object");
  Expected e;
  e.id = StringOr(j, "id");
  e.category = StringOr(j, "category");
  if (e.id.empty()) return InvalidArgument("expected.json has no \"id\"");
  if (e.category != "M" && e.category != "A" && e.category != "R" && e.category != "control") {
    return InvalidArgument("expected.json of " + e.id + ": category must be M, A, R or control");
  }
  const std::string side = StringOr(j, "waste_side");
  if (side == "a" || side == "A") e.waste_side = 'A';
  if (side == "b" || side == "B") e.waste_side = 'B';
  if (!e.is_control() && !e.waste_side) return InvalidArgument("expected.json of " + e.id + ": waste_side must be a or b");
  if (auto r = j.find("region"); r != j.end() && r->is_object()) {
    if (auto ops = r->find("ops"); ops != r->end() && ops->is_array()) {
      for (const auto& op : *ops) {
        if (op.is_string()) e.region_ops.push_back(op.get<std::string>());
      }
    }
    e.scope_contains = StringOr(*r, "scope_contains");
    e.source_contains = StringOr(*r, "source_contains");
  }
  const std::string needs = "expected.json of " + e.id + ": root_cause needs \"kind\" (" +
                            diagnose::RootCauseKindList() + ") and \"name\" (docs/EVALUATION.md)";
  if (auto rc = j.find("root_cause"); rc != j.end() && rc->is_object()) {
    // A kind the report format does not know is an error even in a control:
    // it could never be scored right.
    if (rc->contains("kind") || !e.is_control()) {
      StatusOr<diagnose::RootCauseKind> kind = diagnose::ParseRootCauseKind(StringOr(*rc, "kind"));
      if (!kind.ok()) return InvalidArgument(needs + ": " + kind.status().message());
      e.root_cause_kind = *kind;
    }
    e.root_cause_name = StringOr(*rc, "name");
    e.root_cause_value_a = StringOr(*rc, "value_a");
    e.root_cause_value_b = StringOr(*rc, "value_b");
    e.root_cause_description = StringOr(*rc, "description");
    if (auto al = rc->find("aliases"); al != rc->end() && al->is_array()) {
      for (const auto& a : *al) {
        if (a.is_string()) e.root_cause_aliases.push_back(a.get<std::string>());
      }
    }
  }
  if (!e.is_control() && (e.root_cause_kind == diagnose::RootCauseKind::kNone || e.root_cause_name.empty())) {
    return InvalidArgument(needs);
  }
  e.fix = StringOr(j, "fix");
  if (auto g = j.find("needs_gpu"); g != j.end() && g->is_boolean()) e.needs_gpu = g->get<bool>();
  return e;
}

StatusOr<std::vector<CaseDir>> FindCases(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound(root + " is not a directory");
  std::vector<CaseDir> out;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    const fs::path p = entry.path();
    if (fs::exists(p / "a.py") && fs::exists(p / "b.py") && fs::exists(p / "expected.json")) {
      out.push_back({p.filename().string(), p.string()});
    }
  }
  if (ec) return Internal("listing " + root + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const CaseDir& x, const CaseDir& y) { return x.id < y.id; });
  return out;
}

const std::vector<std::string>& QuickCaseIds() {
  static const std::vector<std::string> kIds = {"hf-34570", "topk-sort", "identical", "pytorch-141822"};
  return kIds;
}

}  // namespace magneton::eval
