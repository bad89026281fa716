// The C face (include/payretry/*.h) over the C++ engine. Every entry point
// catches every exception: nothing unwinds across the ABI.
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#include <new>
#include <optional>
#include <string>

#include "client.hpp"
#include "config.hpp"
#include "error.hpp"
#include "ledger.hpp"
#include "ledger_json.hpp"
#include "payretry/payretry.h"
#include "redact.hpp"
#include "validate.hpp"

using payretry::Errc;

static_assert(PAY_OUTCOME_SUCCEEDED == static_cast<int>(payretry::Outcome::succeeded) &&
                  PAY_OUTCOME_IN_PROGRESS == static_cast<int>(payretry::Outcome::in_progress) &&
                  PAY_DELIVERY_DELIVERED == static_cast<int>(payretry::Delivery::delivered),
              "C enums mirror the engine's");

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

namespace {

struct LastError {
  pay_error view{PAY_OK, "no error"};
  std::string message = "no error";
};

LastError& last_error() {
  static thread_local LastError e;
  return e;
}

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

// Errc carries the public number itself (error.hpp). An Error that claims
// success would make a failed call look like a good one: it is a bug, PAY_ERROR.
int code_of(Errc c) {
  const int code = static_cast<int>(c);
  return code < 0 ? code : PAY_ERROR;
}

// The code and message of a caught exception.
int translate(std::exception_ptr ex, std::string& message) {
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

}  // namespace

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

const char* pay_version(void) { return PAY_VERSION; }
int pay_version_number(void) { return PAY_VERSION_NUMBER; }

int pay_client_options_init(pay_client_options* opts, unsigned int version) {
  if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
  if (version != PAY_CLIENT_OPTIONS_VERSION)
    return set_error(PAY_EVERSION, "invalid version " + std::to_string(version) + " on pay_client_options");
  std::memset(opts, 0, sizeof *opts);
  opts->version = version;
  return PAY_OK;
}

int pay_submit_options_init(pay_submit_options* opts, unsigned int version) {
  if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
  if (version != PAY_SUBMIT_OPTIONS_VERSION)
    return set_error(PAY_EVERSION, "invalid version " + std::to_string(version) + " on pay_submit_options");
  std::memset(opts, 0, sizeof *opts);
  opts->version = version;
  return PAY_OK;
}

int pay_headers_add(pay_headers* headers, const char* name, const char* value) {
  return guarded([&]() -> int {
    if (!headers || !name || !value) return set_error(PAY_EINVALID, "pay_headers_add: NULL argument");
    if (std::string e = payretry::check_header_name(name); !e.empty()) return set_error(PAY_EINVALID, e);
    if (std::string e = payretry::check_header_value(value); !e.empty()) return set_error(PAY_EINVALID, e);
    if (std::string e = payretry::check_not_reserved(name, *headers->key_header); !e.empty())
      return set_error(PAY_EINVALID, e);
    if (headers->list->size() >= 64) return set_error(PAY_EINVALID, "more than 64 hook headers");
    headers->list->emplace_back(name, value);
    return PAY_OK;
  });
}

int pay_client_new(pay_client** out, const char* config_json, const pay_client_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!config_json) return set_error(PAY_EINVALID, "config_json is NULL");
    if (opts && opts->version != PAY_CLIENT_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_client_options");
    payretry::AttemptLog::Sink sink;
    payretry::RequestHook hook;
    if (opts && opts->log_cb) {
      pay_log_cb cb = opts->log_cb;
      void* payload = opts->log_payload;
      sink = [cb, payload](int level, const std::string& line) { cb(level, line.c_str(), payload); };
    }
    if (opts && opts->request_hook) {
      pay_request_hook cb = opts->request_hook;
      void* payload = opts->hook_payload;
      hook = [cb, payload](const payretry::AttemptView& v, payretry::Headers& extra) -> std::string {
        pay_headers h{&extra, &v.key_header};
        pay_attempt_info info;
        info.method = v.method;
        info.url = v.url.c_str();
        info.path = v.path.c_str();
        info.order_id = v.order_id.c_str();
        info.idempotency_key = v.idempotency_key.c_str();
        info.body = v.body.data();
        info.body_len = v.body.size();
        info.attempt = v.attempt;
        info.unix_time_ms = v.unix_ms;
        const int rc = cb(&h, &info, payload);
        return rc == 0 ? std::string() : "returned " + std::to_string(rc);
      };
    }
    auto c = std::make_unique<pay_client>();
    c->impl = std::make_unique<payretry::Client>(config_json, std::move(sink), std::move(hook));
    *out = c.release();
    return PAY_OK;
  });
}

