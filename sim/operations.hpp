// Operations on a payment after its create: captures, refunds and cancels (voids, closes), each
// at the provider's own endpoint, with the provider's own key and replay rules, and the money
// rules they keep (a refund never returns more than was captured, a capture never takes more
// than was authorized, only an uncaptured payment is canceled). The simulator's truth records
// every operation it executed and counts its money movements per operation key, so a test can
// prove that a client's retries never moved money twice.
//
// Who does what: operation_profiles.cpp holds each provider's endpoints, request fields,
// answers and error codes (the table); operations.cpp the money rules, the keys and the
// faults (State::post_operation), and the book below.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "money.hpp"
#include "profiles.hpp"

namespace payretry_sim {

enum class OpKind : uint8_t { capture, refund, cancel };
std::string_view op_kind_name(OpKind k);

// What a request to an operation endpoint is, from its method and path alone (the body is read
// by parse_operation): routed before the create and lookup routes, whose paths it shares.
struct OpTarget {
  OpKind kind = OpKind::refund;
  bool lookup = false;  // a GET of an operation (or Alipay's refund query): nothing moves
  // PayPal: the path names an order, an authorization or a capture; Checkout.com's
  // GET /payments/{id}/actions lists every action.
  enum class Names : uint8_t { payment, order, authorization, capture, refund, actions } names = Names::payment;
  std::string id;  // the id in the path (decoded); empty when the body names the payment
  std::string sub;  // a second id in the path (Mollie's refund id after the payment's)
  std::string method;  // Alipay: the gateway method (alipay.trade.refund, ...)
};

// True when (method, path) is one of profile `p`'s operation endpoints. Alipay's are gateway
// methods (alipay.trade.refund, ...): gate.cpp admits them and calls gateway_operation.
bool route_operation(const Profile& p, std::string_view method, std::string_view path, OpTarget* out);
// Alipay: the OpTarget of a gateway method, false for a method that is no operation.
bool gateway_operation(std::string_view method, OpTarget* out);
// Alipay's operation methods, for the gateway's list of the methods it knows.
bool is_gateway_operation(std::string_view method);

// An operation request as the provider reads it.
struct OpRequest {
  OpTarget target;
  // The id the request names the payment (or the capture, the authorization, the refund) by:
  // the path's, or the body's (Stripe's payment_intent, WeChat Pay's and Alipay's
  // out_trade_no).
  std::string id;
  bool has_amount = false;
  int64_t amount = 0;  // minor units; without it the rest (capture: what is still authorized)
  std::string currency;
  // The operation's identity: the key header, Square's idempotency_key, WeChat Pay's
  // out_refund_no, Alipay's out_request_no (out_trade_no when absent). Empty: none, every
  // request is new (Square's complete and cancel, PayPal's void).
  bool has_key = false;
  std::string key;
  // What a same-key request must repeat: the body (Alipay: biz_content).
  std::string fingerprint;
  // A capture that ends the authorization: what is left uncaptured is released (Stripe always,
  // Checkout.com's capture_type Final, PayPal's final_capture true, Mollie, Square).
  bool final_capture = true;
  // WeChat Pay's amount.total: must be the order's total.
  int64_t total = -1;
  // Alipay: the refund named its out_request_no (without one only a full refund is taken).
  bool request_no = true;
  // Adyen: the merchant's reference for the modification, echoed in the answer. Checkout.com:
  // the action's reference, echoed in the 202 and listed with the action by
  // GET /payments/{id}/actions.
  std::string reference;
};

// Reads an operation request's fields. False with `refusal` set to the provider's answer when
// the body is not what the endpoint takes (nothing is recorded then).
bool parse_operation(const Profile& p, const OpTarget& t, std::string_view body, bool has_header_key,
                     std::string_view header_key, OpRequest* out, Reply& refusal);

// One operation the simulator executed (the truth): what it was, how much, with which key,
// under which provider id, and whether it moved money.
struct OperationRecord {
  OpKind kind = OpKind::refund;
  int64_t amount = 0;
  std::string key;  // "" for a request without one
  uint64_t number = 0;  // its own id's number (one counter with the payments)
  uint64_t parent = 0;  // PayPal: the capture a refund returns (0: the payment's own capture)
  int64_t at_ms = 0;    // Unix ms, the simulator's clock
  // false: refused by the provider after acceptance (Adyen's success false, Checkout.com's
  // *_declined after its 202, a Stripe refund answered pending that failed)
  bool moved = true;
  // Checkout.com: the request's `reference` ("" none), which GET /payments/{id}/actions lists
  // with the action ("Your reference for the action", nas_spec PaymentAction).
  std::string reference;
};

// A payment's operations and where its money is.
struct PaymentOps {
  int64_t captured = 0;
  int64_t refunded = 0;
  int captures = 0;
  bool capture_closed = false;  // a final capture (or a cancel) ended the authorization
  std::vector<OperationRecord> ops;
  std::map<std::string, int> moves_by_key;  // money movements per operation key ("" none)
};

// What the provider answers about an operation and its payment.
struct OpView {
  const Profile* profile = nullptr;
  PaymentView payment;
  const PaymentOps* ops = nullptr;
  const OperationRecord* op = nullptr;  // the operation answered (null: the payment itself)
  bool replayed = false;  // a repeat of an executed operation (Alipay's fund_change N)
  bool lookup = false;    // a GET of the operation: the provider's final word (Square
                          // COMPLETED, Mollie refunded, WeChat Pay SUCCESS)
  std::string key;        // the operation's own identity as sent (WeChat's out_refund_no, ...)
  std::string_view method;  // Alipay: the gateway method answered
  std::string_view reference;  // Adyen: the request's own reference ("" none)
};

// Why an operation is refused by the money rules.
enum class OpError : uint8_t {
  not_found,        // no such payment (or capture, authorization, refund) in this scope
  exceeds,          // more than is left: to capture (authorized - captured) or to refund
  not_capturable,   // nothing held to capture: paid at once, captured already, canceled
  not_refundable,   // nothing captured to refund: waiting, canceled
  held,             // nothing captured to refund yet: the payment is only held
  not_cancelable,   // captured (or already final): a cancel would release nothing
  fully_refunded,   // everything captured is back (PayPal CAPTURE_FULLY_REFUNDED)
  total_mismatch,   // WeChat Pay: amount.total is not the order's
  partial_without_request_no,  // Alipay: a partial refund needs out_request_no
  intent_mismatch,  // PayPal: capturing an order whose intent is AUTHORIZE, or not approved
  order_captured,   // PayPal: capturing an order that is captured already
  voided,           // PayPal: capturing a voided authorization
};

// The answers, in each provider's shape (operation_profiles.cpp).
void format_operation(const OpView& v, Reply& out);
// `gateway_method`: Alipay's method, whose member the answer is in ("" elsewhere).
void format_operation_error(const Profile& p, OpKind kind, OpError e, int64_t left, std::string_view currency,
                            std::string_view gateway_method, Reply& out);
// Same key, other parameters; same key while the first request runs.
void format_operation_mismatch(const Profile& p, std::string_view gateway_method, Reply& out);
void format_operation_in_use(const Profile& p, std::string_view gateway_method, Reply& out);
// Stripe's Refund object, as the refund's answer, its lookup and its notifications show it.
void format_stripe_refund(const Profile& p, uint64_t number, uint64_t payment, int64_t amount,
                          std::string_view currency, int64_t created_s, std::string_view status, std::string& out);
// A Stripe refund's status: succeeded when it moved money; one that fails later (moved false)
// was answered pending, and reads failed once looked up.
std::string_view stripe_refund_status(const OperationRecord& op, bool lookup);
// Checkout.com's GET /payments/{id}/actions.
void format_actions(const Profile& p, const PaymentView& payment, const PaymentOps& ops, Reply& out);
// Alipay: the answer member of a gateway method ("alipay.trade.refund" ->
// "alipay_trade_refund_response").
std::string gateway_member(std::string_view method);
// The provider id of an operation (Stripe re_, Adyen's modification pspReference, PayPal's
// capture and refund ids, Square's refund id, Checkout.com's act_, Mollie's re_ and cpt_,
// WeChat Pay's refund_id); and back.
std::string operation_id(const Profile& p, OpKind kind, uint64_t number);
bool parse_operation_id(const Profile& p, OpKind kind, std::string_view id, uint64_t* number);
// The id the truth names an operation by: its own, or the payment's `payment` where the provider
// gives the operation no object of its own (Stripe's capture, a close, ...).
std::string operation_truth_id(const Profile& p, const OperationRecord& r, uint64_t payment);

// How each provider keeps an operation's key (operation_profiles.cpp, with sources).
enum class OpReplay : uint8_t {
  stored,         // the first answer again (Stripe, Adyen, Square, Checkout.com, Mollie)
  current_state,  // the operation as it is now, 200 (PayPal: "the latest status")
  business_key,   // the key is the merchant's own number, kept for good: the operation's
                  // state again (WeChat Pay's out_refund_no, Alipay's out_request_no)
};
struct OpRules {
  OpReplay replay = OpReplay::stored;
  bool cache_only_2xx = false;  // Checkout.com: a 4xx/5xx answer leaves the key unused
  bool replay_marker = false;   // Idempotent-Replayed: true (Stripe, Mollie)
  int64_t key_window_s = 0;     // after this the key is forgotten (0: never)
  bool multiple_captures = false;  // a capture that is not final leaves the rest capturable
  bool async_outcome = false;   // Adyen: 201 received; the money rules answer by notification
};
const OpRules& op_rules(const Profile& p);

// Every payment's operations, the operation keys and the operation ids, under one lock: an
// operation checks and moves money in one step, so two concurrent refunds cannot both pass the
// "not more than captured" rule.
class OperationBook {
 public:
  struct KeyRecord {
    enum class State : uint8_t { fresh, in_progress, done } state = State::fresh;
    uint64_t seen = 0;       // requests with this key so far: the n of the fault schedule
    int64_t first_ms = 0;    // when it was first processed (the key window runs from there)
    int64_t busy_until_ms = 0;  // a `slow` answer still held: same-key requests meet in_use
    std::string fingerprint;
    int status = 0;
    std::string body;
    uint64_t payment = 0;
    uint64_t op = 0;  // the operation it executed (0: none, e.g. refused)
  };
  std::mutex mu;
  std::unordered_map<uint64_t, PaymentOps> payments;  // by payment number
  std::unordered_map<std::string, KeyRecord> keys;    // scoped operation keys
  std::unordered_map<std::string, uint64_t> keyless_seen;  // fault schedule n without a key
  std::unordered_map<uint64_t, uint64_t> op_payment;  // operation number -> payment number
  void clear() {
    payments.clear();
    keys.clear();
    keyless_seen.clear();
    op_payment.clear();
  }
};

}  // namespace payretry_sim
