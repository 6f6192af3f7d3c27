#include "trace/schema.h"

namespace magneton::schema {

const char* const kCreateTables = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE config(key TEXT PRIMARY KEY, value TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE frames(id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, line INTEGER NOT NULL,
                    function_id INTEGER NOT NULL);
CREATE TABLE call_paths(id INTEGER PRIMARY KEY, frame_id INTEGER NOT NULL, parent_id INTEGER);
CREATE TABLE scopes(id INTEGER PRIMARY KEY, name_id INTEGER NOT NULL, type_id INTEGER NOT NULL,
                    parent_id INTEGER);
CREATE TABLE ops(id INTEGER PRIMARY KEY, name_id INTEGER NOT NULL, thread_id INTEGER NOT NULL,
                 start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, parent_id INTEGER,
                 scope_id INTEGER, call_path_id INTEGER, correlation_id INTEGER NOT NULL,
                 args TEXT NOT NULL, inputs TEXT NOT NULL, outputs TEXT NOT NULL);
CREATE TABLE tensors(id INTEGER PRIMARY KEY, storage_addr INTEGER NOT NULL,
                     storage_offset INTEGER NOT NULL, shape TEXT NOT NULL, strides TEXT NOT NULL,
                     dtype TEXT NOT NULL, device TEXT NOT NULL, version INTEGER NOT NULL,
                     producer_op_id INTEGER);
CREATE TABLE device_activities(correlation_id INTEGER NOT NULL, device TEXT NOT NULL,
                               stream INTEGER NOT NULL, name_id INTEGER NOT NULL,
                               start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);
CREATE TABLE energy_samples(domain TEXT NOT NULL, t_ns INTEGER NOT NULL, energy_uj REAL,
                            power_mw REAL, provenance TEXT NOT NULL, meter TEXT NOT NULL);
CREATE TABLE op_replays(op_id INTEGER NOT NULL, signature TEXT NOT NULL, occurrences INTEGER NOT NULL,
                        meter TEXT NOT NULL, provenance TEXT NOT NULL, calls_per_round INTEGER NOT NULL,
                        rounds INTEGER NOT NULL, duration_ns_mean REAL, duration_ns_stddev REAL,
                        energy_uj_mean REAL, energy_uj_stddev REAL, error TEXT NOT NULL);
CREATE TABLE fingerprints(tensor_id INTEGER PRIMARY KEY, kind TEXT NOT NULL, data BLOB NOT NULL);
-- Op inputs/outputs are stored inline on each op (a row per link would
-- double the rows written while recording); this view gives them as rows.
CREATE VIEW op_tensors AS
  SELECT o.id AS op_id, 0 AS role, CAST(j.key AS INTEGER) AS slot, CAST(j.value AS INTEGER) AS tensor_id
    FROM ops o, json_each('[' || o.inputs || ']') j WHERE j.value >= 0
  UNION ALL
  SELECT o.id, 1, CAST(j.key AS INTEGER), CAST(j.value AS INTEGER)
    FROM ops o, json_each('[' || o.outputs || ']') j WHERE j.value >= 0;
)sql";

}  // namespace magneton::schema