namespace {
// PAY_EINVALID for a client made by another process (the parent of a fork).
int foreign(const pay_client* c) {
  if (c->pid == getpid()) return PAY_OK;
  return set_error(PAY_EINVALID, "this client was created by process " + std::to_string(c->pid) +
                                     " before fork(); create a new client in this process");
}
}  // namespace

void pay_client_free(pay_client* client) {
  if (client && client->pid != getpid()) {
    // A forked child: the parent's engine thread does not exist here, and its
    // connections are the parent's. Destroying the client would wait for that
    // thread forever or close what the parent still uses: leave it to exit.
    (void)client->impl.release();
  }
  delete client;
}

int pay_submit(pay_result** out, pay_client* client, const char* order_id, const void* body, size_t body_len,
               const pay_submit_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
    if (!body) return set_error(PAY_EINVALID, "body is NULL");
    if (opts && opts->version != PAY_SUBMIT_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_submit_options");
    payretry::SubmitRequest req;
    req.order_id = order_id;
    req.body = std::string_view(static_cast<const char*>(body), body_len);
    if (opts) {
      if (opts->idempotency_key) {
        req.idempotency_key = opts->idempotency_key;
        if (req.idempotency_key.empty()) return set_error(PAY_EKEY, "idempotency key is empty");
      }
      if (opts->path) {
        req.path = opts->path;
        if (req.path.empty()) return set_error(PAY_EINVALID, "path is empty");
      }
      req.deadline_ms = opts->deadline_ms;
    }
    auto res = std::make_unique<pay_result>();
    res->r = client->impl->submit(req);
    res->json = res->r.to_json();
    *out = res.release();
    return PAY_OK;
  });
}

int pay_batch_options_init(pay_batch_options* opts, unsigned int version) {
  if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
  if (version != PAY_BATCH_OPTIONS_VERSION)
    return set_error(PAY_EVERSION, "invalid version " + std::to_string(version) + " on pay_batch_options");
  std::memset(opts, 0, sizeof *opts);
  opts->version = version;
  return PAY_OK;
}

namespace {

void copy_message(char (&to)[256], const std::string& from) {
  const size_t n = std::min(from.size(), sizeof to - 1);
  std::memcpy(to, from.data(), n);
  to[n] = 0;
}

// The job for one payment; `done` is left to the caller.
std::unique_ptr<payretry::MultiEngine::Job> job_of(const char* order_id, const void* body, size_t body_len,
                                                   const char* key, const char* path, uint32_t deadline_ms) {
  auto job = std::make_unique<payretry::MultiEngine::Job>();
  // A NULL order id or body is caught by the engine's own validation as
  // an empty one, with the same message pay_submit gives.
  if (order_id) job->order_id = order_id;
  if (body) job->body.assign(static_cast<const char*>(body), body_len);
  if (key) {
    job->idempotency_key = key;
    if (job->idempotency_key.empty()) throw payretry::Error(Errc::PAY_EKEY, "idempotency key is empty");
  }
  if (path) {
    job->path = path;
    if (job->path.empty()) throw payretry::Error(Errc::PAY_EINVALID, "path is empty");
  }
  job->deadline_ms = deadline_ms;
  return job;
}

// Waits for the items of one pay_submit_batch call.
struct BatchWait {
  std::mutex mu;
  std::condition_variable cv;
  size_t left = 0;
};

}  // namespace

