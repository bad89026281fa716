// The modelled payment provider: an in-process idempotency store with the
// semantics its Wire describes (wire.hpp: the built-in table in wire.cpp, or
// a random wire), speaking the wire's answer shapes, and the faults providers
// and the network between add. It is the simulation's ground truth: what it
// charged is what happened, whatever the client believes.
//
// What a Wire varies:
//  - identity: a key header, a key field in the body, or the merchant
//    reference itself, which is permanent;
//  - replay: what a second request under a key it has seen gets back: every
//    stored answer, only 2xx answers (after an error that followed
//    processing a re-send runs the payment again), the current state of the
//    earlier request, or a duplicate refused by reference;
//  - answers: where the id and status live, errors inside HTTP 200,
//    refusals inside a 2xx;
//  - lookup: by merchant reference (lagging replicas answer "not found" for
//    a fresh payment, and a payment whose request did not carry the
//    reference is not found at all), by provider id, a same-key replay or
//    none;
//  - stores: one per account (credential) and per value of the headers and
//    path segment that name an account; keys, references and payments live
//    in their store, charges are counted per order across them all;
//  - OAuth2: a token endpoint (tokens that expire, are revoked, or never
//    come), a 401 for a request without a live token, and a 401 after the
//    payment was processed, the key kept or forgotten;
//  - signatures: requests that carry no valid signature are refused (the
//    request hook's stand-in, or for real: WECHATPAY2-SHA256-RSA2048 and
//    Alipay RSA2, checked with OpenSSL in provider_auth.cpp); answers are
//    signed with the platform / Alipay key when the schedule runs the
//    library's own authenticator.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profile.hpp"
#include "rng.hpp"
#include "transport.hpp"
#include "wire.hpp"

namespace payretry::dst {

class ProviderKeys;

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
  bool lookup = false;           // the request was a lookup
  bool refused_unsigned = false; // refused: it carried no valid signature
  bool unauthorized = false;     // answered 401: no live token, or refused after processing
  // A lookup answered "not found" while the store held a payment under the
  // reference it searched by that charged or may still (processing, or not
  // yet on the replica read): a "not found" that must prove nothing.
  bool hid_a_payment = false;
  // The answer states a payment of this order under this provider id (a
  // create's success or refusal, a lookup that found it): what a
  // cross-order answer replays for another order.
  std::string about_order, about_id;
};

class ProviderModel {
 public:
  explicit ProviderModel(Wire wire) : wire_(std::move(wire)) {}
  const Wire& wire() const { return wire_; }

  // Orders whose payment the card issuer declines (decided per schedule).
  std::map<std::string, bool> declines;
  // Where the money of an order's payment goes (decided per schedule): its
  // first phase, and the one its customer (or merchant) moves it to
  // `after_ms` after it was processed (`then` == `first`: nobody acts).
  // An order without one is paid at once (Wire::at_once) for good.
  struct Flow {
    Phase first = Phase::paid, then = Phase::paid;
    int64_t after_ms = 0;
  };
  std::map<std::string, Flow> flows;
  // How long a key is remembered after its first request (0: forever).
  // After that a same-key request is a new payment, as at a real provider.
  int64_t retention_ms = 0;
  // How long after processing a lookup still answers "not found" (replica lag).
  int64_t read_lag_ms = 0;
  // Set for a schedule that runs the library's own authenticator: requests
  // must carry the real signature of the wire's scheme (else the request
  // hook's stand-in), and answers are signed. `merchant_id` is what a
  // WeChat Pay request must be signed for.
  const ProviderKeys* keys = nullptr;
  std::string merchant_id;

  // What becomes of a create the provider processed: its answer, or a 401
  // from a gateway in front that refused the credential after the charge
  // (a token that expired or was revoked on the way), the key kept as any
  // processed key is, or forgotten (a re-send under it is a new payment).
  enum class AfterProcessing { answer, unauthorized_keeping_key, unauthorized_forgetting_key };

