// The providers' notifications (webhooks): one payment's final state written in the provider's
// own format and signed the provider's way. Pure: no socket, no thread (webhook_sender.hpp
// delivers them). The receiver they are made for is payretry's (src/auth/webhook_scheme.hpp and
// the "webhook" blocks of src/profiles/builtin/*.json); each format cites its source.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "crypto.hpp"
#include "keys.hpp"
#include "profiles.hpp"

namespace payretry_sim {

// What --webhook-* configure; shared read-only by the sender.
struct WebhookSettings {
  std::string url;         // http://host:port/path; empty: no notifications
  std::string secret;      // HMAC schemes (Stripe, Square, Checkout.com); Adyen: a hex key
  std::string api_v3_key;  // WeChat Pay: the 32-byte APIv3 key that seals `resource`
  std::string webhook_id;  // PayPal: the endpoint's webhook id (signed)
  // WeChat Pay's platform key and Alipay's key sign notifications as they sign answers.
  std::shared_ptr<const KeySet> keys;
  // PayPal: the key behind the certificate the receiver pins (paypal_webhook_key.pem).
  std::shared_ptr<const RsaKey> paypal_key;
};

// A payment whose final state the provider just decided.
struct PaymentEvent {
  uint64_t number = 0;   // the id the sim gave it, in the profile's payment_id shape (0: none)
  std::string order_id;  // the merchant reference the create carried
  int64_t amount = 0;    // minor units
  std::string currency;
  bool charged = false;  // false: declined
  // Where its money is now and what its create asked (money.hpp): the notification carries
  // the provider's word for it. A create notifies its first state, each later move its new one.
  Money money = Money::paid;
  Wait wait = Wait::none;
  bool manual_capture = false;
  bool was_authorized = false;
  uint8_t move = 0;  // 0: the create's notification; n: the n-th move's (its own event ids)
  // The key the request that caused it carried ("" none): the create's, or for an operation's
  // notification the operation's own. Stripe's event names it (request.idempotency_key).
  std::string idempotency_key;
  std::string account;          // the --scope-header value it was made under ("" none): a Connect event's account
  // An operation's own notification (operations.hpp; Adyen's CAPTURE, REFUND and CANCELLATION
  // modifications, Checkout.com's payment_captured ... payment_void_declined, Stripe's refund.*):
  // the operation's number (its id, in operation_id's shape), its kind (OpKind), its amount and
  // whether it went through. op_number 0: a notification of the payment's own state, as above.
  uint64_t op_number = 0;
  uint8_t op_kind = 0;
  int64_t op_amount = 0;
  bool op_success = true;
  std::string op_reason;  // why it did not go through
  // Which of an operation's notifications this is: the one its request caused, or one of a later
  // change the provider made on its own (Stripe: a pending refund that failed is notified
  // refund.updated and refund.failed). Each has its own event id.
  enum class OpPhase : uint8_t { made, updated, failed } op_phase = OpPhase::made;
  // Stripe: the Refund's status as the notification shows it ("succeeded", "pending", "failed").
  std::string op_status;
  int64_t op_created_s = 0;  // when the operation was made (Stripe's Refund.created)
  // Sent this much later than the sender's own delay: a change the provider makes after its
  // answer is notified after the notification of the answer's state.
  int after_ms = 0;
};

// The copies a notification can go out as.
enum class NoticeVariant {
  real,
  forged,  // a bad signature: what an attacker without the key sends
  stale,   // signed with a time outside the scheme's window (Stripe, WeChat Pay only)
};

struct Notice {
  std::string event_id;  // what the profile's webhook block reads as the event id
  std::string type;      // ... and as its type
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type/-Length
  std::string body;
};

// Whether `p` sends a notification for `e` at all: not for `generic`, and not where the provider
// notifies nothing (a PayPal or Mollie create that was declined made no object; WeChat Pay
// notifies successes only; nobody but Stripe (requires_action) and Checkout.com
// (payment_pending) notifies a payment that waits for its customer; PayPal says nothing of an
// order that was never approved).
bool sends_notice(const Profile& p, const PaymentEvent& e);

// Whether `variant` exists for `p`: `stale` only where a signed time has a window.
bool has_variant(const Profile& p, NoticeVariant variant);

// Writes the notification. `seed` makes ids and nonces repeatable; `now_s` is the wall clock
// (signed times must be current to verify). Throws std::invalid_argument when a setting the
// profile needs is missing (checked up front by check_webhook_settings).
Notice build_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                    NoticeVariant variant, int64_t now_s);

// "" when `s` has what profile `p`'s notifications need (and the URL is http://host:port/path
// on an IPv4 address or localhost), otherwise what is missing.
std::string check_webhook_settings(const Profile& p, const WebhookSettings& s);

}  // namespace payretry_sim
