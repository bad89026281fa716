// What the C face's opaque handles hold, and the helpers every file of the C
// face shares: the thread-local last error, the translation of an exception
// into a PAY_E* code, the guard that keeps exceptions from crossing the ABI,
// the fork check, and pay_buf filling. Not installed: nothing outside
// src/api/ sees these types.
#pragma once

#include <unistd.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

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
  std::string json;
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
  std::thread::id engine_thread;  // the thread that answers; it must never wait
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

// The code and message of a caught exception.
int translate(std::exception_ptr ex, std::string& message);

// Runs `body`, turning any exception into an error code and message.
template <class F>
int guarded(F&& body) {
  try {
    return body();
  } catch (...) {
    std::string message;
    int code = PAY_ENOMEM;
    try {
      code = translate(std::current_exception(), message);
    } catch (...) {
      message.clear();
    }
    return set_error(code, message);
  }
}

// PAY_EINVALID for a client made by another process (the parent of a fork).
int foreign(const pay_client* c);

// Copies `s` into a pay_buf the caller frees with pay_buf_dispose.
int fill_buf(pay_buf* out, const std::string& s);

}  // namespace payretry::capi
