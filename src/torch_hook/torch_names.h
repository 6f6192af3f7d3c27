// Torch's spellings of dtypes, layouts and memory formats, as op arguments
// store them (docs/TRACE_FORMAT.md): the recorder writes them, replay reads
// them back. Python's names without "torch.": "float32", "strided",
// "channels_last".
#pragma once

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <string>
#include <string_view>

#include "magneton/status.h"

namespace magneton {

// "float32" etc. for every ScalarType, computed once; "unknown" out of range.
const std::string& DtypeName(c10::ScalarType t);
// "" for a value that names no layout / memory format.
std::string_view LayoutName(int64_t layout);
std::string_view MemoryFormatName(int64_t memory_format);

StatusOr<c10::ScalarType> DtypeFromName(std::string_view name);
StatusOr<c10::Layout> LayoutFromName(std::string_view name);
StatusOr<c10::MemoryFormat> MemoryFormatFromName(std::string_view name);

}  // namespace magneton