  // One request at monotonic `now_mono` (Unix `now_unix`) with the fault
  // `f`; `latency_ms` is how long the answer takes (a timeout if longer than
  // the request's own). `ra_kind` picks the Retry-After variant for 429/503.
  ProviderReply handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix, int64_t latency_ms,
                       int ra_kind, int64_t slow_ms, AfterProcessing after = AfterProcessing::answer);

  // The OAuth2 token endpoint (Wire::token_path): a token for the account
  // of the client its Basic credential names, live for `life_ms` (whole
  // seconds: expires_in), or a 500, or no answer within the request's time.
  struct TokenAnswer {
    enum Kind { token, server_error, hang } kind = token;
    int64_t life_ms = 3600000;
  };
  TransportResult token_request(const HttpRequest& req, const TokenAnswer& what, int64_t now_mono, int64_t elapsed);
  // Revokes the token `req` carries: every later request under it gets 401.
  bool revoke(const HttpRequest& req);
  // The store `req` reaches (Wire::store_headers), for the world's checks.
  std::string store_of(const HttpRequest& req) const;

  // Lets every processing still running finish, as it would after the run.
  void finish_all();
  // Lets every processing whose time is over by `now_mono` finish (what a
  // lookup or a same-key request would find finished anyway), and every
  // customer act due by then happen.
  void complete_due(int64_t now_mono);

  // A payment as the lookup sees it: by order (reference) and by id; and
  // the truth about its money.
  struct Payment {
    std::string store;           // where it was made: only that store's lookups find it
    std::string order_id;
    std::string reference;       // what the request carried where the lookup searches
    std::string id;
    bool charged = false;
    bool processing = true;
    int64_t at = 0;              // processed at (monotonic)
    std::string identity;        // the key (or body identity) its request carried
    Phase phase = Phase::paid;   // where its money is now
    Phase then = Phase::paid;    // where its customer or merchant moves it, at acts_at
    int64_t acts_at = 0;
    bool ever_held = false, ever_captured = false;
    int64_t amount = 0;     // what its create asked (minor units; 0 when the body said none)
    int64_t refunded = 0;   // what its approved refunds gave back
  };
  const std::vector<Payment>& payments() const { return payments_; }

  // Refunds (Wire::refunds): every one the provider accepted, in order.
  // A refund moves money once, when it is decided approved: then
  // `charges` counts it under the operation row its caller's body names,
  // as a create's charge is counted under its order.
  struct Refund {
    std::string store, id, payment_id, row;  // row "": made elsewhere (a dashboard), no row of the client's
    std::string identity;     // the key its request carried ("" none)
    std::string reference;    // what its body carried at refunds.reference_field ("" none)
    int64_t amount = 0;
    bool processing = true;   // its request is still being processed (slow_processing)
    bool decided = false;     // final (Stripe) or listed among the actions (Checkout.com)
    bool approved = true;     // how it is decided
    int64_t decides_at = 0;   // monotonic ms
    int64_t decided_at = 0;
    bool told = false;        // its acceptance is in refund_news
  };
  const std::vector<Refund>& refunds() const { return refunds_; }
  // What the provider tells of its refunds, in order: what its
  // notifications say (provider_webhooks.cpp writes them in each
  // provider's words). A refund is told once accepted (its request
  // processed: Stripe's refund.created), where it stands then, and again
  // once decided later (approved or declined); one decided as it was
  // accepted is told once.
  struct RefundNews {
    std::string store, refund_id, payment_id;
    std::string order_id;  // its payment's order
    std::string row;       // the operation row it moves money for ("" made elsewhere)
    std::string identity;  // the key its request carried ("" none)
    bool accepted = false; // the news of its acceptance (else of its decision)
    bool decided = false, approved = false;  // where it stands then
    int64_t amount = 0;
  };
  std::vector<RefundNews> refund_news;
  // A refund of payment `payment_id` made elsewhere (the merchant's
  // dashboard, another system: under no key of the client's, for no row of
  // its), of `amount`, decided approved or not at `decides_at` (monotonic).
  // It moves the payment's money like any refund. Nothing when the payment
  // is not in `store` or `amount` is more than is left of it.
  bool refund_elsewhere(const std::string& store, const std::string& payment_id, int64_t amount, bool approved,
                        int64_t decides_at, int64_t now_mono);
  // What is left to refund of payment `payment_id`: its amount less every
  // refund of it not declined (0 when unknown).
  int64_t left_to_refund(const std::string& store, const std::string& payment_id) const;
  // How the provider decides the refunds it accepts, drawn per schedule:
  // the share decided later (Stripe: pending; Checkout.com: not listed
  // yet), how much later at most, and the share declined (nothing moves).
  int refund_later_percent = 0, refund_declined_percent = 0;
  int64_t refund_later_max_ms = 0;
  Rng refund_rng{0};
  // Refund requests naming no payment of the store they reached (the
  // client sent another payment's id, or none).
  long refunds_of_no_payment = 0;
  // Payment order -> refunds of it that moved money.
  std::map<std::string, int> refunds_moved;

  // Every payment whose state the provider decided, in the order it decided
  // them: what its notifications (webhooks) tell, in the store it was made.
  // A payment's later moves (its customer paid or abandoned it, its
  // merchant captured or voided it) are decided too, each with its phase.
  struct Decided {
    std::string store, order_id, id;
    bool charged = false;
    std::string identity;  // the key (or body identity) the request that made it carried ("" none)
    Phase phase = Phase::paid;
  };
  std::vector<Decided> decided;

  // A lie in the shape of a genuine answer to `req` (a create's success, a
  // lookup's status), naming the payment `fake_id`, signed as the provider
  // signs: what a forged or stale answer says, so that believing one shows.
  HttpResponse lie(bool lookup, const std::string& order, const std::string& fake_id, bool says_charged) const;
  // Signs `a` as the provider does at Unix time `unix_ms` (nothing without
  // keys, or for a scheme that signs nothing).
  void sign(HttpResponse& a, int64_t unix_ms);

  std::map<std::string, int> charges;       // by order id
  std::map<std::string, std::string> charged_id;  // order -> provider id of its (first) charge
  std::map<std::string, std::string> order_of_id;  // every provider id the model gave out -> its order
  long lookups = 0, rejected_unsigned = 0, wrong_encodings = 0;
  long tokens_issued = 0, unauthorized = 0, unauthorized_after = 0, keys_forgotten = 0;
  std::vector<std::string> rejections;  // why requests were refused as unsigned (for --verbose)

  // The stand-in signature the request hook adds when the schedule signs
  // through the hook instead of the library's authenticator.
  static std::string signature(const HttpRequest& req);

 private:
  struct KeyState {
    std::string store;
    std::string order_id;
    std::string body;
    std::string id;              // the provider's id of the payment this key made
    std::string identity;        // the key as the request carried it ("" none)
    std::string reference;
    int64_t first_seen = 0;      // monotonic ms of the first request
    bool processing = false;     // started, not yet done
    int64_t done_at = 0;         // monotonic ms when processing completes
    bool charge_on_done = false;
    bool charged = false;
    int status = 0;              // stored answer ("" body: nothing stored)
    std::string stored_body;
    std::vector<std::pair<std::string, std::string>> stored_headers;
    bool stored = false;
    std::string refund_id;       // this key made a refund, not a payment
  };
  enum class Say { success, decline, error, in_progress, mismatch, already_paid, unsigned_request };

  struct Token {
    std::string account;
    int64_t expires_at = 0;  // monotonic ms
    bool revoked = false;
  };

  ProviderReply respond(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix, int64_t latency_ms,
                        int ra_kind, int64_t slow_ms, AfterProcessing after);
  ProviderReply lookup(const HttpRequest& req, int64_t now_mono, int64_t elapsed);
  void complete(KeyState& k);
  // Customers and merchants act on the payments whose moment came.
  void customers_act(int64_t now_mono);
  // The phase of payment `id` now (paid when unknown).
  Phase phase_of(const std::string& id) const;
  KeyState& process_new(const std::string& store, const std::string& key, const std::string& identity,
                         const std::string& order, const std::string& reference, std::string_view body, int64_t now,
                         int64_t slow_ms, const std::string& refund_of = "");
  // A refund of payment `payment` (in `store`), made under `key`.
  KeyState& process_refund(const std::string& store, const std::string& key, const std::string& identity,
                           const std::string& row, const std::string& payment, std::string_view body, int64_t now,
                           int64_t slow_ms);
  // A refund's answer: to its POST (`decided`: decided as it was accepted)
  // or its lookup (`decided`: decided by now).
  TransportResult refund_answer(const Refund& r, int64_t elapsed, bool decided) const;
  ProviderReply refund_lookup(const HttpRequest& req, int64_t elapsed);
  // Refunds whose moment came are decided.
  void refunds_act(int64_t now_mono);
  void decide(Refund& r, int64_t now_mono);
  // Appends a refund's news: its acceptance, or its decision.
  void tell(Refund& r, bool accepted);
  Payment* payment_by_id(const std::string& store, const std::string& id);
  std::string identity_of(const HttpRequest& req, std::string& reference) const;
  // `phase`: where a success's money is (its words).
  TransportResult say(Say what, const std::string& id, const std::string& reference, int64_t elapsed,
                      Phase phase = Phase::paid) const;
  TransportResult render_outcome(const KeyState& k, int64_t elapsed) const;
  // "" when the request carries the signature the provider checks, else why not.
  std::string unsigned_why(const HttpRequest& req, int64_t now_unix) const;
  // The account a request's credential names: a fixed bearer's value, or
  // the account its OAuth2 token was issued to ("" none).
  std::string account_of(const HttpRequest& req) const;
  // "" when the request carries a live token (or the wire takes none), else why not.
  std::string token_refusal(const HttpRequest& req, int64_t now_mono) const;

  Wire wire_;
  std::map<std::string, KeyState> keys_;  // by store, then the identity ("<store>\n<key>")
  std::map<std::string, Token> tokens_;
  std::vector<Payment> payments_;
  std::vector<Refund> refunds_;
  int next_id_ = 0;
  int next_token_ = 0;
  uint64_t answers_signed_ = 0;
};

// Builds the Retry-After variant `kind` at Unix time `now_unix`.
RetryAfterTruth make_retry_after(int kind, int64_t now_unix);
inline constexpr int kRetryAfterKinds = 14;

// A member of a request body at a dotted path ("biz_content.out_trade_no"),
// read the way the provider reads its encoding: JSON, form fields with
// bracketed nesting ("metadata[order_id]"), or the gateway form whose first
// segment names a field holding JSON text.
std::string body_member(const Wire& w, std::string_view body, const std::string& dotted);

// The payment a refund's POST names ("" none), where the wire speaks
// refunds; nullopt when the request is no refund's POST.
std::optional<std::string> refund_payment(const Wire& w, const HttpRequest& req);

}  // namespace payretry::dst