int pay_submit_batch(pay_batch_item* items, size_t count, pay_client* client, const pay_batch_options* opts) {
  return guarded([&]() -> int {
    if (!items && count > 0) return set_error(PAY_EINVALID, "items is NULL");
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (opts && opts->version != PAY_BATCH_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_batch_options");
    if (count > 0 && client->impl->multi().on_engine_thread())
      return set_error(PAY_EINVALID, "pay_submit_batch called from a done callback: it would wait for itself");
    for (size_t i = 0; i < count; ++i) {
      items[i].rc = PAY_OK;
      items[i].result = nullptr;
      items[i].message[0] = 0;
    }
    if (count == 0) return PAY_OK;
    payretry::MultiEngine& engine = client->impl->multi();
    const size_t window = opts && opts->max_in_flight > 0 ? std::min(opts->max_in_flight, count) : count;

    // Items whose call fails before the engine sees them are answered here.
    auto make = [&](size_t i) -> std::unique_ptr<payretry::MultiEngine::Job> {
      pay_batch_item& it = items[i];
      try {
        if (!it.order_id) throw payretry::Error(Errc::PAY_EINVALID, "order_id is NULL");
        if (!it.body) throw payretry::Error(Errc::PAY_EINVALID, "body is NULL");
        return job_of(it.order_id, it.body, it.body_len, it.idempotency_key, it.path, it.deadline_ms);
      } catch (...) {
        std::string m;
        it.rc = translate(std::current_exception(), m);
        copy_message(it.message, m);
        return nullptr;
      }
    };

    // Fills item i from its job's answer.
    auto fill = [items](size_t i, std::exception_ptr e, payretry::PaymentResult r) {
      pay_batch_item& it = items[i];
      std::string m;
      if (e) {
        it.rc = translate(e, m);
        copy_message(it.message, m);
        return;
      }
      try {
        auto res = std::make_unique<pay_result>();
        res->r = std::move(r);
        res->json = res->r.to_json();
        it.result = res.release();
      } catch (...) {
        it.rc = PAY_ENOMEM;
        copy_message(it.message, "out of memory");
      }
    };
    BatchWait wait;
    wait.left = count;
    auto answered = [&wait] {
      std::lock_guard<std::mutex> lock(wait.mu);
      if (--wait.left == 0) wait.cv.notify_all();
    };
    // Runs answered() however the scope is left: a missed count would hang
    // the caller forever.
    struct Answers {
      decltype(answered)& fn;
      ~Answers() { fn(); }
    };
    // The next item not yet started, as a job; items refused up front are
    // answered on the way. Each answer starts one more item, so `window`
    // items stay in flight.
    using JobPtr = std::unique_ptr<payretry::MultiEngine::Job>;
    struct Next {
      size_t i = 0;
      JobPtr job;  // null: every item is started or answered
    };
    std::atomic<size_t> next{0};
    std::function<Next()> take_next;
    // Starts the next item; one the engine refuses (the client is being
    // freed, out of memory) is answered with that error, and the next tried.
    auto launch_next = [&] {
      for (;;) {
        Next n = take_next();
        if (!n.job) return;
        try {
          std::vector<JobPtr> one;
          one.push_back(std::move(n.job));
          engine.enqueue(std::move(one));
          return;
        } catch (...) {
          Answers guard{answered};
          fill(n.i, std::current_exception(), {});
        }
      }
    };
    take_next = [&]() -> Next {
      for (;;) {
        Next n;
        n.i = next.fetch_add(1);
        if (n.i >= count) return n;
        n.job = make(n.i);
        if (!n.job) {
          answered();
          continue;
        }
        const size_t i = n.i;
        n.job->done = [&, i](std::exception_ptr e, payretry::PaymentResult r) {
          Answers guard{answered};
          fill(i, e, std::move(r));
          launch_next();
        };
        return n;
      }
    };
    // The first window in one hand-over, so its rows share one commit.
    std::vector<JobPtr> first;
    std::vector<size_t> first_items;
    for (size_t k = 0; k < window; ++k) {
      Next n = take_next();
      if (!n.job) break;
      first_items.push_back(n.i);
      first.push_back(std::move(n.job));
    }
    try {
      engine.enqueue(std::move(first));
    } catch (...) {
      const std::exception_ptr e = std::current_exception();
      for (size_t i : first_items) {
        Answers guard{answered};
        fill(i, e, {});
      }
      for (size_t k = 0; k < first_items.size(); ++k) launch_next();
    }
    std::unique_lock<std::mutex> lock(wait.mu);
    wait.cv.wait(lock, [&] { return wait.left == 0; });
    return PAY_OK;
  });
}

int pay_submit_async(pay_client* client, const char* order_id, const void* body, size_t body_len,
                     const pay_submit_options* opts, pay_done_cb done, void* payload) {
  return guarded([&]() -> int {
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
    if (!body) return set_error(PAY_EINVALID, "body is NULL");
    if (!done) return set_error(PAY_EINVALID, "done is NULL");
    if (opts && opts->version != PAY_SUBMIT_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_submit_options");
    auto job = job_of(order_id, body, body_len, opts ? opts->idempotency_key : nullptr, opts ? opts->path : nullptr,
                      opts ? opts->deadline_ms : 0);
    job->done = [done, payload](std::exception_ptr e, payretry::PaymentResult r) {
      std::string m;
      if (e) {
        const int rc = translate(e, m);
        done(rc, nullptr, m.c_str(), payload);
        return;
      }
      pay_result* out = nullptr;
      int rc = PAY_OK;
      try {
        auto res = std::make_unique<pay_result>();
        res->r = std::move(r);
        res->json = res->r.to_json();
        out = res.release();
      } catch (...) {
        rc = PAY_ENOMEM;
        m = "out of memory";
      }
      done(rc, out, m.c_str(), payload);
    };
    std::vector<std::unique_ptr<payretry::MultiEngine::Job>> one;
    one.push_back(std::move(job));
    client->impl->multi().enqueue(std::move(one));
    return PAY_OK;
  });
}

PendingState::~PendingState() { pay_result_free(result); }

int pay_submit_start(pay_pending** out, pay_client* client, const char* order_id, const void* body, size_t body_len,
                     const pay_submit_options* opts) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (!order_id) return set_error(PAY_EINVALID, "order_id is NULL");
    if (!body) return set_error(PAY_EINVALID, "body is NULL");
    if (opts && opts->version != PAY_SUBMIT_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_submit_options");
    auto job = job_of(order_id, body, body_len, opts ? opts->idempotency_key : nullptr, opts ? opts->path : nullptr,
                      opts ? opts->deadline_ms : 0);
    payretry::MultiEngine& engine = client->impl->multi();
    auto handle = std::make_unique<pay_pending>();
    handle->state = std::make_shared<PendingState>();
    handle->state->engine_thread = engine.thread_id();
    job->done = [state = handle->state](std::exception_ptr e, payretry::PaymentResult r) {
      std::string m;
      int rc = PAY_OK;
      pay_result* res = nullptr;
      if (e) {
        rc = translate(e, m);
      } else {
        try {
          auto p = std::make_unique<pay_result>();
          p->r = std::move(r);
          p->json = p->r.to_json();
          res = p.release();
        } catch (...) {
          rc = PAY_ENOMEM;
          m = "out of memory";
        }
      }
      std::lock_guard<std::mutex> lock(state->mu);
      state->rc = rc;
      state->message = std::move(m);
      state->result = res;
      state->answered = true;
      state->cv.notify_all();
    };
    std::vector<std::unique_ptr<payretry::MultiEngine::Job>> one;
    one.push_back(std::move(job));
    engine.enqueue(std::move(one));
    *out = handle.release();
    return PAY_OK;
  });
}

