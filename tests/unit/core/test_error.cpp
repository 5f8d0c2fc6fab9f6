// rethrow_with_context: context added to an error on its way out keeps the error's type.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "rensa/extensions/stop_on_signal.h"
#include "rensa/mn/communicator.h"
#include "rensa/rensa.h"

using namespace rensa;

namespace {

class MyError : public ErrorSubclass<MyError, ValueError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};

// Throws `e` and adds the context "ctx: " to it in a catch block, as the library's call sites do.
template <class Fallback = Error, class E>
void throw_with_context(const E& e) {
  try {
    throw e;
  } catch (...) {
    rethrow_with_context<Fallback>("ctx: ");
  }
}

// The exception's type after the context is added is exactly T, and its message is prefixed.
template <class T, class Fallback = Error, class E>
void expect_type_kept(const E& e) {
  try {
    throw_with_context<Fallback>(e);
    FAIL() << "nothing thrown";
  } catch (const Error& got) {
    EXPECT_EQ(typeid(got), typeid(T)) << typeid(got).name();
    EXPECT_EQ(std::string(got.what()), std::string("ctx: ") + e.what());
  }
}

}  // namespace

TEST(Error, EverySubclassKeepsItsTypeWithContext) {
  expect_type_kept<Error>(Error("base"));
  expect_type_kept<ShapeError>(ShapeError("shape"));
  expect_type_kept<DtypeError>(DtypeError("dtype"));
  expect_type_kept<DeviceError>(DeviceError("device"));
  expect_type_kept<ValueError>(ValueError("value"));
  expect_type_kept<IndexError>(IndexError("index"));
  expect_type_kept<KeyError>(KeyError("key"));
  expect_type_kept<IOError>(IOError("io"));
  expect_type_kept<NotImplementedError>(NotImplementedError("not implemented"));
  expect_type_kept<AssertionError>(AssertionError("assertion"));
  expect_type_kept<mn::CommunicationError>(mn::CommunicationError("communication"));
  expect_type_kept<MyError>(MyError("a user's own"));
}

TEST(Error, AUserSubclassIsStillCaughtAsItsBase) {
  EXPECT_THROW(throw_with_context(MyError("x")), ValueError);
}

TEST(Error, InterruptedKeepsItsSignalAndSnapshot) {
  try {
    throw_with_context(extensions::Interrupted(15, "stopped", "result/snapshot_iter_3"));
    FAIL() << "nothing thrown";
  } catch (const extensions::Interrupted& e) {
    EXPECT_EQ(e.signal(), 15);
    EXPECT_EQ(e.snapshot_path(), "result/snapshot_iter_3");
    EXPECT_STREQ(e.what(), "ctx: stopped");
  }
}

TEST(Error, OtherStandardExceptionsBecomeTheFallback) {
  expect_type_kept<Error>(std::runtime_error("plain"));
  expect_type_kept<mn::CommunicationError, mn::CommunicationError>(std::logic_error("logic"));
}

TEST(Error, OutOfMemoryAndNonStandardExceptionsPassUnchanged) {
  EXPECT_THROW(throw_with_context(std::bad_alloc()), std::bad_alloc);
  try {
    try {
      throw 42;
    } catch (...) {
      rethrow_with_context("ctx: ");
    }
    FAIL() << "nothing thrown";
  } catch (int v) {
    EXPECT_EQ(v, 42);
  }
}
