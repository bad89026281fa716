// One notification per provider, each after the provider's documented payload and signature.
// Field names are the providers' own, byte for byte; values the sim cannot know (merchant
// account, app ids) are the test ids of tests/keys/README.md.
#include "webhook_notice.hpp"

#include <algorithm>
#include <ctime>
#include <stdexcept>

#include "faults.hpp"
#include "form_body.hpp"
#include "http_conn.hpp"
#include "operations.hpp"
#include "wechat_auth.hpp"

namespace payretry_sim {

namespace {

// ---- repeatable ids ------------------------------------------------------------------------------

// A stream of pseudo-random words for one (seed, payment, purpose): the same run with the same
// seed writes the same ids, whatever the thread interleaving.
class IdStream {
 public:
  // A move's notification mixes its number in, so that its ids are not the create's; the
  // create's (move 0) are what they always were.
  IdStream(uint64_t seed, const PaymentEvent& e, std::string_view purpose)
      : state_(splitmix64(seed ^ splitmix64(fnv1a64(e.order_id) ^ splitmix64(e.number)) ^ fnv1a64(purpose)) ^
               (e.move ? splitmix64(0x6d6f7665ULL + e.move) : 0) ^
               // An operation's notification has ids of its own, apart from its payment's, and
               // each of its later ones apart from the first (whose ids stay as they were).
               (e.op_number ? splitmix64(0x6f70ULL + e.op_number) : 0) ^
               (e.op_number && e.op_phase != PaymentEvent::OpPhase::made
                    ? splitmix64(0x7068ULL + static_cast<uint64_t>(e.op_phase))
                    : 0)) {}
  uint64_t next() { return state_ = splitmix64(state_); }
  std::string chars(std::string_view alphabet, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(alphabet[next() % alphabet.size()]);
    return out;
  }
  std::string hex(std::size_t n) { return chars("0123456789abcdef", n); }

 private:
  uint64_t state_;
};

constexpr std::string_view kUpperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
constexpr std::string_view kLowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

// 8-4-4-4-12 lower-case hex, as PayPal's transmission ids and Square's event ids look.
std::string uuid_like(IdStream& ids) {
  return ids.hex(8) + "-" + ids.hex(4) + "-" + ids.hex(4) + "-" + ids.hex(4) + "-" + ids.hex(12);
}

// ---- times ---------------------------------------------------------------------------------------

std::string format_time(int64_t unix_s, int offset_hours, const char* pattern) {
  const std::time_t t = static_cast<std::time_t>(unix_s + offset_hours * 3600);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, pattern, &tm);
  return buf;
}
std::string iso_utc(int64_t s) { return format_time(s, 0, "%Y-%m-%dT%H:%M:%SZ"); }
std::string iso_beijing(int64_t s) { return format_time(s, 8, "%Y-%m-%dT%H:%M:%S+08:00"); }
std::string alipay_time(int64_t s) { return format_time(s, 8, "%Y-%m-%d %H:%M:%S"); }

// ---- small writers -------------------------------------------------------------------------------

std::string payment_id(const Profile& p, const PaymentEvent& e) { return format_id(p.payment_id, e.number); }

// 1050 -> "10.50"
std::string major_units(int64_t minor) {
  std::string out = std::to_string(minor / 100) + ".";
  const int cents = static_cast<int>(minor % 100);
  out.push_back(static_cast<char>('0' + cents / 10));
  out.push_back(static_cast<char>('0' + cents % 10));
  return out;
}

std::string upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

bool hex_decode(std::string_view hex, std::string* out) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.empty() || hex.size() % 2) return false;
  out->clear();
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