int pay_pending_wait(pay_result** out, pay_pending* pending, int timeout_ms) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!pending) return set_error(PAY_EINVALID, "pending is NULL");
    PendingState& st = *pending->state;
    if (timeout_ms != 0 && std::this_thread::get_id() == st.engine_thread)
      return set_error(PAY_EINVALID, "pay_pending_wait from a done callback may only poll (timeout 0)");
    std::unique_lock<std::mutex> lock(st.mu);
    if (st.collected) return set_error(PAY_EINVALID, "this payment's answer was already collected");
    if (timeout_ms < 0) st.cv.wait(lock, [&] { return st.answered; });
    else st.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return st.answered; });
    if (!st.answered) return set_error(PAY_EAGAIN, "the payment has no answer yet");
    st.collected = true;
    if (st.rc != PAY_OK) return set_error(st.rc, st.message);
    *out = st.result;
    st.result = nullptr;
    return PAY_OK;
  });
}

void pay_pending_free(pay_pending* pending) { delete pending; }

int pay_result_outcome(const pay_result* r) { return r ? static_cast<int>(r->r.outcome) : PAY_EINVALID; }
int pay_result_delivery(const pay_result* r) { return r ? static_cast<int>(r->r.delivery) : PAY_EINVALID; }
int pay_result_http_status(const pay_result* r) { return r ? r->r.http_status : 0; }

