// Writing a report file from the CLI (creating its folder), with a Status.
#pragma once

#include <string>

#include "magneton/status.h"

namespace magneton::cli {

Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace magneton::cli