// application/x-www-form-urlencoded as Java's URLEncoder writes it (Alipay's servers): unreserved
// bytes as they are, space as '+', everything else %XX.
std::string form_escape(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '*') {
      out.push_back(static_cast<char>(c));
    } else if (c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// A forged copy's HMAC: the right formula under a key the provider never gave out.
std::string hmac_key(const WebhookSettings& s, NoticeVariant v) {
  return v == NoticeVariant::forged ? s.secret + "-not-the-providers-key" : s.secret;
}

// A forged copy's RSA signature: well-formed base64 of the right length, one bit off.
std::string rsa_signature(const RsaKey& key, std::string_view message, NoticeVariant v) {
  std::string sig = key.sign(message);
  if (v != NoticeVariant::forged) return sig;
  std::string raw;
  base64_decode(sig, &raw);
  raw[raw.size() / 2] = static_cast<char>(raw[raw.size() / 2] ^ 0x01);
  return base64_encode(raw);
}

// CRC-32 (IEEE 802.3, reflected), as Java's java.util.zip.CRC32 in PayPal's signed message.
uint32_t crc32_ieee(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

// How far back a stale copy's signed time is moved: past the five minutes of Stripe's SDKs
// and WeChat Pay's, far enough that a slow test machine does not bring it back inside.
constexpr int64_t kStaleS = 15 * 60;

// ---- Stripe --------------------------------------------------------------------------------------
// Event object: https://docs.stripe.com/api/events/object; types payment_intent.succeeded and
// payment_intent.payment_failed: https://docs.stripe.com/api/events/types; signature:
// https://docs.stripe.com/webhooks#verify-manually (Stripe-Signature: t=..,v1=hex HMAC-SHA256
// of "t.body"). data.object is the PaymentIntent as the sim's lookup writes it; a declined one is
// back at requires_payment_method with last_payment_error, as Stripe leaves it. Both carry
// "created", which Stripe's OpenAPI requires of a payment_intent (the sim decides a payment at
// once: the intent was made in the second the event is); sim_webhooks_schema.py checks them.
Notice stripe_notice(const Profile&, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                     NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "stripe");
  Notice n;
  n.event_id = "evt_" + ids.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 24);
  std::string object;
  // What request.id names: the API request that caused the event, null when Stripe made it on
  // its own (spec3.json notification_event_request).
  std::string request_id = "null";
  if (e.op_number) {
    // A refund's own events (https://docs.stripe.com/api/events/types, https://docs.stripe.com/api/refunds:
    // refund.created "whenever a refund is created", refund.updated "whenever a refund is
    // updated", refund.failed "whenever a refund has failed"), sent for card refunds from API
    // version 2024-10-28.acacia on (https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update;
    // before it only charge.refunded). data.object is the Refund as its answer and lookup write
    // it. refund.created is caused by the refund's POST: request.id and the key it carried; a
    // later change is Stripe's own, naming no request and no key.
    switch (e.op_phase) {
      case PaymentEvent::OpPhase::made:
        n.type = "refund.created";
        request_id = json_string("req_" + ids.chars(kAlnum, 14));
        break;
      case PaymentEvent::OpPhase::updated: n.type = "refund.updated"; break;
      case PaymentEvent::OpPhase::failed: n.type = "refund.failed"; break;
    }
    format_stripe_refund(stripe_profile(), e.op_number, e.number, e.op_amount, e.currency, e.op_created_s, e.op_status,
                         object);
  } else if (e.charged) {
    const PaymentView view{e.number, e.order_id, e.amount, e.currency, e.money, e.wait, e.manual_capture, e.was_authorized};
    switch (e.money) {
      case Money::awaiting_customer: n.type = "payment_intent.requires_action"; break;
      case Money::pending: n.type = "payment_intent.processing"; break;
      case Money::authorized: n.type = "payment_intent.amount_capturable_updated"; break;
      case Money::paid: n.type = "payment_intent.succeeded"; break;
      case Money::failed: n.type = "payment_intent.canceled"; break;
    }
    format_payment_intent(object, view, now_s);
  } else {
    n.type = "payment_intent.payment_failed";
    object = R"({"id":")" + format_id(stripe_profile().payment_id, e.number) +
             R"(","object":"payment_intent","amount":)" + std::to_string(e.amount) +
             R"(,"amount_received":0,"created":)" + std::to_string(now_s) +
             R"(,"currency":)" + json_string(e.currency) +
             R"(,"last_payment_error":{"code":"card_declined","decline_code":"insufficient_funds","type":"card_error"})"
             R"(,"latest_charge":null,"livemode":false,"metadata":{"order_id":)" +
             json_string(e.order_id) + R"(},"status":"requires_payment_method"})";
  }
  // A connected account's event names it (https://docs.stripe.com/connect/webhooks); the
  // platform's own events carry no account member.
  const std::string account = e.account.empty() ? std::string() : R"("account":)" + json_string(e.account) + ",";
  const bool automatic = e.op_number && e.op_phase != PaymentEvent::OpPhase::made;
  // One endpoint, one API version: at least 2024-10-28.acacia, or it would get no refund events.
  n.body = R"({"id":")" + n.event_id + R"(",)" + account + R"("object":"event","api_version":"2024-10-28.acacia","created":)" +
           std::to_string(now_s) +
           R"(,"data":{"object":)" + object + R"(},"livemode":false,"pending_webhooks":1,"request":{"id":)" +
           request_id + R"(,"idempotency_key":)" +
           (e.idempotency_key.empty() || automatic ? std::string("null") : json_string(e.idempotency_key)) +
           R"(},"type":")" + n.type + R"("})";
  n.content_type = "application/json; charset=utf-8";
  const int64_t t = v == NoticeVariant::stale ? now_s - kStaleS : now_s;
  n.headers.emplace_back("Stripe-Signature", "t=" + std::to_string(t) + ",v1=" +
                                                 hmac_sha256_hex(hmac_key(s, v), std::to_string(t) + "." + n.body));
  return n;
}

