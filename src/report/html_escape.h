// Escaping for the HTML report and its inline SVG: every string that comes
// from a trace (op names, file names, config values) is data from someone
// else's program and must never become markup.
#pragma once

#include <string>

namespace magneton::report {

// & < > " ' as character references; safe in element text and quoted attributes.
std::string HtmlEscape(const std::string& s);

}  // namespace magneton::report
