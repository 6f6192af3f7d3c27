// One trace as columns, for the notebook API (magneton.open): its ops,
// tensors, per-op energy and config snapshot, each a table of named columns
// the Python edge hands over as lists (or pandas DataFrames) without looping
// over ops in Python.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <variant>
#include <vector>

#include "magneton/status.h"
#include "magneton/trace.h"

namespace magneton::report {

using ColumnValues = std::variant<std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
                                  std::vector<std::vector<int64_t>>>;

struct Column {
  std::string name;  // with its unit when it has one: start_ns, energy_uj
  ColumnValues values;
};

// Columns in a fixed order, all of the same length. A deque: a table is
// filled through references to its columns, which adding a column must not move.
using Table = std::deque<Column>;

// How a trace's per-op energy was attributed, next to its table.
struct EnergyInfo {
  std::string domain;      // "" when the trace has no energy samples
  std::string provenance;  // "measured" / "estimated"; "" without samples
  std::vector<std::string> domains;  // every domain the trace has
  double total_uj = 0;       // the sample window
  double attributed_uj = 0;  // to ops (exclusive energy)
  double unattributed_uj = 0;
  double job_uj = 0;  // first op start to last op end, less the recorder's own ops
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  std::string note;  // why the energy table is empty, when it is
};

struct TraceTables {
  // op_id, name, thread_id, start_ns, end_ns, duration_ns, self_ns,
  // parent_id (-1: top-level), scope (module scope path, "" outside any
  // module), user_frame (the innermost frame outside library code, the line a
  // developer changes; "" when every frame is library code), frame (the
  // innermost frame), inputs, outputs (tensor ids), args (JSON).
  Table ops;
  // tensor_id, shape, strides, dtype, device, storage_addr, storage_offset,
  // version, producer_op_id (-1: a model input, parameter or constant).
  Table tensors;
  // op_id, name, energy_uj (exclusive: nested ops excluded), inclusive_uj,
  // issue_uj, self_ns (exclusive time inside the sample window), domain,
  // provenance: one row per op of the trace, in op order.
  Table energy;
  // key, value, source.
  Table config;
  // One row per device activity (GPU kernel, copy, fill), in trace order:
  // op_id (the op that launched it, -1: none known), op_name, name, kind,
  // device, stream, start_ns, end_ns, duration_ns, energy_uj (its share of
  // its GPU domain's energy, docs/ENERGY.md "GPU attribution"; NaN when the
  // trace has no samples of that GPU), shared_ns (time another activity ran
  // beside it), domain, provenance.
  Table device_activities;
  EnergyInfo energy_info;
};

// `domain`: "" for the domain with the most energy in the trace (the one a
// diff of the trace with itself would use); a domain the trace lacks is an
// error naming the ones it has.
StatusOr<TraceTables> TraceAsTables(const Trace& trace, const std::string& domain);

}  // namespace magneton::report