// ---- Adyen ---------------------------------------------------------------------------------------
// Standard webhook: https://docs.adyen.com/development-resources/webhooks/webhook-types/ (one
// NotificationRequestItem here); AUTHORISATION with success "true"/"false":
// https://docs.adyen.com/api-explorer/Webhooks/1/post/AUTHORISATION; hmacSignature: base64
// HMAC-SHA256 under the hex-decoded key of pspReference:originalReference:merchantAccountCode:
// merchantReference:value:currency:eventCode:success
// (https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures).
constexpr std::string_view kAdyenMerchant = "PayretrySimECOM";

// A capture (CAPTURE) and a cancellation (CANCELLATION) are modifications: their pspReference
// is the modification's own, originalReference the payment's
// (https://docs.adyen.com/online-payments/capture#capture-webhook).
Notice adyen_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t, NoticeVariant v,
                    int64_t now_s) {
  Notice n;
  const bool modification =
      e.op_number || (e.charged && (e.money == Money::paid || (e.money == Money::failed && e.was_authorized)));
  std::string code = !modification ? "AUTHORISATION" : e.money == Money::paid ? "CAPTURE" : "CANCELLATION";
  const std::string original = modification ? payment_id(p, e) : "";
  std::string psp = modification ? format_id({code == "CAPTURE" ? "PSC" : "PSX", 13}, e.number) : payment_id(p, e);
  std::string success = e.charged && e.money != Money::failed ? "true" : modification ? "true" : "false";
  std::string value = std::to_string(e.amount);
  std::string reason = modification ? "" : success == "true" ? "874751:1111:03/2030" : "Not enough balance";
  if (e.op_number) {
    // An operation's notification: its own pspReference, its amount, and success "false" with
    // the reason when Adyen refused it (Webhooks-v1.json CAPTURE, REFUND, CANCELLATION).
    const OpKind kind = static_cast<OpKind>(e.op_kind);
    code = kind == OpKind::capture ? "CAPTURE" : kind == OpKind::refund ? "REFUND" : "CANCELLATION";
    psp = operation_id(p, kind, e.op_number);
    success = e.op_success ? "true" : "false";
    value = std::to_string(e.op_amount);
    reason = e.op_reason;
  }
  n.type = code + ":" + success;
  n.event_id = psp + ":" + code + ":" + success;
  std::string key;
  hex_decode(s.secret, &key);
  if (v == NoticeVariant::forged) key = hmac_key(s, v);
  const std::string sig = base64_encode(hmac_sha256(
      key, psp + ":" + original + ":" + std::string(kAdyenMerchant) + ":" + e.order_id + ":" + value + ":" +
               e.currency + ":" + code + ":" + success));
  n.body = R"({"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":")" +
           sig + R"("},"amount":{"currency":)" + json_string(e.currency) + R"(,"value":)" + value +
           R"(},"eventCode":")" + code + R"(","eventDate":")" + format_time(now_s, 0, "%Y-%m-%dT%H:%M:%S+00:00") +
           R"(","merchantAccountCode":")" + std::string(kAdyenMerchant) + R"(","merchantReference":)" +
           json_string(e.order_id) +
           (modification ? R"(,"originalReference":")" + original + R"(")"
                         : std::string(R"(,"operations":["CANCEL","CAPTURE","REFUND"])")) +
           R"(,"paymentMethod":"visa","pspReference":")" + psp + R"(","reason":)" + json_string(reason) +
           R"(,"success":")" + success + R"("}}]})";
  n.content_type = "application/json";
  return n;
}