const char* pay_result_body(const pay_result* r, size_t* len) {
  if (len) *len = r ? r->r.body.size() : 0;
  return r ? r->r.body.c_str() : nullptr;
}

const char* pay_result_order_id(const pay_result* r) { return r ? r->r.order_id.c_str() : nullptr; }
const char* pay_result_idempotency_key(const pay_result* r) { return r ? r->r.idempotency_key.c_str() : nullptr; }

const char* pay_result_provider_payment_id(const pay_result* r) {
  return r && !r->r.provider_payment_id.empty() ? r->r.provider_payment_id.c_str() : nullptr;
}
const char* pay_result_provider_status(const pay_result* r) {
  return r && !r->r.provider_status.empty() ? r->r.provider_status.c_str() : nullptr;
}
int pay_result_from_ledger(const pay_result* r) { return r && r->r.from_ledger ? 1 : 0; }

const char* pay_result_ledger_error(const pay_result* r) {
  return r && !r->r.ledger_error.empty() ? r->r.ledger_error.c_str() : nullptr;
}
int pay_result_attempts(const pay_result* r) { return r ? static_cast<int>(r->r.attempts.size()) : 0; }
const char* pay_result_error(const pay_result* r) { return r && !r->r.error.empty() ? r->r.error.c_str() : nullptr; }
const char* pay_result_json(const pay_result* r) { return r ? r->json.c_str() : nullptr; }
void pay_result_free(pay_result* r) { delete r; }

const char* pay_outcome_name(int outcome) {
  switch (outcome) {
    case PAY_OUTCOME_SUCCEEDED: return "SUCCEEDED";
    case PAY_OUTCOME_FAILED: return "FAILED";
    case PAY_OUTCOME_UNKNOWN: return "UNKNOWN";
    case PAY_OUTCOME_IN_PROGRESS: return "IN_PROGRESS";
  }
  return "?";
}

const char* pay_delivery_name(int delivery) {
  switch (delivery) {
    case PAY_DELIVERY_NOT_SENT: return "not_sent";
    case PAY_DELIVERY_MAYBE_PROCESSED: return "maybe_processed";
    case PAY_DELIVERY_DELIVERED: return "delivered";
  }
  return "?";
}

