#include "cli/text_file.h"

#include <filesystem>
#include <fstream>

namespace magneton::cli {

Status WriteTextFile(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("cannot write " + path);
  out << text;
  out.close();
  if (!out) return Internal("writing " + path + " failed");
  return Status::Ok();
}

}  // namespace magneton::cli