// ---- Square --------------------------------------------------------------------------------------
// payment.updated: https://developer.squareup.com/reference/square/payments-api/webhooks/payment.updated;
// signature: https://developer.squareup.com/docs/webhooks/step3validate (base64 HMAC-SHA256 of the
// notification URL followed by the body, header x-square-hmacsha256-signature).
Notice square_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                     NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "square");
  Notice n;
  n.event_id = uuid_like(ids);
  n.type = "payment.updated";
  const std::string id = payment_id(p, e);
  const std::string at = format_time(now_s, 0, "%Y-%m-%dT%H:%M:%S.000Z");
  const std::string money =
      R"({"amount":)" + std::to_string(e.amount) + R"(,"currency":)" + json_string(upper(e.currency)) + "}";
  n.body = R"({"merchant_id":"MLPAYRETRYSIM","type":"payment.updated","event_id":")" + n.event_id +
           R"(","created_at":")" + at + R"(","data":{"type":"payment","id":")" + id +
           R"(","object":{"payment":{"amount_money":)" + money + R"(,"created_at":")" + at + R"(","id":")" + id +
           R"(","location_id":"LPAYRETRYSIM","order_id":")" + ids.chars(kUpperAlnum, 24) +
           R"(","reference_id":)" + json_string(e.order_id) + R"(,"source_type":"CARD","status":")" +
           (!e.charged                       ? "FAILED"
            : e.money == Money::authorized   ? "APPROVED"
            : e.money == Money::paid         ? "COMPLETED"
            : e.money == Money::failed       ? (e.was_authorized ? "CANCELED" : "FAILED")
                                             : "PENDING") + R"(","total_money":)" + money + R"(,"updated_at":")" + at +
           R"(","version":2}}}})";
  n.content_type = "application/json";
  n.headers.emplace_back("x-square-hmacsha256-signature",
                         base64_encode(hmac_sha256(hmac_key(s, v), s.url + n.body)));
  return n;
}

