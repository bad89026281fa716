// The engine: one logical payment turned into a safe sequence of attempts
// (docs/design.md "Verdicts", "Retries"). Every seam (transport, clock, sleeper, randomness, keys) is
// passed in, so tests drive the real engine through scripted faults.
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include "attempt_log.hpp"
#include "auth.hpp"
#include "budget.hpp"
#include "classify.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "json_util.hpp"
#include "profile.hpp"
#include "random.hpp"
#include "result.hpp"
#include "stats.hpp"
#include "transport.hpp"

namespace payretry {

// How a driver's attempt to make an attempt durable went.
struct Recorded {
  enum Kind { ok, lease_lost, store_failed } kind = ok;
  std::string why;  // store_failed: the store's error
};

struct SubmitRequest {
  std::string order_id;
  std::string_view body;        // borrowed for the call; sent as is on every attempt
  std::string idempotency_key;  // empty: generate one
  std::string path;             // empty: config's create_path, else the profile's
  int64_t deadline_ms = 0;      // 0: the config's; else the smaller
  // This submission's own headers, on every attempt (not on lookups): a
  // Stripe-Account, say. Engine::validate refuses those payretry sets.
  Headers headers;
  // W3C trace context: a `traceparent` header on every attempt, and in each
  // attempt and outcome log line. Empty: none.
  std::string traceparent;
  // Resuming a payment an earlier run (or a crashed worker) started.
  unsigned first_attempt = 1;
  bool prior_may_have_processed = false;
  // Earlier sends were cleared only by a lookup's timed "not found"
  // (HistoryReading::cleared_by_lookup): a 401 then never settles FAILED.
  bool prior_cleared_by_lookup = false;
  // Set by the ledger flow (PaymentFlow::resume_request), not by callers.
  // Engine::validate already passed this order id, body, path and these
  // headers (PaymentFlow::admit), so a run checks only the key it was given
  // (the row's, which may predate this process). And the deadline is the one
  // the flow computed from the lease and the key's expiry: it may leave no
  // time for an attempt, which then ends the run UNKNOWN instead of failing
  // the call (an earlier run may have charged).
  bool from_ledger_flow = false;
  // Unix ms the run's lease ends (0: no lease). No byte leaves after it.
  int64_t lease_until_unix = 0;
  std::string claim;  // the lease's fencing token, carried on each request (HttpRequest::claim)
  // Run by a concurrent engine's thread, which must never wait: a
  // credential still being fetched makes the attempt wait as a timer
  // (Authenticator::authorize_now), not the thread.
  bool on_engine_thread = false;
  // `body` as Engine::validate parsed it, when it did (borrowed; it must
  // outlive the AttemptRun's constructor): the run then prepares the bytes it
  // sends from it instead of parsing the same body again. nullptr: parse.
  const cJSON* parsed_body = nullptr;
  // Called with each attempt that will be retried, before the backoff sleep
  // (the ledger records it). lease_lost stops the run: this worker no
  // longer owns the payment. store_failed ends it UNKNOWN, flagged as not
  // durably recorded (an attempt was sent). Unset: always ok.
  std::function<Recorded(const AttemptRecord&)> before_retry;
};

// What a request hook sees of one attempt.
struct AttemptView {
  const std::string& url;
  const std::string& path;
  const std::string& order_id;
  const std::string& idempotency_key;
  const std::string& key_header;  // hooks may not set it themselves
  std::string_view body;
  unsigned attempt;
  int64_t unix_ms;
  const char* method = "POST";  // "GET" or "POST" for a lookup
};

// Returns an empty string to send, else why not. Headers it adds go out with
// this attempt only.
using RequestHook = std::function<std::string(const AttemptView&, Headers& extra)>;

struct EngineDeps {
  Transport& transport;
  Clock& clock;
  Sleeper& sleeper;
  Random& jitter;
  KeySource& keys;
  AttemptLog& log;
  RetryBudget& budget;
  Stats& stats;
};

class AttemptRun;

class Engine {
 public:
  // `auth` (may be null: fixed headers, or a hook, authenticate) signs every
  // attempt after the hook ran and checks every answer; it outlives the engine.
  Engine(const Config& config, const Profile& profile, EngineDeps deps, RequestHook hook = {},
         Authenticator* auth = nullptr);

  // Validates, then runs the attempts. Throws Error for a failed call
  // (nothing sent, or a key/parameter mismatch); otherwise every path,
  // including transport chaos, ends in a PaymentResult.
  PaymentResult submit(const SubmitRequest& request);

