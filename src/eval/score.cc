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

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `word` occurs in `text` with no identifier character on either side (case-insensitive).
bool HasWholeWord(const std::string& text, const std::string& word) {
  if (word.empty()) return false;
  const std::string t = Lower(text), w = Lower(word);
  for (size_t pos = t.find(w); pos != std::string::npos; pos = t.find(w, pos + 1)) {
    const bool left = pos == 0 || !IdentChar(t[pos - 1]);
    const bool right = pos + w.size() >= t.size() || !IdentChar(t[pos + w.size()]);
    if (left && right) return true;
  }
  return false;
}

// "model_config._attn_implementation" -> "attn_implementation".
std::string NormalizeKey(const std::string& key) {
  size_t cut = key.find_last_of("./:");
  std::string s = cut == std::string::npos ? key : key.substr(cut + 1);
  size_t i = 0;
  while (i < s.size() && s[i] == '_') ++i;
  return Lower(s.substr(i));
}

// Identifiers of an API root-cause description (see RootCauseNamed), and its
// plain words of 4+ letters ("permute", "contiguous", but also "around").
struct ApiTokenSet {
  std::vector<std::string> idents, words;
};

ApiTokenSet ApiTokens(const std::string& variable) {
  std::vector<std::string> tokens;  // maximal runs of identifier characters and '.'
  std::string cur;
  for (char c : variable + " ") {
    if (IdentChar(c) || c == '.') {
      cur += c;
    } else if (!cur.empty()) {
      while (!cur.empty() && cur.back() == '.') cur.pop_back();
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    }
  }
  std::vector<std::string> idents, words;
  for (const std::string& t : tokens) {
    if (t.find('.') != std::string::npos || t.find('_') != std::string::npos) {
      idents.push_back(NormalizeKey(t));
      // ATen names join the namespace path with '_': torch.linalg.eigvals is aten::linalg_eigvals.
      std::string joined;
      for (size_t end = t.size(), dot; end != std::string::npos && end > 0; end = dot) {
        dot = t.rfind('.', end - 1);
        const size_t begin = dot == std::string::npos ? 0 : dot + 1;
        joined = Lower(t.substr(begin, end - begin)) + (joined.empty() ? "" : "_" + joined);
        if (joined.find('_') != std::string::npos && joined != idents.back()) idents.push_back(joined);
        if (dot == std::string::npos) break;
      }
    } else if (t.size() >= 4 && std::all_of(t.begin(), t.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
      words.push_back(Lower(t));
    }
  }
  return {idents, words};
}

}  // namespace

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
      for (size_t i = 0; i < d.candidates.size() && i < kTopCandidates; ++i) {
        ev.candidates.push_back(d.candidates[i].config.key);
        ev.candidates.push_back(d.candidates[i].name);
      }
      std::string& text = ev.diagnosis_text;
      text = d.sentence;
      for (const auto* sites : {&d.sites_costly, &d.sites_efficient}) {
        for (const diagnose::SourceSite& s : *sites) {
          text += "\n" + s.user_frame + "\n" + s.library_frame;
          for (const std::string& n : s.op_names) text += "\n" + n;
        }
      }
      if (d.deviation.found) {
        text += "\n" + d.deviation.frame_a + "\n" + d.deviation.frame_b + "\n" + d.deviation.op_a + "\n" +
                d.deviation.op_b;
      }
      break;
    }
  }
  return ev;
}

bool RootCauseNamed(const Expected& expected, const Evidence& evidence, std::string* matched) {
  if (expected.is_control() || !evidence.has_waste) return false;
  const std::string& var = expected.root_cause_variable;
  if (var.empty()) return false;
  // The case's folder name in a path ("cases/padding/b.py") is not evidence.
  std::string text;
  const std::string folder = "/" + expected.id + "/";
  for (size_t from = 0; from < evidence.diagnosis_text.size();) {
    const size_t pos = expected.id.empty() ? std::string::npos : evidence.diagnosis_text.find(folder, from);
    if (pos == std::string::npos) {
      text.append(evidence.diagnosis_text, from, std::string::npos);
      break;
    }
    text.append(evidence.diagnosis_text, from, pos - from);
    text.push_back('/');
    from = pos + folder.size();
  }
  if (expected.root_cause_kind != "api") {
    const std::string want = NormalizeKey(var);
    for (const std::string& c : evidence.candidates) {
      if (NormalizeKey(c) == want) {
        if (matched) *matched = "top candidate " + c;
        return true;
      }
    }
    if (HasWholeWord(text, want)) {
      if (matched) *matched = "diagnosis names " + want;
      return true;
    }
    return false;
  }
  std::string ops;
  for (const std::string& n : evidence.op_names) ops += n + "\n";
  const ApiTokenSet tokens = ApiTokens(var);
  // With identifiers present, plain words name the API only as an op of the
  // region ("permute + contiguous around F.layer_norm" and a region whose
  // extra op is aten::contiguous): in free text "around" would match anything.
  const bool words_in_text = tokens.idents.empty();
  for (const std::vector<std::string>* list : {&tokens.idents, &tokens.words}) {
    for (const std::string& tok : *list) {
      if (HasWholeWord(ops, tok)) {
        if (matched) *matched = "op " + tok;
        return true;
      }
      if ((list == &tokens.idents || words_in_text) && HasWholeWord(text, tok)) {
        if (matched) *matched = "diagnosis names " + tok;
        return true;
      }
    }
  }
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
  std::string matched;
  s.root_cause_right = RootCauseNamed(expected, evidence, &matched);
  s.note += s.root_cause_right ? "; root cause: " + matched : "; root cause not named";
  return s;
}

}  // namespace magneton::eval
