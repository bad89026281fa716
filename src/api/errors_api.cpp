// errors.h: the thread-local last error, and how an exception becomes a
// PAY_E* code and message.
#include <new>
#include <string>

#include "api_internal.hpp"
#include "config.hpp"
#include "error.hpp"
#include "ledger.hpp"
#include "redact.hpp"

using payretry::Errc;

namespace payretry::capi {
namespace {

struct LastError {
  pay_error view{PAY_OK, "no error"};
  std::string message = "no error";
};

LastError& last_error() {
  static thread_local LastError e;
  return e;
}

// Errc carries the public number itself (error.hpp). An Error that claims
// success would make a failed call look like a good one: it is a bug, PAY_ERROR.
int code_of(Errc c) {
  const int code = static_cast<int>(c);
  return code < 0 ? code : PAY_ERROR;
}

}  // namespace

int set_error(int code, const std::string& message) {
  LastError& e = last_error();
  try {
    e.message = message;
  } catch (...) {
    e.message.clear();
  }
  e.view.code = code;
  e.view.message = e.message.empty() ? pay_strerror(code) : e.message.c_str();
  return code;
}

namespace {

int translate_or_throw(std::exception_ptr ex, std::string& message) {
  try {
    std::rethrow_exception(ex);
  } catch (const payretry::ConfigError& e) {
    message = e.what();
    return PAY_ECONFIG;
  } catch (const payretry::LedgerError& e) {
    message = payretry::redact(e.what());
    return PAY_ELEDGER;
  } catch (const payretry::Error& e) {
    message = e.what();
    return code_of(e.code());
  } catch (const std::bad_alloc&) {
    message = "out of memory";
    return PAY_ENOMEM;
  } catch (const std::exception& e) {
    message = payretry::redact(e.what());
    return PAY_ERROR;
  } catch (...) {
    message = "unknown exception";
    return PAY_ERROR;
  }
}

}  // namespace

int translate(std::exception_ptr ex, std::string& message) noexcept {
  try {
    return translate_or_throw(ex, message);
  } catch (...) {
    // Only copying a message can throw here, and only for want of memory.
    message.clear();
    return PAY_ENOMEM;
  }
}

}  // namespace payretry::capi

using namespace payretry::capi;

extern "C" {

const pay_error* pay_error_last(void) { return &last_error().view; }

void pay_error_clear(void) { set_error(PAY_OK, "no error"); }

const char* pay_strerror(int code) {
  switch (code) {
#define PAY_STRERROR_CASE_(name, value, text) \
  case value:                                 \
    return text;
    PAY_ERROR_MAP(PAY_STRERROR_CASE_)
#undef PAY_STRERROR_CASE_
  }
  return "unknown error code";
}

}  // extern "C"