  const Profile& profile() const { return profile_; }
  // Throws Error for input that must never be sent.
  void validate(const SubmitRequest& r) const { validate(r, nullptr); }
  // The same, handing over the body as parsed if a check parsed it (else
  // `parsed` is left empty), for SubmitRequest::parsed_body.
  void validate(const SubmitRequest& r, JsonPtr* parsed) const;
  // Throws Error (PAY_EKEY) for a key that breaks the profile's length or charset.
  void check_key(const std::string& key) const;
  // The path this request is POSTed to.
  std::string path_for(const SubmitRequest& r) const;
  // The key the profile's identity dictates for this request: the body's own
  // key field or merchant reference when the profile puts the identity in
  // the body, else the caller's key (empty: to be generated). Throws Error
  // when the body contradicts the caller's key or the order id. `parsed`:
  // r.body as validate() parsed it, if at hand (else it is parsed here).
  std::string identity_key(const SubmitRequest& r, const cJSON* parsed = nullptr) const;

 private:
  friend class AttemptRun;
  // Content-Type only with a body, or for a form: a JSON operation the
  // provider defines without one (PayPal's void) is sent with neither.
  Headers base_headers(const std::string& key, bool has_body) const;
  // SubmitRequest::headers and traceparent (validate() calls it).
  void check_submission_headers(const SubmitRequest& r) const;
  static constexpr std::size_t kMaxSubmissionHeaders = 64;

  const Config& config_;
  const Profile& profile_;
  EngineDeps d_;
  RequestHook hook_;
  Authenticator* auth_;
  std::vector<std::string> secrets_;
};

// One submission's attempts as a state machine, so that the same decisions
// drive both Engine::submit (a thread that sleeps) and the concurrent engine
// (libcurl multi and timers, many payments on one thread). The driver does
// what each step asks, then reports back:
//
//   begin() -> send ; sent(result) -> record | done ; recorded(owner) -> sleep | done ;
//   woke() -> send | done
//
// `record` asks the driver to make the attempt durable before the backoff
// (SubmitRequest::before_retry in the threaded form); `done` means result()
// is final. begin(), sent() and woke() throw Error for a failed call.
// Every request carries a may_start gate that refuses the send once the
// deadline or the lease is over, checked by the transport at the last moment.
class AttemptRun {
 public:
  enum class Kind { send, record, sleep, done };
  struct Step {
    Kind kind = Kind::done;
    const HttpRequest* request = nullptr;  // send: valid until the next call
    const AttemptRecord* attempt = nullptr;  // record: the attempt to make durable
    int64_t delay_ms = 0;                  // sleep
  };

  // Validates and fixes the key and bytes. `request.body` must outlive the run.
  AttemptRun(Engine& engine, const SubmitRequest& request);
  AttemptRun(const AttemptRun&) = delete;
  AttemptRun& operator=(const AttemptRun&) = delete;

  Step begin();
  Step sent(TransportResult t);
  Step recorded(const Recorded& how);
  Step woke();
  PaymentResult& result() { return r_; }
  const std::string& order_id() const { return r_.order_id; }

 private:
  Step attempt();
  Step authorize_and_send();
  Step finish(Outcome o, const std::string& why);
  // The answer's signature did not hold: nothing in it can be believed.
  Step untrusted(int http_status, const std::string& why);
  // A 401 under a credential the authenticator just renewed.
  Step unauthorized(const TransportResult& t);
  void record_attempt();

  Engine& e_;
  const RetryPolicy& policy_;
  PaymentResult r_;
  std::string keyed_body_;
  std::string_view body_;
  std::string path_;
  std::string url_;
  // The request every attempt sends: set up once (URL, the payment's own
  // headers, body, claim, gate); an attempt adds only the hook's and the
  // signer's headers after the first base_header_count_ and its timeouts.
  HttpRequest http_;
  std::size_t base_header_count_ = 0;
  AttemptRecord a_;
  std::string retry_reason_;
  int64_t started_ = 0;
  int64_t deadline_ = 0;
  int64_t lease_until_ = 0;  // unix ms; 0: none
  int64_t attempt_mono_ = 0; // when the current attempt began (monotonic)
  unsigned first_ = 1;
  unsigned n_ = 1;
  bool may_have_processed_ = false;
  bool cleared_by_lookup_ = false;  // SubmitRequest::prior_cleared_by_lookup
  bool renewed_credentials_ = false;  // a 401 already bought one fresh credential
  std::size_t hook_header_count_ = 0;  // http_.headers up to the hook's, before the signer's
  bool nonblocking_auth_ = false;      // SubmitRequest::on_engine_thread
  bool awaiting_credential_ = false;   // the sleep step polls for a credential being fetched
  int64_t awaiting_credential_since_ = -1;  // monotonic ms the attempt first waited for one
  // How often an attempt waiting for a credential asks again: a token comes
  // within this of its arrival, and a thousand waiting payments cost tens
  // of thousands of timer turns a second at most.
  static constexpr int64_t kCredentialPollMs = 25;
};

}  // namespace payretry
