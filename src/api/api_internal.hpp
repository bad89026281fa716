// What the C face's opaque handles hold, and the helpers every file of the C
// face shares: the thread-local last error, the translation of an exception
// into a PAY_E* code, the guard that keeps exceptions from crossing the ABI,
// the options-version checks, making a result, the fork check, and pay_buf
// filling. Not installed: nothing outside src/api/ sees these types.
#pragma once

#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "payretry/payretry.h"
#include "result.hpp"
#include "transport.hpp"

struct pay_client {
  std::unique_ptr<payretry::Client> impl;
  // The process that made it. After fork() the child has none of its
  // threads (the concurrent engine's is gone) and shares its SQLite and
  // PostgreSQL connections with the parent: every call refuses at once.
  pid_t pid = getpid();
};

struct pay_result {
  payretry::PaymentResult r;
  // The JSON view, written on the first pay_result_json call, once, whichever
  // thread asks: most callers never read it, and a payment's answer must not
  // hang on rendering text the caller may never want (nor be lost to it).
  mutable std::once_flag json_once;
  mutable std::string json;
};

// The answer of a pay_submit_start payment, shared by the caller's handle and
// the engine's completion (whichever goes last frees it).
struct PendingState {
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false;
  bool collected = false;
  int rc = PAY_OK;
  std::string message;
  pay_result* result = nullptr;
  // The client's engine threads: one of them answers, and none may wait
  // (two engines' callbacks waiting on each other's payments would hang both).
  std::shared_ptr<const std::vector<std::thread::id>> engine_threads;
  ~PendingState();
};

struct pay_pending {
  std::shared_ptr<PendingState> state;
};

struct pay_body {
  std::optional<std::string> bytes;
};

struct pay_headers {
  payretry::Headers* list;
  const std::string* key_header;
};

namespace payretry::capi {

// Sets the calling thread's last error (pay_error_last) and returns `code`.
int set_error(int code, const std::string& message);

// The code and message of a caught exception: the one place an exception
// becomes a PAY_E* code. Never throws (a message it cannot copy leaves
// `message` empty and gives PAY_ENOMEM), so it may run where nothing could
// catch: on the engine thread, for a payment's done callback.
int translate(std::exception_ptr ex, std::string& message) noexcept;

// Runs `body`, turning any exception into an error code and the calling
// thread's last error. Every entry point that can throw runs in it: nothing
// unwinds across the ABI.
template <class F>
int guarded(F&& body) {
  try {
    return body();
  } catch (...) {
    std::string message;
    const int code = translate(std::current_exception(), message);
    return set_error(code, message);
  }
}

// PAY_EVERSION for an options struct of a version this library does not
// know, naming the struct in the message.
inline int bad_version(unsigned int version, const char* type) {
  return set_error(PAY_EVERSION, "invalid version " + std::to_string(version) + " on " + type);
}

// How a call takes its options: NULL means every default, the known version
// is read, any other is refused before a field of it is looked at.
template <class Options>
int check_options(const Options* opts, unsigned int known, const char* type) {
  return !opts || opts->version == known ? PAY_OK : bad_version(opts->version, type);
}

// What a submission takes from pay_submit_options, version 1 or 2 (a
// version-1 caller's struct ends before `headers`: none of the later fields
// is read from it).
struct SubmitOptions {
  const char* idempotency_key = nullptr;
  const char* path = nullptr;
  uint32_t deadline_ms = 0;
  payretry::Headers headers;
  std::string traceparent;
};
// NULL: every default. Throws payretry::Error: PAY_EVERSION for another
// version, PAY_EINVALID for a NULL header array, name or value. The headers'
// content and the traceparent are the engine's to check (Engine::validate).
SubmitOptions submit_options_of(const pay_submit_options* opts);

// Every pay_*_options_init: refuses NULL and unknown versions, then zeroes
// the struct (zero is every field's default) and sets its version.
template <class Options>
int init_options(Options* opts, unsigned int version, unsigned int known, const char* type) {
  return guarded([&]() -> int {
    if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
    if (version != known) return bad_version(version, type);
    std::memset(opts, 0, sizeof *opts);
    opts->version = version;
    return PAY_OK;
  });
}

// A result for the caller. Its JSON view is written on demand, once
// (pay_result_json); to the caller the result is immutable either way.
std::unique_ptr<pay_result> make_result(payretry::PaymentResult r);

// PAY_EINVALID for a client made by another process (the parent of a fork).
int foreign(const pay_client* c);

// The arguments pay_submit and pay_submit_start share, checked in one order:
// the client (and its process), the order id, the body, the options.
int check_submit_args(const pay_client* client, const char* order_id, const void* body,
                      const pay_submit_options* opts);

// Copies `s` into a pay_buf the caller frees with pay_buf_dispose.
int fill_buf(pay_buf* out, const std::string& s);

}  // namespace payretry::capi