// ---- Checkout.com --------------------------------------------------------------------------------
// payment_approved / payment_declined:
// https://www.checkout.com/docs/developer-resources/webhooks/webhook-event-types/payment_approved
// (and .../payment_declined); Cko-Signature, hex HMAC-SHA256 of the body under the signature key:
// https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/authenticate-webhooks
Notice checkout_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                       NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "checkout_com");
  Notice n;
  n.event_id = "evt_" + ids.chars(kLowerAlnum, 26);
  // A create that captured at once is notified payment_approved (Authorized), as it always was
  // here; a later move says what it did: payment_captured, payment_voided, payment_declined.
  const char* status = "Authorized";
  std::string action_id;
  int64_t amount = e.amount;
  bool op_declined = false;
  if (e.op_number) {
    // An operation's own event, naming its action (operations.hpp): payment_captured,
    // payment_refunded or payment_voided, with the action's id and amount. One declined after
    // its 202 ("accepted") is payment_capture_declined, payment_refund_declined or
    // payment_void_declined, naming the action the same way (data.id, data.action_id) with the
    // response code and summary of Checkout.com's examples of those three events:
    // https://www.checkout.com/docs/developer-resources/event-notifications/event-types/payment_void_declined
    // (and .../payment_refund_declined, .../payment_capture_declined; the event types list:
    // checkout-api-reference nas_spec/components/schemas/Events/EventTypesObject.yaml).
    const OpKind kind = static_cast<OpKind>(e.op_kind);
    op_declined = !e.op_success;
    if (op_declined) {
      n.type = kind == OpKind::capture  ? "payment_capture_declined"
               : kind == OpKind::refund ? "payment_refund_declined"
                                        : "payment_void_declined";
    } else {
      n.type = kind == OpKind::capture ? "payment_captured" : kind == OpKind::refund ? "payment_refunded" : "payment_voided";
    }
    status = kind == OpKind::capture ? "Captured" : kind == OpKind::refund ? "Refunded" : "Voided";
    action_id = operation_id(p, kind, e.op_number);
    amount = e.op_amount;
  } else if (!e.charged) {
    n.type = "payment_declined";
    status = "Declined";
  } else if (e.money == Money::awaiting_customer || e.money == Money::pending) {
    n.type = "payment_pending";
    status = "Pending";
  } else if (e.money == Money::authorized || (e.money == Money::paid && e.move == 0)) {
    n.type = "payment_approved";
  } else if (e.money == Money::paid) {
    n.type = "payment_captured";
    status = "Captured";
  } else if (e.was_authorized) {
    n.type = "payment_voided";
    status = "Voided";
  } else {
    n.type = "payment_declined";
    status = "Declined";
  }
  const bool declined = n.type == "payment_declined";
  const std::string id = payment_id(p, e);
  const std::string at = format_time(now_s, 0, "%Y-%m-%dT%H:%M:%S.000Z");
  n.body = R"({"id":")" + n.event_id + R"(","type":")" + n.type + R"(","version":"1.0.0","created_on":")" + at +
           R"(","data":{"id":")" + id + R"(","action_id":")" +
           (action_id.empty() ? "act_" + ids.chars(kLowerAlnum, 26) : action_id) + R"(","amount":)" +
           std::to_string(amount) + R"(,"currency":)" + json_string(upper(e.currency)) +
           (op_declined ? std::string(R"(,"response_code":"20006","response_summary":"Error / Invalid Request Parameters")")
            : !declined ? R"(,"approved":true,"status":")" + std::string(status) +
                              R"(","response_code":"10000","response_summary":"Approved")"
                        : std::string(R"(,"approved":false,"status":"Declined","response_code":"20051","response_summary":"Insufficient Funds")")) +
           R"(,"processed_on":")" + at + R"(","reference":)" + json_string(e.order_id) +
           R"(,"metadata":{}},"_links":{"self":{"href":"https://api.sandbox.checkout.com/workflows/events/)" +
           n.event_id + R"("},"payment":{"href":"https://api.sandbox.checkout.com/payments/)" + id + R"("}}})";
  n.content_type = "application/json";
  n.headers.emplace_back("Cko-Signature", hmac_sha256_hex(hmac_key(s, v), n.body));
  return n;
}

// ---- Mollie --------------------------------------------------------------------------------------
// Classic webhook: "a POST request with the id of the payment" as a form body, nothing signed:
// https://docs.mollie.com/reference/webhooks. The receiver fetches GET /v2/payments/{id}. A
// forged copy names a payment that does not exist (tr_0 is no id the sim hands out).
Notice mollie_notice(const Profile& p, const WebhookSettings&, const PaymentEvent& e, uint64_t, NoticeVariant v,
                     int64_t) {
  Notice n;
  const std::string id = v == NoticeVariant::forged ? "tr_0" : payment_id(p, e);
  n.event_id = id;
  n.type = "id";
  n.body = "id=" + id;
  n.content_type = "application/x-www-form-urlencoded";
  return n;
}

// ---- WeChat Pay v3 -------------------------------------------------------------------------------
// 支付成功通知 (payment notification): https://pay.weixin.qq.com/docs/merchant/apis/jsapi-payment/payment-notice.html
// (envelope, resource sealed AEAD_AES_256_GCM under the APIv3 key, the transaction in the
// plaintext); signature: https://pay.weixin.qq.com/docs/merchant/development/interface-rules/signature-verification.html
// (Wechatpay-Timestamp/-Nonce/-Signature/-Serial, RSA-SHA256 of "ts\nnonce\nbody\n" with the
// platform key the answers are signed with). Only successes are notified ("只有支付成功才会通知").
constexpr std::string_view kWechatMchid = "1900000109";
constexpr std::string_view kWechatAppid = "wxd678efh567hg6787";

