// payretry.hpp: header-only C++17 wrapper over the payretry C API (payretry.h).
//
// Ownership: pay::client and pay::result are move-only RAII handles over
//   pay_client* / pay_result*; the destructor frees (pay_client_free /
//   pay_result_free), release() hands the raw pointer back to the caller.
//   A moved-from handle holds nullptr and is safe to destroy or reassign.
//   Every string_view returned by pay::result is borrowed from that result and
//   valid until it is destroyed. A result does not refer to its client: it
//   stays valid after the client is gone. Functions returning std::string copy.
// Thread-safety: a pay::client may be shared by any number of threads
//   (submit/submit_operation/query/reconcile/ledger_*/stats may run
//   concurrently); it must not be destroyed or moved while a call on it is
//   running. A pay::result is
//   immutable: any thread may read it. Callbacks (log, request hook, reconcile
//   body_for) run on the calling thread and may run concurrently with each
//   other, so they must be thread-safe themselves.
// Errors: every function that can fail throws pay::error carrying the C code
//   (a PAY_E* value, see errors.h) and the message of pay_error_last(); the
//   thread-local C error is cleared after being copied. A declined or
//   undetermined payment is not an error: it is data on pay::result.
//   Exceptions thrown by user callbacks never cross the C frames: a throwing
//   request hook stops the submission (PAY_EHOOK if nothing was sent); a
//   throwing log callback is swallowed; a throwing body_for means "no body".
//
// Header-only: every function is inline; it includes only payretry.h and the
// C++ standard library and exports no symbols of its own.
#ifndef PAYRETRY_HPP
#define PAYRETRY_HPP

#include <payretry/payretry.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace pay {

// ---- Errors -----------------------------------------------------------------

class error : public std::runtime_error {
 public:
  error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

  // An error with code `rc` and this thread's pay_error_last() message
  // (pay_strerror(rc) when it holds none), copied; then clears that state.
  static error from_last(int rc) {
    const pay_error* e = pay_error_last();
    std::string msg = (e && e->code != PAY_OK && e->message) ? e->message : pay_strerror(rc);
    pay_error_clear();
    return error(rc, msg);
  }

 private:
  int code_;
};

// Throws pay::error for a negative return code; returns rc otherwise.
inline int check(int rc) {
  if (rc < 0) throw error::from_last(rc);
  return rc;
}

// ---- Handles ------------------------------------------------------------------

