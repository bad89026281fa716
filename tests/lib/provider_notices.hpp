// Signed notifications as Stripe, Adyen and Checkout.com send them, for the
// tests of operations settled by their own events (test_operation_webhooks.cpp
// in tests/unit and tests/integration). Signed here with OpenSSL directly,
// never with src/util's HMAC nor the simulator's, so that a fault in either
// cannot sign and verify alike:
//   Stripe       Stripe-Signature: t=<unix s>,v1=hex(HMAC-SHA256(secret, "<t>.<body>"))
//                (docs.stripe.com/webhooks#verify-manually); an Event names the request
//                that caused it in request.{id, idempotency_key} (stripe-node EventRequest:
//                "The idempotency key transmitted during the request, if any").
//   Adyen        a NotificationRequestItem whose additionalData.hmacSignature is
//                base64(HMAC-SHA256(hex-decoded key, pspReference:originalReference:
//                merchantAccountCode:merchantReference:value:currency:eventCode:success))
//                (docs.adyen.com/development-resources/webhooks/verify-hmac-signatures); a
//                modification's item names its own pspReference and the payment's as
//                originalReference.
//   Checkout.com Cko-Signature: hex(HMAC-SHA256(key, body)); payment_refunded,
//                payment_refund_declined, ... carry data.id (the payment) and data.action_id
//                (checkout.com/docs/developer-resources/event-notifications/event-types).
#pragma once
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace notices {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Signed {
  std::string body;
  HeaderList headers;  // besides Content-Type
};

inline std::string hmac256(const std::string& key, const std::string& msg) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

inline std::string hex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

inline std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// A JSON string (the ids and words here are plain ASCII; quotes and
// backslashes escaped all the same).
inline std::string q(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// ---- Stripe ------------------------------------------------------------------------------------

// A Refund object as data.object carries it; `object` is "refund" for
// every real one (another word plays an event about something else).
inline std::string stripe_refund(const std::string& id, const std::string& payment_intent, const std::string& status,
                                 int64_t amount, const std::string& object = "refund") {
  return "{\"id\":" + q(id) + ",\"object\":" + q(object) + ",\"amount\":" + std::to_string(amount) +
         ",\"currency\":\"usd\",\"metadata\":{},\"payment_intent\":" + q(payment_intent) +
         ",\"status\":" + q(status) + "}";
}

// An Event of `type` about `object_json`, caused by a request under
// `idempotency_key` ("": an automatic event, request.id and the key null),
// signed at `t` (Unix seconds: the scheme allows 5 minutes of skew).
inline Signed stripe_event(const std::string& secret, const std::string& id, const std::string& type,
                           const std::string& object_json, const std::string& idempotency_key, int64_t t) {
  Signed s;
  const std::string request = idempotency_key.empty()
                                  ? std::string("{\"id\":null,\"idempotency_key\":null}")
                                  : "{\"id\":\"req_" + id.substr(id.size() > 8 ? id.size() - 8 : 0) +
                                        "\",\"idempotency_key\":" + q(idempotency_key) + "}";
  s.body = "{\"id\":" + q(id) + ",\"object\":\"event\",\"api_version\":\"2024-06-20\",\"created\":" +
           std::to_string(t) + ",\"data\":{\"object\":" + object_json +
           "},\"livemode\":false,\"pending_webhooks\":1,\"request\":" + request + ",\"type\":" + q(type) + "}";
  s.headers.emplace_back("Stripe-Signature",
                         "t=" + std::to_string(t) + ",v1=" + hex(hmac256(secret, std::to_string(t) + "." + s.body)));
  return s;
}

// ---- Adyen -------------------------------------------------------------------------------------

struct AdyenItem {
  std::string psp;        // the modification's own pspReference (a payment's, for AUTHORISATION)
  std::string original;   // the payment's pspReference ("" none)
  std::string merchant_account;
  std::string merchant_ref;
  int64_t value = 0;
  std::string currency = "EUR";
  std::string event;      // REFUND, CAPTURE, CANCELLATION, ...
  std::string success;    // "true" | "false"
  std::string reason;
};

// One item in a batch, as Adyen posts it (no header signs it: the HMAC is
// the item's own).
inline Signed adyen_notification(const std::string& key_hex, const AdyenItem& i) {
  const std::string signed_text = i.psp + ":" + i.original + ":" + i.merchant_account + ":" + i.merchant_ref + ":" +
                                  std::to_string(i.value) + ":" + i.currency + ":" + i.event + ":" + i.success;
  const std::string sig = base64(hmac256(unhex(key_hex), signed_text));
  std::string item = "{\"NotificationRequestItem\":{\"additionalData\":{\"hmacSignature\":" + q(sig) + "},";
  item += "\"amount\":{\"currency\":" + q(i.currency) + ",\"value\":" + std::to_string(i.value) + "},";
  item += "\"eventCode\":" + q(i.event) + ",\"eventDate\":\"2026-12-07T15:00:00+01:00\",";
  item += "\"merchantAccountCode\":" + q(i.merchant_account) + ",\"merchantReference\":" + q(i.merchant_ref) + ",";
  if (!i.original.empty()) item += "\"originalReference\":" + q(i.original) + ",";
  item += "\"paymentMethod\":\"visa\",\"pspReference\":" + q(i.psp) + ",\"reason\":" + q(i.reason) +
          ",\"success\":" + q(i.success) + "}}";
  Signed s;
  s.body = "{\"live\":\"false\",\"notificationItems\":[" + item + "]}";
  return s;
}

// ---- Checkout.com ------------------------------------------------------------------------------

inline Signed checkout_event(const std::string& key, const std::string& id, const std::string& type,
                             const std::string& payment_id, const std::string& action_id, int64_t amount,
                             const std::string& reference) {
  Signed s;
  s.body = "{\"id\":" + q(id) + ",\"type\":" + q(type) +
           ",\"version\":\"1.0.29\",\"created_on\":\"2026-12-07T15:00:00.000Z\",\"data\":{\"id\":" + q(payment_id) +
           ",\"action_id\":" + q(action_id) + ",\"reference\":" + q(reference) + ",\"amount\":" +
           std::to_string(amount) + ",\"currency\":\"EUR\",\"response_code\":\"10000\"}}";
  s.headers.emplace_back("Cko-Signature", hex(hmac256(key, s.body)));
  return s;
}

}  // namespace notices
