// Status and Result<T>: how errors cross module and network boundaries in dice.
//
// Exceptions stay inside a module; anything a caller must handle comes back as a Status (or a
// Result<T> holding either a value or a non-ok Status). Both are [[nodiscard]]: ignoring one is a
// compiler warning, and an error with DICE_WERROR=ON (as in CI).
//
// Every message names what and where: "configs/local.yaml:12:3: learner.lr: expected a number".
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace dice {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user: config, CLI flag, candidate code
  kNotFound,         // a named thing does not exist
  kCorruption,       // bytes that do not decode: truncated messages, damaged files
  kIOError,          // the operating system said no
  kUnavailable,      // a peer or resource is not there now; retrying may help
  kTimeout,          // a deadline passed
  kAborted,          // stopped on purpose (shutdown, cancel)
  kInternal,         // a bug in dice
};

// "ok", "invalid argument", ... for messages.
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  static Status invalid_argument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status io_error(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: configs/local.yaml:3:1: ..." (or "ok").
  std::string to_string() const;

  // Returns a copy whose message is "context: message"; ok stays ok.
  Status with_context(const std::string& context) const;

  // Marks a status as deliberately ignored (e.g. best-effort cleanup).
  void ignore() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the reason there is none. Access the value only after checking ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::internal("Result built from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace dice

#define DICE_STATUS_CONCAT_INNER(a, b) a##b
#define DICE_STATUS_CONCAT(a, b) DICE_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is not ok.
#define DICE_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    ::dice::Status dice_status_tmp_ = (expr);            \
    if (!dice_status_tmp_.ok()) return dice_status_tmp_; \
  } while (0)

// DICE_ASSIGN_OR_RETURN(auto x, make_x()): binds the value or returns the error.
#define DICE_ASSIGN_OR_RETURN(lhs, expr) \
  DICE_ASSIGN_OR_RETURN_IMPL(DICE_STATUS_CONCAT(dice_result_, __LINE__), lhs, expr)
#define DICE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
