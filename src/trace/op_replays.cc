#include "trace/op_replays.h"

#include <sqlite3.h>

#include <algorithm>

#include "base/format.h"
#include "trace/schema.h"
#include "trace/sqlite_util.h"

namespace magneton {

Status AppendOpReplays(const std::string& trace_path, const std::vector<OpReplay>& replays) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Db db,
                            sqlite::Open(trace_path, SQLITE_OPEN_READWRITE, "cannot store replay results in"));
  return sqlite::InTransaction(db.get(), [&]() -> Status {
    // A trace recorded before a column existed gets it (with its default).
    MAGNETON_ASSIGN_OR_RETURN(std::vector<std::string> present, sqlite::ColumnsOf(db.get(), "op_replays"));
    for (const schema::Column& c : schema::GetTable(schema::TableId::kOpReplays).columns) {
      if (!c.absent_default || std::find(present.begin(), present.end(), c.name) != present.end()) continue;
      MAGNETON_RETURN_IF_ERROR(
          sqlite::Exec(db.get(), (std::string("ALTER TABLE op_replays ADD COLUMN ") + c.name + " " + c.type).c_str()));
    }
    MAGNETON_ASSIGN_OR_RETURN(
        sqlite::Statement s,
        sqlite::Statement::Prepare(db.get(), schema::InsertSql(schema::TableId::kOpReplays).c_str()));
    for (const OpReplay& r : replays) {
      s.BindInt(1, r.op_id);
      s.BindText(2, r.signature);
      s.BindInt(3, r.occurrences);
      s.BindText(4, r.meter);
      s.BindText(5, r.meter.empty() ? "" : ProvenanceName(r.provenance));
      s.BindInt(6, r.calls_per_round);
      s.BindInt(7, r.rounds);
      s.BindDouble(8, r.duration_ns_mean);
      s.BindDouble(9, r.duration_ns_stddev);
      s.BindDouble(10, r.energy_uj_mean);
      s.BindDouble(11, r.energy_uj_stddev);
      s.BindText(12, r.error);
      s.BindText(13, r.device);
      s.BindText(14, r.method);
      s.BindDouble(15, r.online_energy_uj);
      MAGNETON_RETURN_IF_ERROR(s.Run(db.get()));
    }
    return Status::Ok();
  });
}

StatusOr<std::vector<OpReplay>> ReadOpReplays(const std::string& trace_path) {
  MAGNETON_ASSIGN_OR_RETURN(sqlite::Db db, sqlite::Open(trace_path, SQLITE_OPEN_READONLY, "opening"));
  MAGNETON_ASSIGN_OR_RETURN(std::vector<std::string> present, sqlite::ColumnsOf(db.get(), "op_replays"));
  MAGNETON_ASSIGN_OR_RETURN(
      sqlite::Statement s,
      sqlite::Statement::Prepare(
          db.get(), schema::SelectSql(schema::TableId::kOpReplays, " ORDER BY rowid", &present).c_str()));
  std::vector<OpReplay> out;
  while (true) {
    MAGNETON_ASSIGN_OR_RETURN(bool row, s.Step(db.get()));
    if (!row) break;
    OpReplay r;
    r.op_id = s.ColumnInt(0);
    r.signature = s.ColumnText(1);
    r.occurrences = s.ColumnInt(2);
    r.meter = s.ColumnText(3);
    const std::string provenance = s.ColumnText(4);
    if (!r.meter.empty() && provenance != "measured" && provenance != "estimated") {
      return Corrupt(trace_path + ": op replay with unknown provenance '" + provenance + "'");
    }
    r.provenance = provenance == "measured" ? Provenance::kMeasured : Provenance::kEstimated;
    r.calls_per_round = s.ColumnInt(5);
    r.rounds = s.ColumnInt(6);
    r.duration_ns_mean = s.ColumnDouble(7);
    r.duration_ns_stddev = s.ColumnDouble(8);
    r.energy_uj_mean = s.ColumnDouble(9);
    r.energy_uj_stddev = s.ColumnDouble(10);
    r.error = s.ColumnText(11);
    r.device = s.ColumnText(12);
    r.method = s.ColumnText(13);
    r.online_energy_uj = s.ColumnDouble(14);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace magneton
