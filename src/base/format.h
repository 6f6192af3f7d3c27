// Spellings every output shares: provenance names and energy/duration text.
// Every energy figure a report prints carries its provenance.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "magneton/provenance.h"

namespace magneton {

// "measured" / "estimated": the trace file's and the JSON reports' spelling.
const char* ProvenanceName(Provenance provenance);
// "MEASURED" / "ESTIMATED": headings of terminal output.
const char* ProvenanceHeading(Provenance provenance);
// "1.23 mJ (estimated)".
std::string FormatEnergy(double energy_uj, Provenance provenance);
// "12.3 ms".
std::string FormatDuration(int64_t duration_ns);
// "512 B", "4.1 kB", "3.2 MB", "1.5 GB" (decimal units).
std::string FormatBytes(int64_t bytes);
// `text` if it has at most `max_chars` UTF-8 characters, else its first
// characters and `ellipsis`, max_chars in all. Never cuts inside a
// character: a byte cut through "→" made a report's stdout invalid UTF-8.
std::string ClipUtf8(std::string_view text, size_t max_chars, std::string_view ellipsis = "…");

}  // namespace magneton
