#include "provider_webhooks.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <stdexcept>

#include "json_build.hpp"
#include "provider_auth.hpp"
#include "transport.hpp"

namespace payretry::dst {
namespace {

std::string hmac(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), out, &len))
    throw std::runtime_error("dst: HMAC failed");
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string unhex(const std::string& text) {
  std::string out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

std::string b64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// AEAD_AES_256_GCM as WeChat Pay seals a resource: base64(ciphertext || tag).
std::string seal(const std::string& key, const std::string& nonce, const std::string& aad, const std::string& plain) {
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  auto u = [](const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); };
  int len = 0;
  std::string out(plain.size() + 16, '\0');
  unsigned char* o = reinterpret_cast<unsigned char*>(&out[0]);
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, u(key), u(nonce)) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, u(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o, &len, u(plain), static_cast<int>(plain.size())) != 1)
    throw std::runtime_error("dst: AES-256-GCM failed");
  int fin = 0;
  if (EVP_EncryptFinal_ex(ctx.get(), o + len, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, 16, o + len + fin) != 1)
    throw std::runtime_error("dst: AES-256-GCM failed");
  out.resize(static_cast<size_t>(len + fin) + 16);
  return b64(out);
}

std::string form_escape(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '*') {
      out.push_back(static_cast<char>(c));
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string iso_time(int64_t unix_ms, const char* format) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// One base64 or hex character changed: a copy altered on the way, or made
// without the key.
void flip(std::string& sig) {
  if (sig.size() < 12) return;
  sig[10] = sig[10] == 'A' ? 'B' : sig[10] == '0' ? '1' : sig[10] == 'a' ? 'b' : 'A';
}

// Square's payment.status for each phase (nothing waits for a customer).
const char* square_status(Phase p) {
  static const char* const words[] = {"COMPLETED", "PENDING", "APPROVED", "COMPLETED", "FAILED", "CANCELED", "FAILED"};
  return words[static_cast<int>(p)];
}

// Checkout.com's event type for each phase.
const char* checkout_type(Phase p) {
  static const char* const types[] = {"payment_captured", "payment_pending",  "payment_approved", "payment_captured",
                                      "payment_expired",  "payment_voided",   "payment_declined"};
  return types[static_cast<int>(p)];
}

}  // namespace

bool sends_webhooks(const std::string& p) {
  return p == "stripe" || p == "adyen" || p == "square" || p == "checkout_com" || p == "mollie" ||
         p == "wechatpay_v3" || p == "alipay";
}

bool notifies(const std::string& p, Phase phase) {
  if (p == "wechatpay_v3") return phase == Phase::paid;
  if (p == "alipay") return phase == Phase::paid || phase == Phase::abandoned;
  if (p == "adyen") return phase != Phase::waits;
  return true;
}

bool has_form(const std::string& p, NoteForm form) {
  switch (form) {
    case NoteForm::genuine: return true;
    case NoteForm::forged: return true;  // Mollie's: an id it never gave out
    case NoteForm::stale: return p == "stripe" || p == "wechatpay_v3";
    case NoteForm::not_ours:
      return p == "stripe" || p == "adyen" || p == "square" || p == "wechatpay_v3" || p == "alipay";
  }
  return false;
}

bool notifies_operation(const std::string& p, const OperationEventTruth& t) {
  if (p == "stripe") return true;
  if (p == "checkout_com") return t.decided;
  return false;
}

