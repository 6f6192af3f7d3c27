#include "record/env_reads.h"

#include <dlfcn.h>

#include <algorithm>

namespace magneton {

std::optional<EnvNamesRead> NativeEnvNamesRead() {
  // Looked up, never linked: the recorder must load without the interposer.
  using NamesFn = int (*)(const char**, int);
  using DroppedFn = unsigned (*)();
  auto names = reinterpret_cast<NamesFn>(dlsym(RTLD_DEFAULT, "magneton_getenv_names"));
  auto dropped = reinterpret_cast<DroppedFn>(dlsym(RTLD_DEFAULT, "magneton_getenv_dropped"));
  if (names == nullptr || dropped == nullptr) return std::nullopt;
  std::vector<const char*> buffer(256);
  int n = names(buffer.data(), static_cast<int>(buffer.size()));
  while (n > static_cast<int>(buffer.size())) {
    buffer.resize(static_cast<size_t>(n) * 2);
    n = names(buffer.data(), static_cast<int>(buffer.size()));
  }
  EnvNamesRead out;
  out.names.assign(buffer.begin(), buffer.begin() + n);
  std::sort(out.names.begin(), out.names.end());
  out.names.erase(std::unique(out.names.begin(), out.names.end()), out.names.end());
  out.dropped = dropped();
  return out;
}

}  // namespace magneton