void pay_buf_dispose(pay_buf* buf) {
  if (!buf) return;
  std::free(buf->ptr);
  buf->ptr = nullptr;
  buf->size = 0;
}

namespace {
int fill_buf(pay_buf* out, const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return set_error(PAY_ENOMEM, "out of memory");
  std::memcpy(p, s.c_str(), s.size() + 1);
  out->ptr = p;
  out->size = s.size();
  return PAY_OK;
}
}  // namespace

int pay_client_stats(pay_buf* out, const pay_client* client) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    return fill_buf(out, client->impl->stats_json());
  });
}

int pay_query(pay_result** out, pay_client* client, const char* order_id) {
  if (out) *out = nullptr;
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    if (!client || !order_id) return set_error(PAY_EINVALID, "client or order_id is NULL");
    if (const int rc = foreign(client)) return rc;
    auto res = std::make_unique<pay_result>();
    res->r = client->impl->query(order_id);
    res->json = res->r.to_json();
    *out = res.release();
    return PAY_OK;
  });
}

int pay_body_set(pay_body* body, const void* data, size_t len) {
  if (!body || (!data && len)) return set_error(PAY_EINVALID, "pay_body_set: NULL argument");
  return guarded([&]() -> int {
    body->bytes = std::string(static_cast<const char*>(data), len);
    return PAY_OK;
  });
}

int pay_reconcile_options_init(pay_reconcile_options* opts, unsigned int version) {
  if (!opts) return set_error(PAY_EINVALID, "opts is NULL");
  if (version != PAY_RECONCILE_OPTIONS_VERSION)
    return set_error(PAY_EVERSION, "invalid version " + std::to_string(version) + " on pay_reconcile_options");
  std::memset(opts, 0, sizeof *opts);
  opts->version = version;
  return PAY_OK;
}

int pay_reconcile(pay_buf* out, pay_client* client, const pay_reconcile_options* opts) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    if (opts && opts->version != PAY_RECONCILE_OPTIONS_VERSION)
      return set_error(PAY_EVERSION, "invalid version " + std::to_string(opts->version) + " on pay_reconcile_options");
    payretry::ReconcileOptions o;
    if (opts && opts->limit) o.limit = static_cast<int>(std::min<uint32_t>(opts->limit, 1000000));
    if (opts) o.older_than_ms = opts->older_than_ms;
    if (opts && opts->body_for) {
      pay_body_cb cb = opts->body_for;
      void* payload = opts->body_payload;
      o.body_for = [cb, payload](const std::string& order_id) -> std::optional<std::string> {
        pay_body b;
        if (cb(&b, order_id.c_str(), payload) != 0) return std::nullopt;
        return b.bytes;
      };
    }
    return fill_buf(out, client->impl->reconcile(o).to_json());
  });
}

int pay_ledger_get(pay_buf* out, pay_client* client, const char* order_id) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client || !order_id) return set_error(PAY_EINVALID, "client or order_id is NULL");
    if (const int rc = foreign(client)) return rc;
    payretry::Ledger& l = client->impl->ledger();
    const auto row = l.get(order_id);
    if (!row) return set_error(PAY_ENOTFOUND, "no payment for this order id in the ledger");
    return fill_buf(out, payretry::payment_json(*row, l.attempts(order_id)));
  });
}

int pay_ledger_list(pay_buf* out, pay_client* client, const char* state, int64_t updated_before_unix_ms,
                    uint32_t limit) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    std::optional<payretry::PaymentState> st;
    if (state) {
      st = payretry::parse_state(state);
      if (!st) return set_error(PAY_EINVALID, "state must be PENDING, IN_FLIGHT, SUCCEEDED, FAILED or UNKNOWN");
    }
    const int n = limit == 0 ? 1000 : static_cast<int>(std::min<uint32_t>(limit, 1000000));
    return fill_buf(out, payretry::payments_json(client->impl->ledger().list(st, updated_before_unix_ms, n)));
  });
}

}  // extern "C"
