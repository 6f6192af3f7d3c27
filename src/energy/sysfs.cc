#include "energy/sysfs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace magneton::energy {

std::string SysfsRoot(const std::optional<std::string>& option) {
  if (option) return *option;
  const char* env = std::getenv("MAGNETON_SYSFS_ROOT");
  return env ? env : "";
}

StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    if (err == EACCES || err == EPERM) return PermissionDenied(msg);
    if (err == ENOENT) return NotFound(msg);
    return Unavailable(msg);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      std::string msg = path + ": " + std::strerror(err);
      // Reading a directory gives EISDIR; sysfs gives EACCES/EPERM/EIO.
      if (err == EACCES || err == EPERM) return PermissionDenied(msg);
      return Unavailable(msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

StatusOr<std::string> ReadWith(const ReadFileFn& read_file, const std::string& path) {
  return read_file ? read_file(path) : ReadSmallFile(path);
}

std::string Trim(const std::string& text) {
  size_t end = text.find('\n');
  std::string line = text.substr(0, end);
  size_t a = line.find_first_not_of(" \t\r");
  size_t b = line.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : line.substr(a, b - a + 1);
}

StatusOr<uint64_t> ParseUint(const std::string& text, const std::string& what) {
  std::string t = Trim(text);
  if (t.empty()) return Corrupt(what + ": empty");
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return Corrupt(what + ": not a number: '" + t + "'");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string VirtualMachineHint() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      if (line.find(" hypervisor") != std::string::npos)
        return " (this looks like a virtual machine: /proc/cpuinfo has the 'hypervisor' flag; "
               "hypervisors rarely pass energy counters through)";
      break;
    }
  }
  return "";
}

}  // namespace magneton::energy
