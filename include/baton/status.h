// baton::Status -- the result of every host call. A code plus a message that names the
// op, the argument and its value ("build_decode_metadata: page_size 48 is not a power of two
// in [1, 256]"). Library code never exits and never prints; errors travel back to the caller
// in a Status.
#pragma once

#include <string>
#include <utility>

namespace baton {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something the op can never accept
  kUnsupported,      // valid in principle, but not compiled / not supported on this device
  kCudaError,        // a CUDA runtime call failed
  kInternal,         // a bug in baton
};

char const* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  static Status invalid_argument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status unsupported(std::string message) {
    return Status(StatusCode::kUnsupported, std::move(message));
  }
  static Status cuda_error(std::string message) {
    return Status(StatusCode::kCudaError, std::move(message));
  }
  static Status internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  std::string const& message() const { return message_; }
  // "invalid_argument: build_decode_metadata: page_size 48 is not a power of two in [1, 256]"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace baton

// Propagates a non-ok Status to the caller.
#define BATON_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::baton::Status baton_status_ = (expr);    \
    if (!baton_status_.is_ok()) return baton_status_; \
  } while (0)
