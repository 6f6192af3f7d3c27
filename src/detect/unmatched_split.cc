// Which unmatched ops are one side's extra work (docs/DIFF.md "Regions",
// unmatched): work one program does and the other does without, while every
// matched output still agrees, is redundant; unmatched ops on both sides that
// may compute the same thing two ways cannot be verified and stay pooled.
//
// An op is its side's own work when the other side's unmatched ops include
// no op of its name, or — for a kind this side runs more often — none of its
// name on inputs that may hold the same values (the same element count and
// dtype class, and equivalent fingerprints where both were fingerprinted; a
// buffer written without a recorded op has no fingerprint, and not knowing
// its value is never evidence of other work): the name alone lumps different work
// together (DDP's reducer reads each parameter's entry of its used-parameter
// map with select/item after every backward when find_unused_parameters=True;
// both programs' DDP constructors run a few select/item on the sizes they
// all-gather). A kind both sides run equally often stays judged by name: the
// same work on other values is not extra work. Work that reads a value only
// the side's own work made is own work too (the item of that select).
//
// Own work on both sides may be two ways to the same result (an API choice):
// the pool stays whole unless the two own parts provably start from other
// values — each reads tensors from outside itself, and no tensor one reads
// may hold a value the other reads. Failing that, only kinds one side alone
// runs split off, and only while the other side has no kind of its own. DDP with find_unused_parameters
// reads its used-parameter map every step; DDP without it rebuilds its
// buckets once, from the bucket indices: two pieces of extra work, one on
// each side, neither a way to do the other.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "detect/detect.h"

namespace magneton::detect {
namespace {

// How many candidates of one kind are compared before the answer is taken to
// be "the same work" (the conservative one: pooled).
constexpr size_t kCandidateLimit = 64;

struct Side {
  const Trace& trace;
  const FingerprintMap& fingerprints;
  const std::vector<int64_t>& ops;
  std::vector<std::string> names;
};

std::vector<int64_t> Links(const Trace& t, int64_t op, TensorRole role) {
  std::vector<int64_t> out;
  for (const OpTensor& l : t.LinksOf(op)) {
    if (l.role == role) out.push_back(l.tensor_id);
  }
  return out;
}

const StoredFingerprint* FingerprintOf(const FingerprintMap& fps, int64_t tensor_id) {
  auto it = fps.find(tensor_id);
  return it == fps.end() ? nullptr : &it->second;
}

// What equivalence needs to hold before any value is compared: the element
// count and the dtype class (fingerprint.h). "" when the tensor is unknown.
std::string KindOfValue(const Trace& t, int64_t tensor_id) {
  if (tensor_id < 0 || static_cast<size_t>(tensor_id) >= t.tensors.size()) return "";
  const TensorMeta& m = t.tensors[tensor_id];
  auto dtype = ParseDType(m.dtype);
  if (!dtype.ok()) return "";
  int64_t elements = 1;
  for (int64_t d : m.shape) elements *= d;
  return std::to_string(elements) + "/" + std::to_string(static_cast<int>(ClassOf(*dtype)));
}

// Whether two tensors may hold the same value: of one kind (KindOfValue),
// and equivalent where both were fingerprinted. A value without a
// fingerprint (a buffer the library wrote without a recorded op) is never
// evidence of other work; its kind still is.
bool MaybeSameValue(const Side& x, int64_t tx, const Side& y, int64_t ty, double epsilon) {
  const std::string kx = KindOfValue(x.trace, tx), ky = KindOfValue(y.trace, ty);
  if (!kx.empty() && !ky.empty() && kx != ky) return false;
  const StoredFingerprint* fx = FingerprintOf(x.fingerprints, tx);
  const StoredFingerprint* fy = FingerprintOf(y.fingerprints, ty);
  return !(fx && fy) || Equivalent(*fx, *fy, epsilon);
}

bool MaybeSameInputs(const Side& x, int64_t op_x, const Side& y, int64_t op_y, double epsilon) {
  const std::vector<int64_t> in_x = Links(x.trace, op_x, TensorRole::kInput);
  const std::vector<int64_t> in_y = Links(y.trace, op_y, TensorRole::kInput);
  if (in_x.size() != in_y.size()) return false;
  for (size_t s = 0; s < in_x.size(); ++s) {
    if (!MaybeSameValue(x, in_x[s], y, in_y[s], epsilon)) return false;
  }
  return true;
}

// The op's name and its inputs' kinds; "" when an input is unknown.
std::string Signature(const Side& s, size_t i) {
  std::string key = s.names[i];
  for (int64_t t : Links(s.trace, s.ops[i], TensorRole::kInput)) {
    const std::string kind = KindOfValue(s.trace, t);
    if (kind.empty()) return "";
    key += '\x1f' + kind;
  }
  return key;
}

// Which of `mine`'s ops are its own work (header comment).
std::vector<bool> OwnOps(const Side& mine, const Side& theirs, double epsilon) {
  std::unordered_map<std::string, size_t> theirs_count, mine_count;
  std::unordered_map<std::string, std::vector<size_t>> theirs_by_signature;
  for (size_t j = 0; j < theirs.ops.size(); ++j) {
    ++theirs_count[theirs.names[j]];
    const std::string sig = Signature(theirs, j);
    if (!sig.empty()) theirs_by_signature[sig].push_back(j);
  }
  for (const std::string& n : mine.names) ++mine_count[n];

  std::vector<bool> own(mine.ops.size(), false);
  std::unordered_set<int64_t> own_values;  // tensors written by own work
  for (size_t i = 0; i < mine.ops.size(); ++i) {
    const int64_t op = mine.ops[i];
    bool is_own = false;
    for (int64_t t : Links(mine.trace, op, TensorRole::kInput)) is_own = is_own || own_values.count(t) > 0;
    auto named = theirs_count.find(mine.names[i]);
    if (named == theirs_count.end()) is_own = true;
    const std::string sig = Signature(mine, i);
    if (!is_own && !sig.empty() && mine_count[mine.names[i]] > named->second) {
      // An unknown input (sig "") is never evidence: such ops stay judged by name.
      auto same_kind = theirs_by_signature.find(sig);
      bool counterpart = false;
      if (same_kind != theirs_by_signature.end()) {
        const std::vector<size_t>& cands = same_kind->second;
        counterpart = cands.size() > kCandidateLimit;
        for (size_t k = 0; k < cands.size() && !counterpart; ++k) {
          counterpart = MaybeSameInputs(mine, op, theirs, theirs.ops[cands[k]], epsilon);
        }
      }
      is_own = !counterpart;
    }
    if (!is_own) continue;
    own[i] = true;
    for (int64_t t : Links(mine.trace, op, TensorRole::kOutput)) own_values.insert(t);
  }
  return own;
}

// The ops whose name the other side's unmatched ops never have.
std::vector<bool> KindsOnlyMine(const Side& mine, const Side& theirs) {
  const std::unordered_set<std::string> names(theirs.names.begin(), theirs.names.end());
  std::vector<bool> own(mine.ops.size());
  for (size_t i = 0; i < mine.ops.size(); ++i) own[i] = names.count(mine.names[i]) == 0;
  return own;
}

// The tensors the own ops read from outside their own part.
std::vector<int64_t> ReadFromOutside(const Side& s, const std::vector<bool>& own) {
  std::unordered_set<int64_t> written, seen;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (!own[i]) continue;
    for (int64_t t : Links(s.trace, s.ops[i], TensorRole::kOutput)) written.insert(t);
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (!own[i]) continue;
    for (int64_t t : Links(s.trace, s.ops[i], TensorRole::kInput)) {
      if (!written.count(t) && seen.insert(t).second) out.push_back(t);
    }
  }
  return out;
}

// Whether the two own parts provably start from other values: each reads
// something from outside itself, and no value one reads may be a value the
// other reads.
bool StartFromOtherValues(const Side& a, const std::vector<bool>& own_a, const Side& b, const std::vector<bool>& own_b,
                          double epsilon) {
  const std::vector<int64_t> read_a = ReadFromOutside(a, own_a), read_b = ReadFromOutside(b, own_b);
  if (read_a.empty() || read_b.empty()) return false;
  std::unordered_map<std::string, std::vector<int64_t>> b_by_kind;
  for (int64_t t : read_b) {
    const std::string kind = KindOfValue(b.trace, t);
    if (kind.empty()) return false;
    b_by_kind[kind].push_back(t);
  }
  for (int64_t t : read_a) {
    const std::string kind = KindOfValue(a.trace, t);
    if (kind.empty()) return false;
    auto same_kind = b_by_kind.find(kind);
    if (same_kind == b_by_kind.end()) continue;
    if (same_kind->second.size() > kCandidateLimit) return false;
    for (int64_t u : same_kind->second) {
      if (MaybeSameValue(a, t, b, u, epsilon)) return false;
    }
  }
  return true;
}

}  // namespace