Notification build_operation_notification(const std::string& p, const OperationEventTruth& t, NoteForm form,
                                          int64_t unix_ms, uint64_t serial, const WebhookKeys& k) {
  Notification n;
  n.req.method = "POST";
  n.req.url = k.notification_url;
  const bool forged = form == NoteForm::forged;
  const bool other = form == NoteForm::not_ours;
  const std::string s = std::to_string(serial);
  const std::string tag = forged ? "_forged" + s : other ? "_other" + s : "";
  if (p == "stripe") {
    // The Refund's status then; a forged copy claims the opposite (a
    // pending one, succeeded).
    std::string status = !t.decided ? "pending" : t.approved ? "succeeded" : "failed";
    if (forged) status = status == "succeeded" ? "failed" : "succeeded";
    // refund.created as it was accepted (under the request's key), then
    // refund.updated or refund.failed when it is decided later (a change
    // no request of the merchant's caused: request.idempotency_key null).
    const std::string type = t.accepted ? "refund.created"
                             : status == "failed" && !(t.as_update && !forged) ? "refund.failed"
                                                                             : "refund.updated";
    const std::string id = "evt_" + t.refund_id + "_" + type.substr(7) + (t.as_update ? "_f" : "") + tag;
    JsonMembers m = {{"id", json_quote(id)},
                     {"object", json_quote("event")},
                     {"type", json_quote(type)},
                     {"data.object.id", json_quote(t.refund_id)},
                     {"data.object.object", json_quote("refund")},
                     {"data.object.amount", std::to_string(t.amount)},
                     {"data.object.currency", json_quote("eur")},
                     {"data.object.payment_intent", json_quote(t.payment_id)},
                     {"data.object.status", json_quote(status)},
                     {"request.idempotency_key", t.accepted && !t.idempotency_key.empty()
                                                     ? json_quote(t.idempotency_key)
                                                     : std::string("null")}};
    // Another connected account's refund, where the payment is this one's.
    const std::string account = other ? "acct_elsewhere" + s : t.account;
    if (!account.empty()) m.emplace_back("account", json_quote(account));
    n.req.body = json_object(m);
    const int64_t at = (form == NoteForm::stale ? unix_ms - (301 + static_cast<int64_t>(serial % 3300)) * 1000 : unix_ms) / 1000;
    const std::string key = forged ? k.secret + "x" : k.secret;
    n.req.headers.emplace_back("Stripe-Signature", "t=" + std::to_string(at) + ",v1=" +
                                                       hex(hmac(key, std::to_string(at) + "." + n.req.body)));
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(id);
  } else if (p == "checkout_com") {
    // Its decision, naming the refund's action and the payment (and the
    // payment's reference: Checkout.com's payment_refunded example).
    const bool says_approved = forged ? !t.approved : t.approved;
    const std::string id = "evt_" + t.refund_id + (says_approved ? "_refunded" : "_declined") + tag;
    n.req.body = json_object({{"id", json_quote(id)},
                              {"type", json_quote(says_approved ? "payment_refunded" : "payment_refund_declined")},
                              {"created_on", json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%SZ"))},
                              {"data.id", json_quote(t.payment_id)},
                              {"data.action_id", json_quote(t.refund_id)},
                              {"data.reference", json_quote(t.order_id)},
                              {"data.amount", std::to_string(t.amount)},
                              {"data.currency", json_quote("EUR")},
                              {"data.response_code", json_quote(says_approved ? "10000" : "20005")}});
    std::string sig = hex(hmac(k.secret, n.req.body));
    if (forged) flip(sig);
    n.req.headers.emplace_back("Cko-Signature", sig);
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(id);
  } else {
    throw std::invalid_argument("dst: no operation notifications for profile " + p);
  }
  return n;
}

Notification build_notification(const std::string& p, const std::vector<EventTruth>& events, NoteForm form,
                                int64_t unix_ms, uint64_t serial, const WebhookKeys& k) {
  Notification n;
  n.req.method = "POST";
  n.req.url = k.notification_url;
  const bool forged = form == NoteForm::forged;
  const bool other = form == NoteForm::not_ours;
  const std::string s = std::to_string(serial);
  const EventTruth& e = events.front();
  // What the event says: a forged one the opposite of the truth.
  const bool says_charged = forged ? !e.charged : e.charged;
  const Phase says = forged ? (e.charged ? Phase::declined : Phase::paid) : e.phase;
  // A payment's events after its decision are told apart by their phase.
  const std::string tag = std::string(says == Phase::paid || says == Phase::declined ? "" : "_") +
                          (says == Phase::paid || says == Phase::declined ? "" : phase_name(says)) +
                          (forged ? "_forged" + s : other ? "_other" + s : "");
  if (p == "stripe") {
    const std::string id = "evt_" + e.provider_id + tag;
    static const char* const statuses[] = {"succeeded", "requires_action", "requires_capture", "succeeded",
                                           "canceled",  "canceled",        "requires_payment_method"};
    static const char* const types[] = {"payment_intent.succeeded", "payment_intent.requires_action",
                                        "payment_intent.amount_capturable_updated", "payment_intent.succeeded",
                                        "payment_intent.canceled", "payment_intent.canceled",
                                        "payment_intent.payment_failed"};
    const std::string status = other ? (e.charged ? "canceled" : "succeeded") : statuses[static_cast<int>(says)];
    const std::string type = types[static_cast<int>(says)];
    JsonMembers m = {{"id", json_quote(id)},
                     {"object", json_quote("event")},
                     {"type", json_quote(other ? "charge.updated" : type)},
                     {"data.object.id", json_quote(e.provider_id)},
                     {"data.object.object", json_quote(other ? "charge" : "payment_intent")},
                     {"data.object.status", json_quote(status)},
                     {"data.object.metadata.order_id", json_quote(e.order_id)},
                     {"request.idempotency_key",
                      e.idempotency_key.empty() ? std::string("null") : json_quote(e.idempotency_key)}};
    if (!e.account.empty()) m.emplace_back("account", json_quote(e.account));
    n.req.body = json_object(m);
    const int64_t t = (form == NoteForm::stale ? unix_ms - (301 + static_cast<int64_t>(serial % 3300)) * 1000 : unix_ms) / 1000;
    const std::string key = forged ? k.secret + "x" : k.secret;
    n.req.headers.emplace_back("Stripe-Signature", "t=" + std::to_string(t) + ",v1=" +
                                                       hex(hmac(key, std::to_string(t) + "." + n.req.body)));
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(id);
  } else if (p == "adyen") {
    std::string items;
    for (const EventTruth& t : events) {
      const Phase phase = forged ? (t.charged ? Phase::declined : Phase::paid) : t.phase;
      // Authorised (a hold, also what a redirected shopper's payment
      // becomes), then captured, cancelled, or closed unpaid.
      static const char* const codes[] = {"AUTHORISATION", "AUTHORISATION", "AUTHORISATION", "CAPTURE",
                                          "OFFER_CLOSED",  "CANCELLATION",  "AUTHORISATION"};
      const std::string code = codes[static_cast<int>(phase)];
      const std::string mac = other ? "OtherMerchantECOM" : k.merchant_id;
      const std::string success = phase == Phase::declined ? "false" : "true";
      // A capture or a cancellation is a modification with a pspReference
      // of its own, naming the payment's in originalReference (made
      // elsewhere here: the merchant's, in its Customer Area).
      const bool modification = code == "CAPTURE" || code == "CANCELLATION";
      const std::string psp = modification ? t.provider_id + (code == "CAPTURE" ? "c" : "v") : t.provider_id;
      const std::string original = modification ? t.provider_id : std::string();
      const std::string signed_text = psp + ":" + original + ":" + mac + ":" + t.order_id + ":1000:EUR:" + code + ":" + success;
      std::string sig = b64(hmac(unhex(k.adyen_hex), signed_text));
      if (forged) flip(sig);
      if (!items.empty()) items += ",";
      items += R"({"NotificationRequestItem":{"additionalData":{"hmacSignature":)" + json_quote(sig) +
               R"(},"amount":{"currency":"EUR","value":1000},"eventCode":)" + json_quote(code) + R"(,"eventDate":)" +
               json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%S+00:00")) + R"(,"merchantAccountCode":)" +
               json_quote(mac) + R"(,"merchantReference":)" + json_quote(t.order_id) +
               R"(,"originalReference":)" + json_quote(original) + R"(,"paymentMethod":"visa","pspReference":)" +
               json_quote(psp) + R"(,"reason":"","success":)" + json_quote(success) + "}}";
      n.event_ids.push_back(psp + ":" + code + ":" + success);
    }
    n.req.body = R"({"live":"false","notificationItems":[)" + items + "]}";
    n.req.headers.emplace_back("Content-Type", "application/json");
  } else if (p == "square") {
    const std::string id = "sqe_" + e.provider_id + tag;
    n.req.body = json_object({{"merchant_id", json_quote(other ? "OTHERMERCHANT" : k.merchant_id)},
                              {"type", json_quote("payment.updated")},
                              {"event_id", json_quote(id)},
                              {"created_at", json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%SZ"))},
                              {"data.type", json_quote("payment")},
                              {"data.id", json_quote(e.provider_id)},
                              {"data.object.payment.id", json_quote(e.provider_id)},
                              {"data.object.payment.status", json_quote(other ? (!e.charged ? "COMPLETED" : "FAILED")
                                                                              : square_status(says))},
                              {"data.object.payment.reference_id", json_quote(e.order_id)}});
    std::string sig = b64(hmac(k.secret, k.notification_url + n.req.body));
    if (forged) flip(sig);
    n.req.headers.emplace_back("x-square-hmacsha256-signature", sig);
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(id);
  } else if (p == "checkout_com") {
    const std::string id = "evt_" + e.provider_id + tag;
    n.req.body = json_object({{"id", json_quote(id)},
                              {"type", json_quote(checkout_type(says))},
                              {"created_on", json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%SZ"))},
                              {"data.id", json_quote(e.provider_id)},
                              {"data.reference", json_quote(e.order_id)},
                              {"data.amount", "1000"},
                              {"data.currency", json_quote("EUR")}});
    std::string sig = hex(hmac(k.secret, n.req.body));
    if (forged) flip(sig);
    n.req.headers.emplace_back("Cko-Signature", sig);
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(id);
  } else if (p == "mollie") {
    // Nothing signed: an id, which anyone can send. A forged one names a
    // payment the provider never made.
    n.req.body = "id=" + (forged ? "tr_forged" + s : e.provider_id);
    n.req.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  } else if (p == "wechatpay_v3") {
    if (!k.rsa) throw std::runtime_error("dst: WeChat Pay notifications need the test keys");
    const std::string state = says == Phase::paid ? "SUCCESS" : says == Phase::abandoned ? "CLOSED" : "PAYERROR";
    const std::string plain = json_object({{"mchid", json_quote(other ? "1900000999" : k.merchant_id)},
                                           {"appid", json_quote("wxd678efh567hg6787")},
                                           {"out_trade_no", json_quote(e.order_id)},
                                           {"transaction_id", json_quote(e.provider_id)},
                                           {"trade_type", json_quote("JSAPI")},
                                           {"trade_state", json_quote(state)},
                                           {"trade_state_desc", json_quote("ok")},
                                           {"success_time", json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%S+08:00"))},
                                           {"amount.total", "1000"}});
    char nonce[13];
    std::snprintf(nonce, sizeof nonce, "n%011llu", static_cast<unsigned long long>(serial));
    n.req.body = json_object({{"id", json_quote("EV-" + e.provider_id + tag)},
                              {"create_time", json_quote(iso_time(unix_ms, "%Y-%m-%dT%H:%M:%S+08:00"))},
                              {"resource_type", json_quote("encrypt-resource")},
                              {"event_type", json_quote(says_charged ? "TRANSACTION.SUCCESS" : "TRANSACTION.FAIL")},
                              {"summary", json_quote("payment")},
                              {"resource.original_type", json_quote("transaction")},
                              {"resource.algorithm", json_quote("AEAD_AES_256_GCM")},
                              {"resource.ciphertext", json_quote(seal(k.api_v3_key, nonce, "transaction", plain))},
                              {"resource.associated_data", json_quote("transaction")},
                              {"resource.nonce", json_quote(nonce)}});
    HttpResponse signed_note;
    signed_note.body = n.req.body;
    char header_nonce[33];
    std::snprintf(header_nonce, sizeof header_nonce, "wh%030llu", static_cast<unsigned long long>(serial));
    const int64_t at = form == NoteForm::stale ? unix_ms - (301 + static_cast<int64_t>(serial % 3300)) * 1000 : unix_ms;
    k.rsa->sign_wechatpay(signed_note, at / 1000, header_nonce);
    if (forged) ProviderKeys::forge(signed_note);
    for (auto& h : signed_note.headers) n.req.headers.push_back(h);
    n.req.headers.emplace_back("Content-Type", "application/json");
    n.event_ids.push_back(e.order_id + ":" + e.provider_id + ":" + state);
  } else if (p == "alipay") {
    if (!k.rsa) throw std::runtime_error("dst: Alipay notifications need the test keys");
    const std::string id = "ntf_" + e.provider_id + tag;
    std::map<std::string, std::string> f = {{"notify_time", iso_time(unix_ms, "%Y-%m-%d %H:%M:%S")},
                                            {"notify_type", "trade_status_sync"},
                                            {"notify_id", id},
                                            {"app_id", other ? std::string("2021000000009999") : std::string(kAlipayAppId)},
                                            {"charset", "utf-8"},
                                            {"version", "1.0"},
                                            {"trade_no", e.provider_id},
                                            {"out_trade_no", e.order_id},
                                            {"trade_status", says == Phase::paid ? "TRADE_SUCCESS" : "TRADE_CLOSED"},
                                            {"total_amount", "10.00"}};
    std::string content;
    for (const auto& [name, value] : f) content += (content.empty() ? "" : "&") + name + "=" + value;
    std::string sig = k.rsa->sign_alipay_content(content);
    if (forged) flip(sig);
    f["sign_type"] = "RSA2";
    f["sign"] = sig;
    for (const auto& [name, value] : f) n.req.body += (n.req.body.empty() ? "" : "&") + name + "=" + form_escape(value);
    n.req.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded; charset=utf-8");
    n.event_ids.push_back(id);
  } else {
    throw std::invalid_argument("dst: no notifications for profile " + p);
  }
  return n;
}

}  // namespace payretry::dst
