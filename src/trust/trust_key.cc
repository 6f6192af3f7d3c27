#include "trust/trust_key.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace magneton::trust {
namespace {

constexpr size_t kKeyBytes = 32;

std::string Hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// mkdir -p with mode 0700 for the folders it creates (existing ones keep theirs).
Status MakePrivateDirs(const std::filesystem::path& dir) {
  if (dir.empty()) return Status::Ok();
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return Status::Ok();
  MAGNETON_RETURN_IF_ERROR(MakePrivateDirs(dir.parent_path()));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return PermissionDenied(fmt::format("cannot create {}: {}", dir.string(), std::strerror(errno)));
  }
  return Status::Ok();
}

Status WriteNewKey(const std::string& path) {
  std::string key(kKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return Internal("the system random generator gave no bytes for a trust key");
  }
  const std::string text = Hex(key) + "\n";
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // mode 0600, a fresh name
  if (fd < 0) return PermissionDenied(fmt::format("cannot create a file next to {}: {}", path, std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    return Internal(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  }
  // link() fails if the key appeared meanwhile: then that one is the key.
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && link_errno != EEXIST) {
    return PermissionDenied(fmt::format("cannot create {}: {}", path, std::strerror(link_errno)));
  }
  return Status::Ok();
}

}  // namespace

std::string DefaultKeyPath() {
  std::string base;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && xdg[0] == '/') {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    std::string home_dir = home && home[0] == '/' ? home : "";
    if (home_dir.empty()) {
      if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir && pw->pw_dir[0] == '/') home_dir = pw->pw_dir;
    }
    if (home_dir.empty()) return "";
    base = home_dir + "/.config";
  }
  return base + "/magneton/trust.key";
}

StatusOr<std::string> LoadKey(const std::string& path) {
  if (path.empty()) return NotFound("this user has no home directory, so no trust key");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no trust key at " + path);
    if (errno == ELOOP) return PermissionDenied("the trust key " + path + " is a symbolic link; it is not used");
    return PermissionDenied(fmt::format("cannot read the trust key {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  Status bad;
  if (::fstat(fd, &st) != 0) {
    bad = Internal(fmt::format("cannot stat the trust key {}: {}", path, std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    bad = PermissionDenied("the trust key " + path + " is not a regular file; it is not used");
  } else if (st.st_uid != ::geteuid()) {
    bad = PermissionDenied(fmt::format("the trust key {} belongs to uid {}, not to this user (uid {}); it is not used",
                                       path, st.st_uid, ::geteuid()));
  } else if ((st.st_mode & 077) != 0) {
    bad = PermissionDenied(fmt::format("the trust key {} can be read or written by others (mode {:04o}); it is not "
                                       "used: run `chmod 600 {}` if nobody else has seen it, else delete it",
                                       path, st.st_mode & 07777, path));
  }
  std::string text(256, '\0');
  ssize_t n = bad.ok() ? ::read(fd, text.data(), text.size()) : 0;
  ::close(fd);
  if (!bad.ok()) return bad;
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::string key;
  for (size_t i = 0; text.size() == 2 * kKeyBytes && i < text.size(); i += 2) {
    const int hi = HexDigit(text[i]), lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) break;
    key.push_back(static_cast<char>(hi * 16 + lo));
  }
  if (key.size() != kKeyBytes) {
    return Corrupt("the trust key " + path + " is not 64 hex digits; delete it and a new one is made (traces signed "
                   "with the old one are then no longer trusted)");
  }
  return key;
}

StatusOr<std::string> LoadOrCreateKey(const std::string& path) {
  auto key = LoadKey(path);
  if (key.ok() || key.status().code() != StatusCode::kNotFound || path.empty()) return key;
  MAGNETON_RETURN_IF_ERROR(MakePrivateDirs(std::filesystem::path(path).parent_path()));
  MAGNETON_RETURN_IF_ERROR(WriteNewKey(path));
  return LoadKey(path);
}

}  // namespace magneton::trust