template <class T, void (*Free)(T*)>
class handle {
 public:
  handle() noexcept = default;
  explicit handle(T* p) noexcept : p_(p) {}
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  handle(handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  handle& operator=(handle&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~handle() { reset(); }

  T* get() const noexcept { return p_; }
  T* release() noexcept { return std::exchange(p_, nullptr); }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 protected:
  void reset() noexcept {
    if (p_) Free(std::exchange(p_, nullptr));
  }

 private:
  T* p_ = nullptr;
};

// ---- Result -----------------------------------------------------------------

enum class outcome : int {
  succeeded = PAY_OUTCOME_SUCCEEDED,
  failed = PAY_OUTCOME_FAILED,
  unknown = PAY_OUTCOME_UNKNOWN,
  in_progress = PAY_OUTCOME_IN_PROGRESS
};
static_assert(static_cast<int>(outcome::succeeded) == 1 && static_cast<int>(outcome::in_progress) == 4,
              "pay::outcome mirrors pay_outcome");

enum class delivery : int {
  not_sent = PAY_DELIVERY_NOT_SENT,
  maybe_processed = PAY_DELIVERY_MAYBE_PROCESSED,
  delivered = PAY_DELIVERY_DELIVERED
};

// Where the money is (pay_money_state), beside whether the request took
// effect: a SUCCEEDED create of a PayPal order or of a Stripe PaymentIntent
// that needs 3-D Secure has moved no money. Fulfil on paid (or authorized
// where you capture later), never on outcome::succeeded alone. The C enum is
// only appended to: a value this header does not name may still arrive, and
// to_string gives "?" for it.
enum class money_state : int {
  unknown = PAY_MONEY_UNKNOWN,
  awaiting_customer = PAY_MONEY_AWAITING_CUSTOMER,
  pending = PAY_MONEY_PENDING,
  authorized = PAY_MONEY_AUTHORIZED,
  paid = PAY_MONEY_PAID,
  partly_refunded = PAY_MONEY_PARTLY_REFUNDED,
  refunded = PAY_MONEY_REFUNDED,
  failed = PAY_MONEY_FAILED
};
static_assert(static_cast<int>(money_state::unknown) == 0 && static_cast<int>(money_state::failed) == 7,
              "pay::money_state mirrors pay_money_state");

inline std::string_view to_string(outcome o) noexcept { return pay_outcome_name(static_cast<int>(o)); }
inline std::string_view to_string(delivery d) noexcept { return pay_delivery_name(static_cast<int>(d)); }
inline std::string_view to_string(money_state m) noexcept { return pay_money_state_name(static_cast<int>(m)); }

namespace detail {
inline std::string_view sv(const char* s) noexcept { return s ? std::string_view(s) : std::string_view(); }
inline std::optional<std::string_view> opt(const char* s) {
  if (!s) return std::nullopt;
  return std::string_view(s);
}
inline const pay_result* need(const pay_result* r) {
  if (!r) throw error(PAY_EINVALID, "pay::result: empty (moved-from or released) handle");
  return r;
}
inline pay_client* need(pay_client* c) {
  if (!c) throw error(PAY_EINVALID, "pay::client: empty (moved-from or released) handle");
  return c;
}
// Takes ownership of a pay_buf filled by the C library and returns a copy.
inline std::string take(pay_buf& b) {
  struct guard {
    pay_buf& b;
    ~guard() { pay_buf_dispose(&b); }
  } g{b};
  return b.ptr ? std::string(b.ptr, b.size) : std::string();
}
}  // namespace detail

class result : public handle<pay_result, pay_result_free> {
 public:
  result() noexcept = default;
  explicit result(pay_result* r) noexcept : handle(r) {}

  pay::outcome outcome() const { return static_cast<pay::outcome>(check(pay_result_outcome(detail::need(get())))); }
  pay::delivery delivery() const { return static_cast<pay::delivery>(check(pay_result_delivery(detail::need(get())))); }
  // Fulfil on money_state::paid (or authorized where you capture later),
  // never on outcome() == succeeded alone.
  pay::money_state money_state() const {
    return static_cast<pay::money_state>(check(pay_result_money_state(detail::need(get()))));
  }
  int http_status() const { return pay_result_http_status(detail::need(get())); }
  std::string_view body() const {
    size_t len = 0;
    const char* p = pay_result_body(detail::need(get()), &len);
    return p ? std::string_view(p, len) : std::string_view();
  }
  std::string_view order_id() const { return detail::sv(pay_result_order_id(detail::need(get()))); }
  std::string_view idempotency_key() const { return detail::sv(pay_result_idempotency_key(detail::need(get()))); }
  std::optional<std::string_view> provider_payment_id() const {
    return detail::opt(pay_result_provider_payment_id(detail::need(get())));
  }
  std::optional<std::string_view> provider_status() const {
    return detail::opt(pay_result_provider_status(detail::need(get())));
  }
  std::optional<std::string_view> error() const { return detail::opt(pay_result_error(detail::need(get()))); }
  int attempts() const { return pay_result_attempts(detail::need(get())); }
  bool from_ledger() const { return pay_result_from_ledger(detail::need(get())) == 1; }
  // Empty when the ledger holds this result; else why it could not record it.
  std::string ledger_error() const {
    const char* e = pay_result_ledger_error(detail::need(get()));
    return e ? e : "";
  }
  std::string_view json() const { return detail::sv(pay_result_json(detail::need(get()))); }
};

// ---- Request hook headers ---------------------------------------------------

// Non-owning view of one attempt's extra headers; valid only inside the hook.
class headers {
 public:
  explicit headers(pay_headers* h) noexcept : h_(h) {}
  void add(std::string_view name, std::string_view value) {
    const std::string n(name), v(value);
    check(pay_headers_add(h_, n.c_str(), v.c_str()));
  }
  pay_headers* get() const noexcept { return h_; }

 private:
  pay_headers* h_;
};

// ---- Client -----------------------------------------------------------------

using log_callback = std::function<void(int level, std::string_view line)>;
using request_hook = std::function<bool(headers&, const pay_attempt_info&)>;  // false: do not send
using body_callback = std::function<std::optional<std::string>(std::string_view order_id)>;

struct submit_options {
  std::optional<std::string> idempotency_key;  // none: a fresh UUIDv4
  std::optional<std::string> path;             // none: the profile's create path
  std::chrono::milliseconds deadline{0};       // 0: the client's
  // On every attempt of this payment (pay_submit_options.headers); not in a batch.
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<std::string> traceparent;      // W3C trace context; none: not sent
};

// What client::submit_operation does to a payment (pay_operation).
enum class operation : int {
  capture = PAY_OPERATION_CAPTURE,  // take (part of) an authorized hold
  refund = PAY_OPERATION_REFUND,    // give (part of) a paid payment back
  cancel = PAY_OPERATION_CANCEL     // void a payment no money has moved for yet
};

// The ledger's name of the kind, as in an operation's row id ("refund").
inline std::string_view to_string(operation k) noexcept {
  switch (k) {
    case operation::capture: return "capture";
    case operation::refund: return "refund";
    case operation::cancel: return "cancel";
  }
  return "?";
}

// One capture, refund or cancel (pay_operation_options).
struct operation_options {
  // Required: your name for this operation, unique per payment and kind
  // ("r1"). The same ref again is the same operation (its stored key and
  // bytes, or PAY_EMISMATCH if asked otherwise); a new ref is a new one, so
  // an UNKNOWN operation is settled by asking again with the same ref.
  std::string ref;
  int64_t amount = 0;                      // provider's units; 0: the rest (ignored for a cancel)
  std::optional<std::string> body;         // a JSON object of further fields the provider takes
  std::optional<std::string> target_id;    // a second id the provider's path names (PayPal's capture)
  std::chrono::milliseconds deadline{0};   // 0: the client's
};

// One payment of client::submit_batch.
struct payment {
  std::string order_id;
  std::string body;
  submit_options options;
};

// The answer for one payment of a batch or an asynchronous submit: its result,
// or the error of its failed call (exactly one of the two is set).
struct answer {
  std::optional<pay::result> result;
  std::optional<pay::error> failure;
};

// What a webhook's HTTP request asks the application to answer
// (pay_webhook_reply, copied): send `status`, `content_type` (when not empty)
// and `body` back to the provider. `outcome` is the JSON of what the
// notification did (webhook.h: verdict, why, scheme, events).
struct webhook_reply {
  int status = 0;
  std::string content_type;
  std::string body;
  std::string outcome;
};

// Called once per client::submit_async, on the client's engine thread; it
// must not throw (an exception is swallowed) and must not destroy the client.
using done_callback = std::function<void(answer)>;

namespace detail {
inline uint32_t deadline_ms(std::chrono::milliseconds d) {
  const long long ms = static_cast<long long>(d.count());
  if (ms < 0) throw error(PAY_EINVALID, "pay::submit_options::deadline: negative");
  return ms > static_cast<long long>(UINT32_MAX) ? UINT32_MAX : static_cast<uint32_t>(ms);
}

// The C options of `opts`; `storage` holds the header array they point into.
inline pay_submit_options submit_options_of(const submit_options& opts, std::vector<pay_header>& storage) {
  pay_submit_options o;
  if (const int rc = pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION)) throw error(rc, "pay_submit_options_init");
  if (opts.idempotency_key) o.idempotency_key = opts.idempotency_key->c_str();
  if (opts.path) o.path = opts.path->c_str();
  o.deadline_ms = deadline_ms(opts.deadline);
  storage.clear();
  for (const auto& h : opts.headers) storage.push_back({h.first.c_str(), h.second.c_str()});
  o.headers = storage.empty() ? nullptr : storage.data();
  o.header_count = storage.size();
  if (opts.traceparent) o.traceparent = opts.traceparent->c_str();
  return o;
}

inline void done_tramp(int rc, pay_result* r, const char* message, void* payload) noexcept {
  std::unique_ptr<done_callback> cb(static_cast<done_callback*>(payload));
  try {
    answer a;
    if (rc == PAY_OK) a.result.emplace(r);
    else a.failure.emplace(rc, message ? message : pay_strerror(rc));
    (*cb)(std::move(a));
  } catch (...) {
  }
}

struct callbacks {
  log_callback log;
  request_hook hook;

  static void log_tramp(int level, const char* line, void* self) noexcept {
    try {
      static_cast<callbacks*>(self)->log(level, sv(line));
    } catch (...) {
      // A log callback must not break a payment: swallowed.
    }
  }
  static int hook_tramp(pay_headers* h, const pay_attempt_info* info, void* self) noexcept {
    try {
      headers hs(h);
      return static_cast<callbacks*>(self)->hook(hs, *info) ? 0 : 1;
    } catch (...) {
      return 1;  // stops the submission; nothing crosses the C frame
    }
  }
  static int body_tramp(pay_body* out, const char* order_id, void* fn) noexcept {
    try {
      std::optional<std::string> b = (*static_cast<const body_callback*>(fn))(sv(order_id));
      if (!b) return 1;
      return pay_body_set(out, b->data(), b->size()) == PAY_OK ? 0 : 1;
    } catch (...) {
      return 1;
    }
  }
};
}  // namespace detail

class client : public handle<pay_client, pay_client_free> {
 public:
  explicit client(std::string_view config_json) : client(config_json, log_callback{}, request_hook{}) {}
  client(std::string_view config_json, log_callback log, request_hook hook = {}) {
    pay_client_options o;
    check(pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION));
    if (log || hook) {
      cb_ = std::make_unique<detail::callbacks>(detail::callbacks{std::move(log), std::move(hook)});
      if (cb_->log) {
        o.log_cb = &detail::callbacks::log_tramp;
        o.log_payload = cb_.get();
      }
      if (cb_->hook) {
        o.request_hook = &detail::callbacks::hook_tramp;
        o.hook_payload = cb_.get();
      }
    }
    const std::string cfg(config_json);
    pay_client* c = nullptr;
    check(pay_client_new(&c, cfg.c_str(), &o));
    handle::operator=(handle(c));
  }
  client(std::string_view config_json, request_hook hook) : client(config_json, log_callback{}, std::move(hook)) {}

