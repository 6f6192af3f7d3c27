// One thread's op time cut into pieces, each owned by one op, produced one
// at a time in time order: the energy attribution sweeps every thread's
// pieces together without holding them all (docs/PERFORMANCE.md, "At scale":
// the pieces and the sorted boundaries of both sides of a diff were its
// memory peak).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "magneton/trace.h"

namespace magneton::energy {

// [start_ns, end_ns) of one thread's time, owned by op (an index into trace.ops).
struct Piece {
  int64_t start_ns = 0, end_ns = 0;
  size_t op = 0;
};

// Ops by (start, longer first, index): parents before their children.
bool StartsFirst(const Trace& trace, size_t a, size_t b);

// A stack sweep over one thread's ops in StartsFirst order.
//  - kExclusive: an op owns the time between its start and its end that no
//    op nested in it covers. Also records each op's enclosing op (parent,
//    when given) for inclusive sums.
//  - kIssue: each top-level op's issue piece, from the end of the thread's
//    previous top-level op to its start (none before the thread's first op).
//    A recorder op (recorder_op) takes no issue time: the gap before it and
//    the one after it both go to the next real top-level op.
// Pieces of one kind never overlap and come in ascending time, clamped to
// [window_start_ns, window_end_ns]; those the window leaves empty are skipped.
class ThreadPieces {
 public:
  enum class Kind { kExclusive, kIssue };

  // ops_in_order: the thread's op indices in StartsFirst order; it, trace,
  // recorder_op and parent must outlive the sweep.
  ThreadPieces(const Trace& trace, std::span<const size_t> ops_in_order, const std::vector<bool>& recorder_op,
               Kind kind, int64_t window_start_ns, int64_t window_end_ns, std::vector<int64_t>* parent = nullptr);

  // The next piece; false once the thread has none left.
  bool Next(Piece* out);

 private:
  // Takes the next op (or, after the last, ends every open op) into ready_.
  void Step();
  // Ends the innermost open op: its time since the cursor is its own.
  void PopOpen();
  void Emit(int64_t start_ns, int64_t end_ns, size_t op);

  const Trace& trace_;
  std::span<const size_t> ops_;
  const std::vector<bool>& recorder_op_;
  Kind kind_;
  int64_t window_start_ns_, window_end_ns_;
  std::vector<int64_t>* parent_;
  size_t next_op_ = 0;
  bool done_ = false;
  std::vector<size_t> stack_;
  int64_t cursor_ns_ = 0;
  bool seen_top_level_ = false;
  std::vector<Piece> pending_gaps_;  // gaps before recorder ops, for the next real op
  std::vector<Piece> ready_;         // pieces made by the last Step, in time order
  size_t ready_head_ = 0;
};

}  // namespace magneton::energy
