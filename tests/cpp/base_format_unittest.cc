// Text clipping for reports (base/format.h).
#include <gtest/gtest.h>

#include <string>

#include "base/format.h"

namespace magneton {
namespace {

// Valid UTF-8: every lead byte followed by as many continuation bytes as it says.
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(ClipUtf8, TextThatFitsIsUnchanged) {
  EXPECT_EQ(ClipUtf8("gen.py:8 → generate", 19), "gen.py:8 → generate");  // 19 characters, 21 bytes
  EXPECT_EQ(ClipUtf8("", 3), "");
}

TEST(ClipUtf8, NeverCutsInsideACharacter) {
  // Every cut point across the 3-byte arrow: a byte cut made a diff's stdout undecodable.
  const std::string name = "/tmp/pytest-of-root/gen.py:8 → GenerationMixin.generate";
  for (size_t width = 1; width < 60; ++width) {
    const std::string clipped = ClipUtf8(name, width, "~");
    EXPECT_TRUE(ValidUtf8(clipped)) << width;
    size_t chars = 0;
    for (unsigned char c : clipped) chars += (c & 0xC0) != 0x80;
    EXPECT_EQ(chars, std::min<size_t>(width, 55)) << width << ": " << clipped;
  }
  EXPECT_EQ(ClipUtf8("ab→cd", 4, "~"), "ab→~");
  EXPECT_EQ(ClipUtf8("ab→cd", 3, "…"), "ab…");
}

}  // namespace
}  // namespace magneton
