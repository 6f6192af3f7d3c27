#pragma once

#include <string>
#include <vector>

#include "magneton/trace.h"

namespace magneton::testing {

// A fresh path under a per-test temporary directory.
std::string TempPath(const std::string& name);

// Records a small synthetic run (ops, tensors, frames, scopes, config) with
// the real Recorder and returns the trace path.
std::string WriteSampleTrace(const std::string& name, int n_ops = 50);

std::vector<char> ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::vector<char>& bytes);

// Runs SQL on a trace file (to damage or age it); a failure fails the test.
void ExecSql(const std::string& path, const char* sql);

// Rewrites a trace as schema version 2 stored it (ops and tensors as tables
// with every value inline, no dictionaries), to test that such files read.
void DowngradeToSchemaV2(const std::string& path);

}  // namespace magneton::testing
