#pragma once
/// \file
/// The one exception hierarchy of rensa and the checking macro that raises it.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rensa {

/// Base of every exception rensa throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Array shapes do not fit the operation.
class ShapeError : public Error {
 public:
  using Error::Error;
};
/// Dtypes do not fit the operation.
class DtypeError : public Error {
 public:
  using Error::Error;
};
/// Arrays live on different or unsupported devices.
class DeviceError : public Error {
 public:
  using Error::Error;
};
/// An argument's value is out of range or invalid.
class ValueError : public Error {
 public:
  using Error::Error;
};
/// An index is out of bounds.
class IndexError : public Error {
 public:
  using Error::Error;
};
/// A file could not be read or written, or is malformed.
class IOError : public Error {
 public:
  using Error::Error;
};
/// A backend lacks the kernel an operation needs.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
/// A check in rensa::testing (gradient check, ...) failed.
class AssertionError : public Error {
 public:
  using Error::Error;
};

namespace detail {
/// Concatenates the streamable arguments into one string.
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail
}  // namespace rensa

/// Throws `ErrorType(message)` unless `cond` holds; the message is the concatenation of the
/// remaining arguments (anything with operator<<), built only on failure.
#define RENSA_CHECK(cond, ErrorType, ...)                           \
  do {                                                              \
    if (!(cond)) [[unlikely]] {                                     \
      throw ErrorType(::rensa::detail::concat(__VA_ARGS__));        \
    }                                                               \
  } while (0)

/// Throws `ErrorType(message)` unconditionally.
#define RENSA_THROW(ErrorType, ...) throw ErrorType(::rensa::detail::concat(__VA_ARGS__))
