// libmagneton_getenv.so: `magneton record` preloads it (LD_PRELOAD) so that
// every getenv() a native library makes (OpenMP's OMP_NUM_THREADS, oneDNN's
// ONEDNN_*, cuBLAS's CUBLAS_WORKSPACE_CONFIG, ...) is noted by name; the
// recorder reads the names back (record/env_reads.h) and stores each with
// its value in the trace's config, through the writer's redaction. Names
// only: values are read from the environment when a snapshot is taken.
//
// It has no dependencies and allocates nothing: it may be called before
// main, from any thread, inside malloc or the dynamic loader. getenv itself
// is reimplemented as a scan of `environ` (what glibc's does) rather than
// forwarded through dlsym(RTLD_NEXT), which can itself call getenv.
#include <atomic>
#include <cstdint>
#include <cstring>

extern "C" char** environ;

namespace {

constexpr size_t kSlots = 4096;  // distinct names; a process reads a few hundred
constexpr size_t kNameMax = 128;

enum : uint32_t { kEmpty = 0, kWriting = 1, kReady = 2 };

struct Slot {
  std::atomic<uint32_t> state;
  char name[kNameMax];
};

// Zero-initialised statics: usable before any constructor has run.
Slot g_slots[kSlots];
std::atomic<uint32_t> g_dropped;  // names not noted: too long, or the table full

uint64_t Hash(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ULL;
  return h;
}

void Note(const char* name, size_t n) {
  if (n == 0 || n >= kNameMax) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t h = Hash(name, n);
  for (size_t probe = 0; probe < kSlots; ++probe) {
    Slot& s = g_slots[(h + probe) % kSlots];
    uint32_t state = s.state.load(std::memory_order_acquire);
    if (state == kEmpty) {
      uint32_t expected = kEmpty;
      if (s.state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
        std::memcpy(s.name, name, n);
        s.name[n] = '\0';
        s.state.store(kReady, std::memory_order_release);
        return;
      }
      state = expected;
    }
    // Another thread is writing this slot: it may be the same name, noted
    // twice at worst (the reader deduplicates).
    if (state == kWriting) continue;
    if (std::strncmp(s.name, name, n) == 0 && s.name[n] == '\0') return;
  }
  g_dropped.fetch_add(1, std::memory_order_relaxed);
}

// The loader has read LD_PRELOAD by now: this process keeps the interposer,
// but the entry leaves the environment so nothing this process starts — a
// shell, a compiler, `env` — inherits it (issue 33: it reaches Python
// processes only; a Python child that records gets it back through the
// bootstrap's re-exec, python/magneton/_bootstrap/sitecustomize.py). Edits
// `environ` in place: no allocation, before any other thread exists.
bool EndsWithLibName(const char* begin, const char* end) {
  static constexpr char kName[] = "libmagneton_getenv.so";
  const size_t n = sizeof(kName) - 1;
  return static_cast<size_t>(end - begin) >= n && std::memcmp(end - n, kName, n) == 0;
}

__attribute__((constructor)) void DropSelfFromPreload() {
  static constexpr char kKey[] = "LD_PRELOAD=";
  const size_t key_len = sizeof(kKey) - 1;
  if (environ == nullptr) return;
  for (size_t i = 0; environ[i] != nullptr;) {
    char* const entry = environ[i];
    if (std::strncmp(entry, kKey, key_len) != 0) {
      ++i;
      continue;
    }
    // Rewrites the value without our entries: entries are separated by ':' or spaces.
    char* const value = entry + key_len;
    char* out = value;
    for (char* p = value; *p != '\0';) {
      char* q = p;
      while (*q != '\0' && *q != ':' && *q != ' ') ++q;
      const bool last = *q == '\0';
      if (q > p && !EndsWithLibName(p, q)) {
        if (out != value) *out++ = ':';
        std::memmove(out, p, static_cast<size_t>(q - p));
        out += q - p;
      }
      p = last ? q : q + 1;
    }
    *out = '\0';
    if (out != value) {
      ++i;
      continue;
    }
    // Nothing else preloaded: the variable goes (the later entries move up one).
    for (size_t j = i; environ[j] != nullptr; ++j) environ[j] = environ[j + 1];
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) char* getenv(const char* name) {
  if (name == nullptr) return nullptr;
  const size_t n = std::strlen(name);
  Note(name, n);
  if (n == 0 || std::memchr(name, '=', n) != nullptr) return nullptr;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

// The names noted so far: up to `max` pointers into the table (stable for the
// process's life) in `out`; returns how many are noted in all.
__attribute__((visibility("default"))) int magneton_getenv_names(const char** out, int max) {
  int count = 0;
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != kReady) continue;
    if (count < max) out[count] = s.name;
    ++count;
  }
  return count;
}

__attribute__((visibility("default"))) unsigned magneton_getenv_dropped() {
  return g_dropped.load(std::memory_order_relaxed);
}

}  // extern "C"
