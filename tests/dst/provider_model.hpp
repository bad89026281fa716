// The modelled payment provider: an in-process idempotency store with the
// semantics each real provider documents, speaking the wire shapes its
// built-in profile reads, and the faults providers and the network between
// add. It is the simulation's ground truth: what it charged is what happened,
// whatever the client believes.
//
// What differs per provider (tests/dst/wire.cpp holds the table):
//  - identity: a key header (Stripe, Adyen, PayPal, Checkout.com, Mollie), a
//    key field in the body (Square), or the merchant reference itself, which
//    is permanent (WeChat Pay, Alipay);
//  - replay: what a second request under a key it has seen gets back: every
//    stored answer (Stripe, Mollie), only 2xx answers, so that after an error
//    that followed processing a re-send runs the payment again (Checkout.com,
//    Square, Adyen), the current state of the earlier request (PayPal), or a
//    duplicate refused by reference (WeChat Pay, Alipay);
//  - answers: errors inside HTTP 200 (Alipay codes, Adyen refusals), status
//    words, where the payment id lives;
//  - lookup: by merchant reference (Checkout.com, WeChat Pay, Alipay; lagging
//    replicas answer "not found" for a fresh payment, and a payment made
//    under another reference is not found at all), by provider id (PayPal,
//    Square, Mollie), a same-key replay (Stripe) or none (Adyen, generic);
//  - signatures: WeChat Pay and Alipay refuse requests (lookups included)
//    that carry no valid signature.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profile.hpp"
#include "transport.hpp"

namespace payretry::dst {

enum class Fault {
  none,
  refuse,               // connect refused: nothing written
  reset_before,         // written, reset before the provider read it
  timeout_before,       // written, stuck before processing, client times out
  lost_response,        // processed, then the connection resets
  timeout_after,        // processed, the answer never arrives in time
  slow_processing,      // processing takes longer than the attempt: same key gets "in progress" meanwhile
  throttled,            // 429 with a (possibly hostile) Retry-After, before processing
  unavailable,          // 503 before processing, sometimes with Retry-After
  error_after,          // processed (charged), then a 500; the provider's stored answer is the success
  error_stored,         // processed (charged), and the error answer itself is what the provider stores
  conflict_storm,       // "in progress" whatever the key's state
  stream_reset,         // processed, then an HTTP/2 stream reset (a transport error, not a timeout)
  crash_before_send,    // the client process dies before any byte leaves
  crash_after_process,  // the provider processed it, then the client process dies
  kCount
};
const char* fault_name(Fault f);

// How one provider speaks. Built from the provider's documented behaviour
// for each built-in profile (wire.cpp); `generic` gets one of the documented
// behaviours per schedule, since a provider payretry knows nothing about may
// be any of them.
struct Wire {
  std::string profile;
  ReplayKind replay = ReplayKind::all_answers;
  enum class Identity { header, body_key, reference } identity = Identity::header;
  std::string key_header = "Idempotency-Key";
  std::string reference_path;  // where the merchant reference lives in the body ("" none)
  bool signed_requests = false;
  // Creates must be form-encoded (Stripe v1): any other body is refused
  // with a 400 before the idempotency layer, as Stripe does.
  bool form_bodies = false;
  // Alipay's gateway form: top-level members are form fields, biz_content
  // a JSON string; creates and lookups alike. Anything else is refused.
  bool gateway_form = false;
  enum class Lookup { none, replay, by_reference, by_id } lookup = Lookup::none;
  std::string lookup_path;     // the path prefix of a lookup request
  std::string key_field;       // Square: the body's key member
  std::string id_prefix = "pi_";
  // success_only: may an error answer the provider did not store be lost on
  // the way back (so that the client sees only a timeout)? Documented for
  // Checkout.com and Square; providers whose replay is undocumented
  // ("replay": "none") are assumed to store what processing produced, an
  // error that is not stored being one the client sees.
  bool hidden_uncached_errors = true;
};
// `undocumented` is the behaviour chosen for a provider whose replay the
// profile marks "none" (generic, adyen): any documented behaviour.
Wire wire_for(const std::string& profile, ReplayKind undocumented);

// What a Retry-After header the provider sent should mean, decided by the
// model from how it built the header, not by the parser under test.
struct RetryAfterTruth {
  std::string header;            // empty: no header
  std::optional<int64_t> ms;     // nullopt: not a valid delay, must be ignored
};

struct ProviderReply {
  TransportResult result;
  RetryAfterTruth retry_after;
  bool crash = false;            // the client dies now (after any processing)
  bool processed = false;        // the provider's application handled this request
};

class ProviderModel {
 public:
  explicit ProviderModel(Wire wire) : wire_(std::move(wire)) {}
  const Wire& wire() const { return wire_; }

  // Orders whose payment the card issuer declines (decided per schedule).
  std::map<std::string, bool> declines;
  // How long a key is remembered after its first request (0: forever).
  // After that a same-key request is a new payment, as at a real provider.
  int64_t retention_ms = 0;
  // How long after processing a lookup still answers "not found" (replica lag).
  int64_t read_lag_ms = 0;

  // One request at monotonic `now_mono` (Unix `now_unix`) with the fault
  // `f`; `latency_ms` is how long the answer takes (a timeout if longer than
  // the request's own). `ra_kind` picks the Retry-After variant for 429/503.
  ProviderReply handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix, int64_t latency_ms,
                       int ra_kind, int64_t slow_ms);

  // Lets every processing still running finish, as it would after the run.
  void finish_all();

  std::map<std::string, int> charges;       // by order id
  std::map<std::string, std::string> charged_id;  // order -> provider id of its (first) charge
  long lookups = 0, rejected_unsigned = 0, wrong_encodings = 0;

  // The signature a request must carry when the provider checks them.
  static std::string signature(const HttpRequest& req);

 private:
  struct KeyState {
    std::string order_id;
    std::string body;
    int64_t first_seen = 0;      // monotonic ms of the first request
    bool processing = false;     // started, not yet done
    int64_t done_at = 0;         // monotonic ms when processing completes
    bool charge_on_done = false;
    bool charged = false;
    int status = 0;              // stored answer ("" body: nothing stored)
    std::string stored_body;
    bool stored = false;
  };
  // A payment as the lookup sees it: by order (reference) and by id.
  struct Payment {
    std::string order_id;
    std::string reference;       // what the request carried where the lookup searches
    std::string id;
    bool charged = false;
    int64_t at = 0;              // processed at (monotonic)
  };

  ProviderReply lookup(const HttpRequest& req, int64_t now_mono, int64_t elapsed);
  void complete(KeyState& k, int64_t now);
  KeyState& process_new(const std::string& key, const std::string& order, const std::string& reference,
                         std::string_view body, int64_t now, int64_t slow_ms);
  std::string identity_of(const HttpRequest& req, const std::string& order, std::string& reference) const;
  TransportResult render_outcome(const KeyState& k, int64_t elapsed) const;

  Wire wire_;
  std::map<std::string, KeyState> keys_;
  std::vector<Payment> payments_;
  int next_id_ = 0;
};

// Builds the Retry-After variant `kind` at Unix time `now_unix`.
RetryAfterTruth make_retry_after(int kind, int64_t now_unix);
inline constexpr int kRetryAfterKinds = 14;

}  // namespace payretry::dst
