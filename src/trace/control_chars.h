// A trace's text reaches terminals: an op name holding ESC ] 52 (set the
// clipboard), a cursor move that hides a line, or a title-setting sequence
// must print as data (docs/SECURITY.md). No recorder writes control
// characters, so the reader replaces them wherever text comes from a file.
#pragma once

#include <string>

#include "magneton/trace.h"

namespace magneton {

// `text` with every C0 control character but tab, DEL and every C1 control
// (U+0080..U+009F in UTF-8) replaced by '?'. Returns how many it replaced.
size_t NeutralizeControlCharacters(std::string* text);

// The same over a trace's meta (ReadTraceCounts reads no more).
size_t NeutralizeControlCharacters(RunMetadata* meta);

// The same over every text field of a trace read from a file; the count of
// replacements (the reader notes it in meta "reader.control_characters").
size_t NeutralizeControlCharacters(Trace* trace);

}  // namespace magneton
