// Ops that carry no value the matcher can compare (internal to the match
// stage): `item` and `is_nonzero` return a Python scalar, `empty` and its
// `detach` hold allocator garbage and are never fingerprinted, a `.to()`
// that changes nothing hands back its input. Value matching cannot place
// them, so identical runs left them "unmatched on both sides" (padding's
// identical pair: 246 of 7 218 ops). Each such op left over joins the
// region its graph neighbour is in (else, with no edge to any region, the
// region of the next op in program order), paired with a like-named op of
// the other side that touches the same region the same way, k-th with k-th
// in op order. An op without such a twin stays unmatched.
#pragma once

#include <vector>

#include "fingerprint/fingerprint_map.h"
#include "graph/graph.h"
#include "match/match.h"

namespace magneton::match_internal {

// Adds the paired ops to `result->regions` (each region's nodes and ops stay
// in ascending order). Call before the unmatched lists are built.
void AttachValuelessOps(const DataflowGraph& a, const FingerprintMap& fa, const DataflowGraph& b,
                        const FingerprintMap& fb, MatchResult* result);

}  // namespace magneton::match_internal