Notice wechat_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                     NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "wechatpay_v3");
  Notice n;
  const std::string transaction = payment_id(p, e);
  n.event_id = e.order_id + ":" + transaction + ":SUCCESS";
  n.type = "SUCCESS";
  const std::string plain =
      R"({"appid":")" + std::string(kWechatAppid) + R"(","mchid":")" + std::string(kWechatMchid) +
      R"(","out_trade_no":)" + json_string(e.order_id) + R"(,"transaction_id":")" + transaction +
      R"(","trade_type":"NATIVE","trade_state":"SUCCESS","trade_state_desc":"支付成功","bank_type":"OTHERS","attach":"","success_time":")" +
      iso_beijing(now_s) + R"(","payer":{"openid":"oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"},"amount":{"total":)" +
      std::to_string(e.amount) + R"(,"payer_total":)" + std::to_string(e.amount) + R"(,"currency":)" +
      json_string(e.currency) + R"(,"payer_currency":)" + json_string(e.currency) + "}}";
  const std::string nonce = ids.chars(kUpperAlnum, 12);  // 12 bytes: GCM's nonce
  const std::string sealed = aes_256_gcm_seal(s.api_v3_key, nonce, "transaction", plain);
  n.body = R"({"id":")" + ids.hex(8) + "-" + ids.hex(4) + "-" + ids.hex(4) + "-" + ids.hex(4) + "-" + ids.hex(12) +
           R"(","create_time":")" + iso_beijing(now_s) +
           R"(","resource_type":"encrypt-resource","event_type":"TRANSACTION.SUCCESS","summary":"支付成功","resource":{"original_type":"transaction","algorithm":"AEAD_AES_256_GCM","ciphertext":")" +
           base64_encode(sealed) + R"(","associated_data":"transaction","nonce":")" + nonce + R"("}})";
  n.content_type = "application/json";
  const std::string ts = std::to_string(v == NoticeVariant::stale ? now_s - kStaleS : now_s);
  const std::string header_nonce = ids.chars(kUpperAlnum, 32);
  n.headers.emplace_back("Wechatpay-Serial", std::string(kWechatPlatformSerial));
  n.headers.emplace_back("Wechatpay-Signature",
                         rsa_signature(s.keys->wechat_platform_key, ts + "\n" + header_nonce + "\n" + n.body + "\n", v));
  n.headers.emplace_back("Wechatpay-Timestamp", ts);
  n.headers.emplace_back("Wechatpay-Nonce", header_nonce);
  n.headers.emplace_back("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048");
  return n;
}

// ---- Alipay --------------------------------------------------------------------------------------
// 异步通知 (asynchronous notification) of alipay.trade.pay: https://opendocs.alipay.com/open/194/103296
// (parameters notify_time, notify_type, notify_id, app_id, charset, version, sign_type, sign,
// trade_no, out_trade_no, trade_status, total_amount, ...); signature check:
// https://opendocs.alipay.com/common/02mse7 (every parameter but sign and sign_type, sorted,
// k=v joined by '&', RSA2 with Alipay's key). A declined trade is notified TRADE_CLOSED, as the
// sim's alipay.trade.query then answers.
Notice alipay_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                     NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "alipay");
  Notice n;
  n.event_id = "2026" + ids.hex(30);  // a notify_id: the same for every re-send of one notice
  const bool success = e.charged && e.money == Money::paid;
  n.type = success ? "TRADE_SUCCESS" : "TRADE_CLOSED";
  const std::string created = alipay_time(now_s);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"app_id", "2021000000000001"},
      {"buyer_logon_id", "159****5620"},
      {"charset", "utf-8"},
      {"gmt_create", created},
      {success ? "gmt_payment" : "gmt_close", created},
      {"notify_id", n.event_id},
      {"notify_time", created},
      {"notify_type", "trade_status_sync"},
      {"out_trade_no", e.order_id},
      {"total_amount", major_units(e.amount)},
      {"trade_no", payment_id(p, e)},
      {"trade_status", n.type},
      {"version", "1.0"},
  };
  if (success) fields.emplace_back("receipt_amount", major_units(e.amount));
  std::sort(fields.begin(), fields.end());
  std::string content;
  for (const auto& [k, val] : fields) content += (content.empty() ? "" : "&") + k + "=" + val;
  const std::string sign = rsa_signature(s.keys->alipay_key, content, v);
  for (const auto& [k, val] : fields) n.body += (n.body.empty() ? "" : "&") + k + "=" + form_escape(val);
  n.body += "&sign_type=RSA2&sign=" + form_escape(sign);
  n.content_type = "application/x-www-form-urlencoded; charset=utf-8";
  return n;
}

