#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "magneton/trace.h"
#include "magneton/trace_writer.h"

namespace magneton::testing {

// A fresh path under a per-test temporary directory.
std::string TempPath(const std::string& name);

// A trace written straight through a TraceWriter, for tests of one part of
// the recorder (src/record/) without a Recorder: the part writes its rows to
// `writer`, and Close() reads back what reached the file.
struct TestTrace {
  std::string path;
  std::unique_ptr<TraceWriter> writer;
  // Closes the writer and reads the trace; a failure fails the test (and
  // returns an empty Trace).
  Trace Close();
};
// A fresh trace at TempPath(name); a writer that cannot start fails the test.
TestTrace NewTestTrace(const std::string& name);

// Records a small synthetic run (ops, tensors, frames, scopes, config) with
// the real Recorder and returns the trace path.
std::string WriteSampleTrace(const std::string& name, int n_ops = 50);

std::vector<char> ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::vector<char>& bytes);

// Runs SQL on a trace file (to damage or age it); a failure fails the test.
void ExecSql(const std::string& path, const char* sql);

// The encoded fingerprint rows of a trace by tensor id; a read error fails
// the test (and returns none).
std::map<int64_t, std::string> FingerprintRowsByTensor(const std::string& path);

// Rewrites a trace as schema version 2 stored it (ops and tensors as tables
// with every value inline, no dictionaries), to test that such files read.
void DowngradeToSchemaV2(const std::string& path);

}  // namespace magneton::testing
