// Scoring one diff result against the ground truth.
#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "eval/eval.h"

namespace magneton::eval {
namespace {

bool ValidOp(const Trace& t, int64_t id) { return id >= 0 && static_cast<size_t>(id) < t.ops.size(); }

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string NormalizeName(const std::string& name) {
  size_t cut = std::string::npos;
  for (const char* sep : {".", "::", "/"}) {
    const size_t at = name.rfind(sep);
    if (at != std::string::npos && (cut == std::string::npos || at + std::string(sep).size() > cut)) {
      cut = at + std::string(sep).size();
    }
  }
  std::string s = cut == std::string::npos ? name : name.substr(cut);
  size_t i = 0;
  while (i < s.size() && s[i] == '_') ++i;
  return Lower(s.substr(i));
}

std::vector<std::string> NameComponents(const std::string& name) {
  std::vector<std::string> parts;
  std::string cur;
  auto flush = [&] {
    size_t i = 0;
    while (i < cur.size() && cur[i] == '_') ++i;
    if (i < cur.size()) parts.push_back(Lower(cur.substr(i)));
    cur.clear();
  };
  for (char c : name) {
    if (c == '.' || c == ':' || c == '/') {
      flush();
    } else {
      cur += c;
    }
  }
  flush();
  // An ATen op is one op under its three spellings: aten::contiguous,
  // torch.contiguous, Tensor.contiguous.
  if (parts.size() >= 2 && (parts[0] == "aten" || parts[0] == "tensor")) parts[0] = "torch";
  return parts;
}

bool NamesAgree(const std::string& x, const std::string& y) {
  const std::vector<std::string> a = NameComponents(x), b = NameComponents(y);
  if (a.empty() || b.empty()) return false;
  const std::vector<std::string>& shorter = a.size() <= b.size() ? a : b;
  const std::vector<std::string>& longer = a.size() <= b.size() ? b : a;
  return std::equal(shorter.rbegin(), shorter.rend(), longer.rbegin());
}

namespace {

// The region part of the evidence for finding `top`.
void FillRegion(const Trace& a, const Trace& b, const detect::Finding& f, Evidence& ev) {
  ev.wasteful_side = f.wasteful_side;
  ev.kind = detect::RegionKindName(f.kind);
  ev.saving_uj = f.saving_uj;
  ev.share_of_total = f.share_of_total;

  const bool side_b = f.wasteful_side == 'B';
  const Trace& t = side_b ? b : a;
  std::unordered_set<int64_t> region;
  for (const detect::RegionInstance& inst : f.instances) {
    for (int64_t id : side_b ? inst.ops_b : inst.ops_a) {
      if (ValidOp(t, id)) region.insert(id);
    }
  }
  std::set<std::string> names(side_b ? f.names_b.begin() : f.names_a.begin(),
                              side_b ? f.names_b.end() : f.names_a.end());
  std::set<int64_t> scope_ids, path_ids;
  if (!region.empty()) {
    // The region's node ops stand for their subtrees: take nested ops too.
    std::unordered_map<int64_t, bool> inside;
    for (const OpEvent& op : t.ops) {
      bool in = false;
      int depth = 0;
      for (int64_t p = op.id; ValidOp(t, p) && depth < 256; p = t.ops[p].parent_id, ++depth) {
        if (region.count(p)) {
          in = true;
          break;
        }
        auto it = inside.find(p);
        if (it != inside.end()) {
          in = it->second;
          break;
        }
      }
      inside[op.id] = in;
      if (!in) continue;
      names.insert(t.str(op.name_id));
      if (op.scope_id != kNoId) scope_ids.insert(op.scope_id);
      if (region.count(op.id) && op.call_path_id != kNoId) path_ids.insert(op.call_path_id);
    }
  }
  ev.op_names.assign(names.begin(), names.end());
  for (int64_t s : scope_ids) ev.scopes.push_back(t.ScopePath(s));
  std::set<std::string> frames;
  for (int64_t p : path_ids) {
    for (std::string& fr : t.CallPathFrames(p)) frames.insert(std::move(fr));
  }
  ev.frames.assign(frames.begin(), frames.end());
}

}  // namespace

Evidence ExtractEvidence(const Trace& a, const Trace& b, const detect::DetectResult& result,
                         const std::vector<diagnose::Diagnosis>* diagnoses) {
  Evidence ev;
  size_t top = result.findings.size();
  for (size_t i = 0; i < result.findings.size(); ++i) {
    if (result.findings[i].verdict != detect::Verdict::kWaste) continue;
    ++ev.waste_findings;
    if (top == result.findings.size()) top = i;
  }
  ev.has_waste = ev.waste_findings > 0;
  if (!ev.has_waste) return ev;
  FillRegion(a, b, result.findings[top], ev);

  if (diagnoses) {
    for (const diagnose::Diagnosis& d : *diagnoses) {
      if (d.finding_index != top) continue;
      ev.has_diagnosis = true;
      ev.root_cause = d.root_cause;
      break;
    }
  }
  return ev;
}

bool RootCauseRight(const Expected& expected, const Evidence& evidence, std::string* why) {
  auto say = [&](const std::string& text) {
    if (why) *why = text;
  };
  if (expected.is_control()) return false;
  if (!evidence.has_waste) {
    say("no waste finding");
    return false;
  }
  // The cause of waste on the other side is not this case's cause, even when
  // its name normalises the same (torch.stft on B for jax.scipy.signal.stft on A).
  if (evidence.wasteful_side != expected.waste_side) {
    say(std::string("top waste finding on side ") + (evidence.wasteful_side ? evidence.wasteful_side : '-'));
    return false;
  }
  const diagnose::RootCause& got = evidence.root_cause;
  if (!got.found()) {
    say("no root cause");
    return false;
  }
  const std::string said = std::string(diagnose::RootCauseKindName(got.kind)) + " " + got.name;
  if (got.kind != expected.root_cause_kind) {
    say(said + ", expected kind " + diagnose::RootCauseKindName(expected.root_cause_kind));
    return false;
  }
  if (NameComponents(got.name).empty()) {
    say(said + ": no name");
    return false;
  }
  std::vector<std::string> wanted = {expected.root_cause_name};
  wanted.insert(wanted.end(), expected.root_cause_aliases.begin(), expected.root_cause_aliases.end());
  for (const std::string& w : wanted) {
    if (NamesAgree(w, got.name)) {
      say(said);
      return true;
    }
  }
  say(said + ", expected " + expected.root_cause_name);
  return false;
}

CaseScore ScoreDetection(const Expected& expected, const Evidence& ev) {
  CaseScore s;
  if (expected.is_control()) {
    s.false_positive = ev.has_waste;
    s.note = ev.has_waste ? std::to_string(ev.waste_findings) + " waste finding(s), top: " + ev.kind
                          : "no waste finding";
    return s;
  }
  if (!ev.has_waste) {
    s.note = "no waste finding";
    return s;
  }
  if (ev.wasteful_side != expected.waste_side) {
    s.note = std::string("top waste finding (") + ev.kind + ") on side " + (ev.wasteful_side ? ev.wasteful_side : '-') +
             ", expected " + expected.waste_side;
    return s;
  }
  for (const std::string& want : expected.region_ops) {
    if (std::find(ev.op_names.begin(), ev.op_names.end(), want) != ev.op_names.end()) {
      s.detected = true;
      s.note = "top waste finding (" + ev.kind + ") runs " + want;
      return s;
    }
  }
  if (!expected.scope_contains.empty()) {
    for (const std::string& sc : ev.scopes) {
      if (sc.find(expected.scope_contains) != std::string::npos) {
        s.detected = true;
        s.note = "top waste finding (" + ev.kind + ") in scope " + sc;
        return s;
      }
    }
  }
  if (!expected.source_contains.empty()) {
    for (const std::string& fr : ev.frames) {
      if (fr.find(expected.source_contains) != std::string::npos) {
        s.detected = true;
        s.note = "top waste finding (" + ev.kind + ") issued at " + fr;
        return s;
      }
    }
  }
  s.note = "top waste finding (" + ev.kind + ") is not the expected region";
  return s;
}

int ExpectedWasteRank(const Expected& expected, const Trace& a, const Trace& b, const detect::DetectResult& result) {
  if (expected.is_control()) return 0;
  int rank = 0;
  for (const detect::Finding& f : result.findings) {
    if (f.verdict != detect::Verdict::kWaste) continue;
    ++rank;
    Evidence ev;
    ev.has_waste = true;
    ev.waste_findings = 1;
    FillRegion(a, b, f, ev);
    if (ScoreDetection(expected, ev).detected) return rank;
  }
  return 0;
}

CaseScore ScoreCase(const Expected& expected, const Evidence& evidence) {
  CaseScore s = ScoreDetection(expected, evidence);
  if (expected.is_control()) return s;
  std::string why;
  s.root_cause_right = RootCauseRight(expected, evidence, &why);
  s.note += (s.root_cause_right ? "; root cause right: " : "; root cause wrong: ") + why;
  return s;
}

}  // namespace magneton::eval