// ---- PayPal --------------------------------------------------------------------------------------
// PAYMENT.CAPTURE.COMPLETED: https://developer.paypal.com/api/rest/webhooks/event-names/#captured-payments
// (resource: the capture, with custom_id and supplementary_data.related_ids.order_id);
// headers and the signed message transmission_id|transmission_time|webhook_id|crc32(body):
// https://developer.paypal.com/api/rest/webhooks/rest/#link-verifysignature and PayPal-Python-SDK
// paypalrestsdk/notifications.py (WebhookEvent._get_expected_sig).
Notice paypal_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                     NoticeVariant v, int64_t now_s) {
  IdStream ids(seed, e, "paypal");
  Notice n;
  n.event_id = "WH-" + ids.chars(kUpperAlnum, 17) + "-" + ids.chars(kUpperAlnum, 17);
  // The resource is the capture (PAYMENT.CAPTURE.COMPLETED) or the authorization
  // (PAYMENT.AUTHORIZATION.CREATED / .VOIDED), with the ids the order's lookup shows.
  const bool capture = e.money == Money::paid;
  const std::string status = capture ? "COMPLETED" : e.money == Money::authorized ? "CREATED" : "VOIDED";
  n.type = capture ? "PAYMENT.CAPTURE.COMPLETED" : "PAYMENT.AUTHORIZATION." + status;
  // Drawn as before, so that the stream's later draws (the transmission id) stay as they were.
  ids.chars(kUpperAlnum, 17);
  const std::string resource_id = capture ? paypal_capture_id(e.number) : paypal_authorization_id(e.number);
  const std::string kind = capture ? "capture" : "authorization";
  const std::string value = major_units(e.amount);
  const std::string currency = upper(e.currency);
  const std::string at = iso_utc(now_s);
  const std::string summary = capture ? "Payment completed for " : e.money == Money::authorized ? "Payment authorized for " : "Payment authorization voided for ";
  n.body = R"({"id":")" + n.event_id + R"(","event_version":"1.0","create_time":")" + at +
           R"(","resource_type":")" + kind + R"(","resource_version":"2.0","event_type":")" + n.type + R"(","summary":")" +
           summary + value + " " + currency + R"(","resource":{"id":")" + resource_id +
           R"(","status":")" + status + R"(","amount":{"currency_code":)" + json_string(currency) + R"(,"value":")" + value +
           R"("},)" + (capture ? R"("final_capture":true,)" : "") + R"("custom_id":)" + json_string(e.order_id) +
           R"(,"supplementary_data":{"related_ids":{"order_id":")" + payment_id(p, e) + R"("}},"create_time":")" + at +
           R"(","update_time":")" + at + R"(","links":[{"href":"https://api.sandbox.paypal.com/v2/payments/)" + kind + "s/" +
           resource_id + R"(","rel":"self","method":"GET"}]},"links":[{"href":"https://api.sandbox.paypal.com/v1/notifications/webhooks-events/)" +
           n.event_id + R"(","rel":"self","method":"GET"}]})";
  n.content_type = "application/json";
  const std::string transmission_id = uuid_like(ids);
  const std::string message =
      transmission_id + "|" + at + "|" + s.webhook_id + "|" + std::to_string(crc32_ieee(n.body));
  n.headers.emplace_back("PAYPAL-TRANSMISSION-ID", transmission_id);
  n.headers.emplace_back("PAYPAL-TRANSMISSION-TIME", at);
  n.headers.emplace_back("PAYPAL-TRANSMISSION-SIG", rsa_signature(*s.paypal_key, message, v));
  n.headers.emplace_back("PAYPAL-CERT-URL",
                         "https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-a5cafa77");
  n.headers.emplace_back("PAYPAL-AUTH-ALGO", "SHA256withRSA");
  return n;
}

}  // namespace