UnmatchedSplit SplitUnmatched(const Trace& a, const FingerprintMap& fa, const std::vector<int64_t>& ops_a,
                              const Trace& b, const FingerprintMap& fb, const std::vector<int64_t>& ops_b,
                              double epsilon) {
  UnmatchedSplit s;
  s.rest_a = ops_a;
  s.rest_b = ops_b;
  const Side side_a{a, fa, ops_a, NamesOf(a, ops_a)};
  const Side side_b{b, fb, ops_b, NamesOf(b, ops_b)};
  std::vector<bool> own_a = OwnOps(side_a, side_b, epsilon);
  std::vector<bool> own_b = OwnOps(side_b, side_a, epsilon);
  auto any = [](const std::vector<bool>& own) { return std::find(own.begin(), own.end(), true) != own.end(); };
  if (any(own_a) && any(own_b) && !StartFromOtherValues(side_a, own_a, side_b, own_b, epsilon)) {
    // Possibly two ways to one result: only kinds one side alone runs split
    // off, and only while the other side runs no kind of its own.
    own_a = KindsOnlyMine(side_a, side_b);
    own_b = KindsOnlyMine(side_b, side_a);
    if (any(own_a) && any(own_b)) return s;
  }
  const bool any_a = any(own_a), any_b = any(own_b);
  auto split = [](const std::vector<int64_t>& ops, const std::vector<bool>& own, std::vector<int64_t>* extra,
                  std::vector<int64_t>* rest) {
    rest->clear();
    for (size_t i = 0; i < ops.size(); ++i) (own[i] ? extra : rest)->push_back(ops[i]);
  };
  if (any_a) split(ops_a, own_a, &s.extra_a, &s.rest_a);
  if (any_b) split(ops_b, own_b, &s.extra_b, &s.rest_b);
  return s;
}

}  // namespace magneton::detect
