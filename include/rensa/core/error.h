#pragma once
/// \file
/// The one exception hierarchy of rensa and the checking macro that raises it.

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rensa {

/// Base of every exception rensa throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// Throws a copy of this exception, of its own most derived type, with `prefix` before its
  /// message (rethrow_with_context calls it). Subclasses made with ErrorSubclass get it right by
  /// themselves; one with its own constructor overrides it.
  [[noreturn]] virtual void throw_with_prefix(const std::string& prefix) const { throw Error(prefix + what()); }
};

/// How an error type is declared: `class MyError : public ErrorSubclass<MyError> { public: using
/// ErrorSubclass::ErrorSubclass; };` (or `ErrorSubclass<MyError, ValueError>` under another type),
/// so that rethrow_with_context keeps its type.
template <class Self, class Base = Error>
class ErrorSubclass : public Base {
 public:
  using Base::Base;
  /// Throws a Self whose message is `prefix` followed by this one's.
  [[noreturn]] void throw_with_prefix(const std::string& prefix) const override {
    throw Self(prefix + this->what());
  }
};
/// Array shapes do not fit the operation.
class ShapeError : public ErrorSubclass<ShapeError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// Dtypes do not fit the operation.
class DtypeError : public ErrorSubclass<DtypeError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// Arrays live on different or unsupported devices.
class DeviceError : public ErrorSubclass<DeviceError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// An argument's value is out of range or invalid.
class ValueError : public ErrorSubclass<ValueError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// An index is out of bounds.
class IndexError : public ErrorSubclass<IndexError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// A name is already taken, or unknown where a registry lookup needs it (Chainer's KeyError).
class KeyError : public ErrorSubclass<KeyError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// A file could not be read or written, or is malformed.
class IOError : public ErrorSubclass<IOError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// A backend lacks the kernel an operation needs.
class NotImplementedError : public ErrorSubclass<NotImplementedError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};
/// A check in rensa::testing (gradient check, ...) failed.
class AssertionError : public ErrorSubclass<AssertionError> {
 public:
  using ErrorSubclass::ErrorSubclass;
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

/// Adds context to an error on its way out; call it inside a catch block. Rethrows the exception
/// being handled with `prefix` before its message: a rensa::Error keeps its type (a caller's
/// `catch (IOError&)` still sees an IOError), std::bad_alloc and anything not derived from
/// std::exception go on unchanged, and another std::exception becomes a `Fallback` (Error unless
/// given). Outside a catch block it calls std::terminate, as `throw;` does.
///   try { load(path); } catch (...) { rethrow_with_context("snapshot '" + path + "': "); }
template <class Fallback = Error>
[[noreturn]] void rethrow_with_context(const std::string& prefix) {
  try {
    throw;
  } catch (const Error& e) {
    e.throw_with_prefix(prefix);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw Fallback(prefix + e.what());
  }
  throw;  // not reached (throw_with_prefix throws); says so to the compiler
}

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
