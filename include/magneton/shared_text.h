// Text a trace holds many times over, immutable and shared: an op's
// arguments. A file stores each distinct arguments text once, and a
// std::string per op (32 bytes, and a heap block past 15 characters) was
// 150 MB of a 2.4 M-op diff's two traces; the reader gives every op of the
// same text the same one (docs/PERFORMANCE.md, "At scale"). Reads as a
// const std::string; assigning replaces the whole, as for a string.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace magneton {

class SharedText {
 public:
  SharedText() = default;
  // Implicit, so that `op.args = text;` reads as for a string.
  SharedText(std::string text)  // NOLINT(google-explicit-constructor)
      : text_(text.empty() ? nullptr : std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT(google-explicit-constructor)

  const std::string& str() const { return text_ ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return str(); }    // NOLINT(google-explicit-constructor)

  bool empty() const { return text_ == nullptr; }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  size_t find(std::string_view what, size_t from = 0) const { return str().find(what, from); }

  friend bool operator==(const SharedText& a, const SharedText& b) { return a.text_ == b.text_ || a.str() == b.str(); }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }

 private:
  static const std::string& Empty() {
    static const std::string kEmpty;
    return kEmpty;
  }
  std::shared_ptr<const std::string> text_;  // null when empty
};

}  // namespace magneton
