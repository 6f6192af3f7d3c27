// The one mixing step of the project's hash tables over ids and integers (the
// recorder's interned frames, call paths and scopes, tensor keys and layouts;
// the matcher's tensor index cells). The tables compare full keys, so a
// collision costs a probe, never a wrong id.
#pragma once

#include <cstdint>

namespace magneton {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  // 64-bit FNV-style mixing; collisions only cost a map probe.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace magneton