  // Moves keep the callbacks with the handle (the heap object does not move).
  client(client&&) noexcept = default;
  client& operator=(client&& o) noexcept {
    if (this != &o) {
      handle::operator=(std::move(o));  // frees our pay_client before our callbacks go
      cb_ = std::move(o.cb_);
    }
    return *this;
  }
  ~client() { reset(); }  // the C client goes before the callbacks it points to

  result submit(std::string_view order_id, std::string_view body, const submit_options& opts = {}) const {
    std::vector<pay_header> headers;
    const pay_submit_options o = detail::submit_options_of(opts, headers);
    const std::string order(order_id);
    pay_result* r = nullptr;
    check(pay_submit(&r, detail::need(get()), order.c_str(), body.data(), body.size(), &o));
    return result(r);
  }

  // Submits many payments at once on the client's engine thread (libcurl
  // multi, group commit) and returns one answer per payment, in order. Each
  // payment follows exactly the rules of submit(). max_in_flight 0: all at once.
  std::vector<answer> submit_batch(const std::vector<payment>& payments, size_t max_in_flight = 0) const {
    std::vector<pay_batch_item> items(payments.size());
    for (size_t i = 0; i < payments.size(); ++i) {
      const payment& p = payments[i];
      // pay_batch_item is frozen: it has no room for them.
      if (!p.options.headers.empty() || p.options.traceparent)
        throw error(PAY_EINVALID, "pay::client::submit_batch: headers and traceparent need submit or submit_async");
      items[i].order_id = p.order_id.c_str();
      items[i].body = p.body.data();
      items[i].body_len = p.body.size();
      if (p.options.idempotency_key) items[i].idempotency_key = p.options.idempotency_key->c_str();
      if (p.options.path) items[i].path = p.options.path->c_str();
      items[i].deadline_ms = detail::deadline_ms(p.options.deadline);
    }
    pay_batch_options o;
    check(pay_batch_options_init(&o, PAY_BATCH_OPTIONS_VERSION));
    o.max_in_flight = max_in_flight;
    check(pay_submit_batch(items.data(), items.size(), detail::need(get()), &o));
    std::vector<answer> out(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].rc == PAY_OK) out[i].result.emplace(items[i].result);
      else out[i].failure.emplace(items[i].rc, items[i].message);
    }
    return out;
  }

  // Starts one payment and returns at once; `done` gets its answer on the
  // engine thread. Destroying the client waits for every started payment.
  void submit_async(std::string_view order_id, std::string_view body, done_callback done,
                    const submit_options& opts = {}) const {
    if (!done) throw error(PAY_EINVALID, "pay::client::submit_async: no done callback");
    std::vector<pay_header> headers;
    const pay_submit_options o = detail::submit_options_of(opts, headers);
    const std::string order(order_id);
    auto cb = std::make_unique<done_callback>(std::move(done));
    check(pay_submit_async(detail::need(get()), order.c_str(), body.data(), body.size(), &o, &detail::done_tramp,
                           cb.get()));
    (void)cb.release();  // the trampoline owns it now
  }

  // Captures, refunds or cancels the payment of `order_id` (pay_submit_operation):
  // its own ledger row ("<order_id> <kind> <ref>"), its key committed before
  // the first byte, retried and settled as a payment is. The result is the
  // operation's. Throws pay::error with nothing sent for an operation the
  // ledger refuses (PAY_EINVALID: the payment's money is not where the
  // operation applies, or the amount does not fit what is left), an order
  // not in the ledger (PAY_ENOTFOUND), the same ref asked otherwise
  // (PAY_EMISMATCH).
  result submit_operation(std::string_view order_id, operation kind, const operation_options& opts) const {
    // A C string ends at its first NUL: never hand the library a shortened one.
    const auto no_nul = [](std::string_view what, std::string_view s) {
      if (s.find('\0') != std::string_view::npos)
        throw error(PAY_EINVALID, "pay::operation_options: " + std::string(what) + " contains a NUL character");
    };
    no_nul("order_id", order_id);
    no_nul("ref", opts.ref);
    if (opts.body) no_nul("body", *opts.body);
    if (opts.target_id) no_nul("target_id", *opts.target_id);
    pay_operation_options o;
    check(pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION));
    o.ref = opts.ref.c_str();
    o.amount = opts.amount;
    if (opts.body) o.body = opts.body->c_str();
    if (opts.target_id) o.target_id = opts.target_id->c_str();
    o.deadline_ms = detail::deadline_ms(opts.deadline);
    const std::string order(order_id);
    pay_result* r = nullptr;
    check(pay_submit_operation(&r, detail::need(get()), order.c_str(), static_cast<int>(kind), &o));
    return result(r);
  }
  result capture(std::string_view order_id, const operation_options& opts) const {
    return submit_operation(order_id, operation::capture, opts);
  }
  result refund(std::string_view order_id, const operation_options& opts) const {
    return submit_operation(order_id, operation::refund, opts);
  }
  result cancel(std::string_view order_id, const operation_options& opts) const {
    return submit_operation(order_id, operation::cancel, opts);
  }

  result query(std::string_view order_id) const {
    const std::string order(order_id);
    pay_result* r = nullptr;
    check(pay_query(&r, detail::need(get()), order.c_str()));
    return result(r);
  }

  // Settles UNKNOWN (and lease-expired IN_FLIGHT) payments; body_for returns
  // the original bytes of an order for a same-key re-send, or nullopt.
  std::string reconcile(const body_callback& body_for = {}) const {
    pay_reconcile_options o;
    check(pay_reconcile_options_init(&o, PAY_RECONCILE_OPTIONS_VERSION));
    if (body_for) {
      o.body_for = &detail::callbacks::body_tramp;
      o.body_payload = const_cast<body_callback*>(&body_for);
    }
    pay_buf b{nullptr, 0};
    const int rc = pay_reconcile(&b, detail::need(get()), &o);
    std::string s = detail::take(b);
    check(rc);
    return s;
  }

  std::string ledger_get(std::string_view order_id) const {
    const std::string order(order_id);
    pay_buf b{nullptr, 0};
    const int rc = pay_ledger_get(&b, detail::need(get()), order.c_str());
    std::string s = detail::take(b);
    check(rc);
    return s;
  }

  std::string ledger_list(std::optional<std::string_view> state = {}, int64_t updated_before_ms = 0,
                          uint32_t limit = 0) const {
    std::optional<std::string> st;
    if (state) st.emplace(*state);
    pay_buf b{nullptr, 0};
    const int rc = pay_ledger_list(&b, detail::need(get()), st ? st->c_str() : nullptr, updated_before_ms, limit);
    std::string s = detail::take(b);
    check(rc);
    return s;
  }

  std::string stats() const {
    pay_buf b{nullptr, 0};
    const int rc = pay_client_stats(&b, detail::need(get()));
    std::string s = detail::take(b);
    check(rc);
    return s;
  }

  // Prometheus text of the client's metrics (pay_client_metrics).
  std::string metrics() const {
    pay_buf b{nullptr, 0};
    const int rc = pay_client_metrics(&b, detail::need(get()));
    std::string s = detail::take(b);
    check(rc);
    return s;
  }

  // Reopens the config's log file (log rotation).
  void reopen_log() const { check(pay_client_reopen_log(detail::need(get()))); }

  // A provider's notification as the HTTP server received it (pay_webhook_apply):
  // the method, the full URL ("https://shop.example/hooks/stripe"), every
  // header, and the raw body bytes, before any parsing. Returns what to answer;
  // a refused or unstorable notification is a reply (400, 503), not an
  // exception. Throws pay::error for PAY_EINVALID (a NUL inside a header),
  // PAY_ECONFIG (no webhook block the profile's scheme needs), PAY_EVERSION.
  webhook_reply apply_webhook(std::string_view method, std::string_view url,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              std::string_view body) const {
    const std::string m(method), u(url);
    std::vector<pay_header> hs;
    hs.reserve(headers.size());
    for (const auto& h : headers) {
      // A C string ends at its first NUL: never hand the library a shortened header.
      if (h.first.find('\0') != std::string::npos || h.second.find('\0') != std::string::npos)
        throw error(PAY_EINVALID, "webhook header " + std::to_string(hs.size()) + " contains a NUL character");
      hs.push_back({h.first.c_str(), h.second.c_str()});
    }
    pay_webhook_request r = PAY_WEBHOOK_REQUEST_INIT;
    r.method = m.c_str();
    r.url = u.c_str();
    r.headers = hs.empty() ? nullptr : hs.data();
    r.header_count = hs.size();
    r.body = body.data();
    r.body_len = body.size();
    pay_webhook_reply out{0, {nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
    struct guard {
      pay_webhook_reply& r;
      ~guard() { pay_webhook_reply_dispose(&r); }
    } g{out};
    check(pay_webhook_apply(&out, detail::need(get()), &r));
    webhook_reply reply;
    reply.status = out.status;
    reply.content_type = detail::take(out.content_type);
    reply.body = detail::take(out.body);
    reply.outcome = detail::take(out.outcome);
    return reply;
  }

 private:
  std::unique_ptr<detail::callbacks> cb_;
};

// ---- Version ----------------------------------------------------------------

inline std::string_view version() noexcept { return pay_version(); }
inline int version_number() noexcept { return pay_version_number(); }

}  // namespace pay

#endif  // PAYRETRY_HPP
