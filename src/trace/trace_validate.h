// The structural invariants of a Trace that every analysis stage relies on
// (docs/TRACE_FORMAT.md, "Structure"): ids in range and unique, each parent
// (op, scope, call path) an earlier row, so that no parent chain can loop,
// and every cross reference naming a row that exists. The reader checks them
// row by row as it loads a file and refuses it with the table, the row and
// what is wrong; whatever it accepts satisfies this (trace_reader_corrupt_
// unittest and fuzz/analysis_diff_fuzzer.cc check it). Analysis walks are
// bounded anyway, so a Trace built in memory that skips this cannot hang
// them either.
#pragma once

#include <cstdint>
#include <string>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton {

// Why `parent` cannot be the parent of row `id` of a tree stored
// parents-first (ops, scopes, call paths): "" when it can — none (kNoId) or an
// earlier row —, else "<column> <parent> names the row itself (a cycle)",
// "... names a later row ..." or "... is negative". The reader and
// ValidateTraceStructure say the same.
std::string ParentLinkProblem(int64_t parent, int64_t id, const char* column);

// Ok, or kCorrupt naming the first violation ("ops row id 7: parent id 7 is
// not below the op's id ..."). Linear in the trace's size, no allocation
// beyond the message.
Status ValidateTraceStructure(const Trace& t);

}  // namespace magneton
