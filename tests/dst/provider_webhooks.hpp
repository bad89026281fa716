// The provider's notifications (webhooks), written here from the provider
// model's truth in each built-in provider's own format and signed with its
// own scheme, independently of src/auth (OpenSSL's HMAC, AES-256-GCM and the
// RSA keys of provider_auth): Stripe events with Stripe-Signature, Adyen
// NotificationRequestItems (a batch) with hmacSignature, Square
// payment.updated with x-square-hmacsha256-signature over URL + body,
// Checkout.com with Cko-Signature, Mollie's id-only hint, WeChat Pay's sealed
// resource with the Wechatpay-* headers, Alipay's signed notify form.
// Besides the genuine ones: forged copies (a signature that does not verify),
// stale ones (signed too long ago, where the scheme is timestamped) and
// authentic ones about another merchant account's payment.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "webhook_scheme.hpp"
#include "wire.hpp"

namespace payretry::dst {

class ProviderKeys;

// The secrets the provider signs with, and the test config holds.
struct WebhookKeys {
  std::string secret;            // Stripe's endpoint secret, Square's and Checkout.com's signature keys
  std::string adyen_hex;         // Adyen's HMAC key, hex
  std::string api_v3_key;        // WeChat Pay's APIv3 key (32 bytes)
  std::string notification_url;  // Square signs URL + body
  std::string merchant_id;       // the merchant account notifications are for
  const ProviderKeys* rsa = nullptr;  // WeChat Pay's platform key, Alipay's key
};

// One payment as the provider decided it.
struct EventTruth {
  std::string order_id;
  std::string provider_id;
  bool charged = false;
  // The key of the request that made it (Stripe's events name it as
  // request.idempotency_key); "" none: the event carries null.
  std::string idempotency_key;
  // The connected account it was made in (Stripe's event names it as
  // $.account); "" the platform's own: no member.
  std::string account;
  // Where its money went, which the event's words say (the decision, or a
  // later move: paid, abandoned, captured, voided).
  Phase phase = Phase::paid;
};

// One refund's news as the provider notifies it (issue 47; the provider
// model's RefundNews): Stripe's refund.created / refund.updated /
// refund.failed, Checkout.com's payment_refunded / payment_refund_declined.
struct OperationEventTruth {
  std::string refund_id;   // Stripe's re_ id, Checkout.com's action_id
  std::string payment_id;  // the payment it refunds
  std::string order_id;    // that payment's order (Checkout.com's data.reference)
  // The key of the request that made it: Stripe's refund.created names it
  // as request.idempotency_key; later events were caused by no request of
  // the merchant's (null), and a refund made elsewhere carries none of ours.
  std::string idempotency_key;
  std::string account;     // the connected account (Stripe's $.account); "" the platform's own
  bool accepted = false;   // the news of its acceptance (else of its decision)
  bool decided = false, approved = false;
  // Stripe: a decline told as refund.updated (status failed), besides its refund.failed.
  bool as_update = false;
  int64_t amount = 0;
};

enum class NoteForm {
  genuine,   // the provider's own
  forged,    // claims the opposite, and its signature does not verify
  stale,     // genuine and signed, but longer ago than the scheme's window
  not_ours,  // authentic, about a payment of another merchant account (or another kind of object)
};

struct Notification {
  WebhookRequest req;
  // The event ids the receiver stores for the events (its profile's
  // event_id read from them); empty for Mollie's hint, whose id the lookup makes.
  std::vector<std::string> event_ids;
};

// The built-in profiles whose notifications the simulation sends.
bool sends_webhooks(const std::string& profile);
// Whether the provider notifies a payment's move to `phase` (WeChat Pay
// notifies payments paid, Alipay those paid or closed; Adyen sends nothing
// while a shopper is redirected).
bool notifies(const std::string& profile, Phase phase);
// Whether `form` exists for the profile's scheme (stale: a signed time;
// not_ours: a name the profile requires).
bool has_form(const std::string& profile, NoteForm form);
// A notification of `events` (several only for Adyen, which batches) at
// Unix time `unix_ms`; `serial` makes what the provider numbers (nonces,
// forged ids) unique within a schedule.
// Whether the profile notifies this news of a refund (Stripe: its
// acceptance and its later decision; Checkout.com: its decision only).
bool notifies_operation(const std::string& profile, const OperationEventTruth& t);
// A refund's notification, signed as the payments' are (forged: it claims
// the opposite; not_ours: Stripe, another connected account's).
Notification build_operation_notification(const std::string& profile, const OperationEventTruth& t, NoteForm form,
                                           int64_t unix_ms, uint64_t serial, const WebhookKeys& keys);
Notification build_notification(const std::string& profile, const std::vector<EventTruth>& events, NoteForm form,
                                 int64_t unix_ms, uint64_t serial, const WebhookKeys& keys);

}  // namespace payretry::dst
