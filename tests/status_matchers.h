// One assertion for every expected error: the exact StatusCode AND a key fragment of the message.
// Checking the message alone lets a path silently change its code (kInvalidModel vs kUnsupported
// vs kResourceExhausted is part of the API contract); checking the code alone lets the message
// stop naming the file, node or rule. On failure the whole message and the actual code are printed.
#ifndef IDEM_TESTS_STATUS_MATCHERS_H_
#define IDEM_TESTS_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "idem/status.h"

namespace idem::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// Passes when `status` is an error with exactly `code` whose message contains `fragment`.
inline ::testing::AssertionResult StatusIs(const Status& status, StatusCode code,
                                           std::string_view fragment) {
  if (status.ok()) {
    return ::testing::AssertionFailure()
           << "expected " << StatusCodeName(code) << " containing \"" << fragment << "\", got OK";
  }
  if (status.code() != code || status.message().find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "expected " << StatusCodeName(code) << " containing \"" << fragment << "\", got "
           << StatusCodeName(status.code()) << ": " << status.message();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace idem::testing

// `result_or_status` is a Status or a Result<T>; it is evaluated once.
#define EXPECT_STATUS(result_or_status, code, fragment) \
  EXPECT_TRUE(                                          \
      ::idem::testing::StatusIs(::idem::testing::StatusOf(result_or_status), code, fragment))
#define ASSERT_STATUS(result_or_status, code, fragment) \
  ASSERT_TRUE(                                          \
      ::idem::testing::StatusIs(::idem::testing::StatusOf(result_or_status), code, fragment))

#endif  // IDEM_TESTS_STATUS_MATCHERS_H_
