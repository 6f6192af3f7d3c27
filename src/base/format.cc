#include "base/format.h"

#include <fmt/format.h>

namespace magneton {

const char* ProvenanceName(Provenance provenance) {
  return provenance == Provenance::kMeasured ? "measured" : "estimated";
}

const char* ProvenanceHeading(Provenance provenance) {
  return provenance == Provenance::kMeasured ? "MEASURED" : "ESTIMATED";
}

std::string FormatEnergy(double energy_uj, Provenance provenance) {
  const double abs_uj = energy_uj < 0 ? -energy_uj : energy_uj;
  std::string number = abs_uj >= 1e6   ? fmt::format("{:.3g} J", energy_uj / 1e6)
                       : abs_uj >= 1e3 ? fmt::format("{:.3g} mJ", energy_uj / 1e3)
                                       : fmt::format("{:.3g} µJ", energy_uj);
  return number + " (" + ProvenanceName(provenance) + ")";
}

std::string FormatDuration(int64_t duration_ns) {
  const double ns = static_cast<double>(duration_ns);
  if (ns >= 1e9) return fmt::format("{:.3g} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} µs", ns / 1e3);
  return fmt::format("{} ns", duration_ns);
}

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.3g} kB", b / 1e3);
  return fmt::format("{} B", bytes);
}

namespace {

// Code points in `text` (bytes that are not UTF-8 continuation bytes).
size_t CharCount(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string ClipUtf8(std::string_view text, size_t max_chars, std::string_view ellipsis) {
  if (CharCount(text) <= max_chars) return std::string(text);
  const size_t keep = max_chars > CharCount(ellipsis) ? max_chars - CharCount(ellipsis) : 0;
  size_t chars = 0, end = 0;
  for (; end < text.size(); ++end) {
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80 && chars++ == keep) break;
  }
  return std::string(text.substr(0, end)) + std::string(ellipsis);
}

}  // namespace magneton
