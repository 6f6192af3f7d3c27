#include "torch_hook/torch_names.h"

#include <array>

namespace magneton {
namespace {

// By enum value (c10/core/Layout.h, MemoryFormat.h); Python's names.
constexpr std::array<std::string_view, static_cast<size_t>(c10::Layout::NumOptions)> kLayouts = {
    "strided", "sparse_coo", "sparse_csr", "_mkldnn", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"};
static_assert(static_cast<int>(c10::Layout::Mkldnn) == 3 && static_cast<int>(c10::Layout::Jagged) == 7);
constexpr std::array<std::string_view, static_cast<size_t>(c10::MemoryFormat::NumOptions)> kMemoryFormats = {
    "contiguous_format", "preserve_format", "channels_last", "channels_last_3d"};
static_assert(static_cast<int>(c10::MemoryFormat::ChannelsLast3d) == 3);

}  // namespace

const std::string& DtypeName(c10::ScalarType t) {
  static const auto* names = [] {
    auto* arr = new std::array<std::string, static_cast<size_t>(c10::ScalarType::NumOptions)>();
    for (size_t i = 0; i < arr->size(); ++i) {
      auto st = static_cast<c10::ScalarType>(i);
      try {
        (*arr)[i] = c10::getDtypeNames(st).first;
      } catch (...) {
        (*arr)[i] = c10::toString(st);
      }
      if ((*arr)[i].empty()) (*arr)[i] = c10::toString(st);
    }
    return arr;
  }();
  size_t idx = static_cast<size_t>(t);
  static const std::string kUnknown = "unknown";
  return idx < names->size() ? (*names)[idx] : kUnknown;
}

std::string_view LayoutName(int64_t layout) {
  return layout >= 0 && layout < static_cast<int64_t>(kLayouts.size()) ? kLayouts[layout] : std::string_view();
}

std::string_view MemoryFormatName(int64_t memory_format) {
  return memory_format >= 0 && memory_format < static_cast<int64_t>(kMemoryFormats.size())
             ? kMemoryFormats[memory_format]
             : std::string_view();
}

StatusOr<c10::ScalarType> DtypeFromName(std::string_view name) {
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    auto st = static_cast<c10::ScalarType>(i);
    if (DtypeName(st) == name) return st;
  }
  return InvalidArgument("unknown dtype '" + std::string(name) + "'");
}

StatusOr<c10::Layout> LayoutFromName(std::string_view name) {
  for (size_t i = 0; i < kLayouts.size(); ++i) {
    if (kLayouts[i] == name) return static_cast<c10::Layout>(i);
  }
  return InvalidArgument("unknown layout '" + std::string(name) + "'");
}

StatusOr<c10::MemoryFormat> MemoryFormatFromName(std::string_view name) {
  for (size_t i = 0; i < kMemoryFormats.size(); ++i) {
    if (kMemoryFormats[i] == name) return static_cast<c10::MemoryFormat>(i);
  }
  return InvalidArgument("unknown memory format '" + std::string(name) + "'");
}

}  // namespace magneton
