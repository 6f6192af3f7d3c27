// Status-returning core: errors are values here and become exceptions only at
// the Python edge (bindings) or an exit code at the CLI edge.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace magneton {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kPermissionDenied,
  kCorrupt,          // a file that exists but cannot be trusted
  kVersionMismatch,  // a trace written by an older or newer schema
  kUnavailable,      // hardware or library not present on this machine
  kFailedPrecondition,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status VersionMismatch(std::string m) { return {StatusCode::kVersionMismatch, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace magneton

#define MAGNETON_CONCAT_INNER(a, b) a##b
#define MAGNETON_CONCAT(a, b) MAGNETON_CONCAT_INNER(a, b)

#define MAGNETON_RETURN_IF_ERROR(expr)          \
  do {                                          \
    ::magneton::Status _st = (expr);            \
    if (!_st.ok()) return _st;                  \
  } while (0)

#define MAGNETON_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#define MAGNETON_ASSIGN_OR_RETURN(lhs, expr) \
  MAGNETON_ASSIGN_OR_RETURN_IMPL(MAGNETON_CONCAT(_status_or_, __LINE__), lhs, expr)
