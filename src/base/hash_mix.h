// The one mixing step every recorder hash table uses (interned frames, call
// paths and scopes, tensor keys, layouts). The tables compare full keys, so
// a collision costs a probe, never a wrong id; sharing the step keeps the
// parts' tables hashing alike after the split of the recorder.
#pragma once

#include <cstdint>

namespace magneton::record {

inline uint64_t Mix(uint64_t h, uint64_t v) {
  // 64-bit FNV-style mixing; collisions only cost a map probe.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

}  // namespace magneton::record