bool sends_notice(const Profile& p, const PaymentEvent& e) {
  // An operation's own notification: Adyen's (its only outcome), Checkout.com's (its answers
  // are 202 "accepted"; the events say what happened) and Stripe's refunds (refund.*). The
  // others, and Stripe's captures and cancels, notify a capture or cancel by the payment's new
  // state, and no refund.
  if (e.op_number) {
    return p.id == ProfileId::adyen || p.id == ProfileId::checkout_com ||
           (p.id == ProfileId::stripe && static_cast<OpKind>(e.op_kind) == OpKind::refund);
  }
  const bool waiting = e.charged && (e.money == Money::awaiting_customer || e.money == Money::pending);
  switch (p.id) {
    case ProfileId::paypal:
      return e.charged && !waiting && (e.money != Money::failed || e.was_authorized);
    case ProfileId::mollie:
      return e.charged && !waiting;
    case ProfileId::wechatpay_v3:
      return e.charged && e.money == Money::paid;
    case ProfileId::stripe:
      return e.number != 0 && (!waiting || e.wait == Wait::requires_action || e.money == Money::pending);
    case ProfileId::checkout_com:
      return e.number != 0;
    case ProfileId::square:
    case ProfileId::adyen:
    case ProfileId::alipay:
      return e.number != 0 && !waiting;
  }
  return false;
}

bool has_variant(const Profile& p, NoticeVariant variant) {
  if (variant == NoticeVariant::stale) return p.id == ProfileId::stripe || p.id == ProfileId::wechatpay_v3;
  return true;
}

Notice build_notice(const Profile& p, const WebhookSettings& s, const PaymentEvent& e, uint64_t seed,
                    NoticeVariant variant, int64_t now_s) {
  const std::string missing = check_webhook_settings(p, s);
  if (!missing.empty()) throw std::invalid_argument(missing);
  switch (p.id) {
    case ProfileId::stripe: return stripe_notice(p, s, e, seed, variant, now_s);
    case ProfileId::adyen: return adyen_notice(p, s, e, seed, variant, now_s);
    case ProfileId::square: return square_notice(p, s, e, seed, variant, now_s);
    case ProfileId::checkout_com: return checkout_notice(p, s, e, seed, variant, now_s);
    case ProfileId::mollie: return mollie_notice(p, s, e, seed, variant, now_s);
    case ProfileId::wechatpay_v3: return wechat_notice(p, s, e, seed, variant, now_s);
    case ProfileId::alipay: return alipay_notice(p, s, e, seed, variant, now_s);
    case ProfileId::paypal: return paypal_notice(p, s, e, seed, variant, now_s);
  }
  throw std::invalid_argument("no notifications in this profile");
}

std::string check_webhook_settings(const Profile& p, const WebhookSettings& s) {
  constexpr std::string_view kHttp = "http://";
  if (s.url.compare(0, kHttp.size(), kHttp) != 0) return "--webhook-url must be an http:// URL";
  switch (p.id) {
    case ProfileId::stripe:
    case ProfileId::square:
    case ProfileId::checkout_com:
      if (s.secret.empty()) return "--webhook-secret is needed for " + std::string(p.name) + "'s notifications";
      break;
    case ProfileId::adyen: {
      std::string key;
      if (!hex_decode(s.secret, &key)) return "--webhook-secret must be Adyen's HMAC key in hex";
      break;
    }
    case ProfileId::wechatpay_v3:
      if (s.api_v3_key.size() != 32) return "--webhook-api-v3-key must be 32 bytes for WeChat Pay's notifications";
      if (!s.keys) return "--keys is needed for WeChat Pay's notifications (the platform key signs them)";
      break;
    case ProfileId::alipay:
      if (!s.keys) return "--keys is needed for Alipay's notifications (alipay_key.pem signs them)";
      break;
    case ProfileId::paypal:
      if (s.webhook_id.empty()) return "--webhook-id is needed for PayPal's notifications";
      if (!s.paypal_key) return "--keys with paypal_webhook_key.pem is needed for PayPal's notifications";
      break;
    case ProfileId::mollie:
      break;
  }
  return "";
}

}  // namespace payretry_sim
