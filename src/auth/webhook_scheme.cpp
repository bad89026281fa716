// The webhook scheme table and its dispatcher, the helpers every row shares,
// and the two rows that verify nothing: `none` and Mollie's id-only
// notification. The HMAC rows are in webhook_hmac.cpp, the RSA rows in
// webhook_signed.cpp.
#include "webhook_scheme.hpp"

#include <strings.h>

#include <exception>

#include "form_encoding.hpp"

namespace payretry {
namespace webhook {

WebhookVerdict refuse(std::string why) {
  // A reason may quote a header or a field the sender chose: it reaches
  // logs, so no control byte (a CR/LF forging a log line) and no byte
  // outside printable ASCII passes.
  for (char& c : why)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  WebhookVerdict v;
  v.kind = WebhookVerdict::refused;
  v.why = std::move(why);
  return v;
}

WebhookVerdict accept(std::string body) {
  WebhookVerdict v;
  v.kind = WebhookVerdict::verified;
  v.body = std::move(body);
  return v;
}

namespace {
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}
}  // namespace

std::vector<std::string_view> header_values(const Headers& headers, std::string_view name) {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : headers)
    if (same_name(n, name)) out.emplace_back(v);
  return out;
}

const std::string* single_header(const Headers& headers, std::string_view name, bool& repeated) {
  const std::string* found = nullptr;
  for (const auto& [n, v] : headers)
    if (same_name(n, name)) {
      if (found) repeated = true;
      found = &v;
    }
  return found;
}

bool parse_unix_seconds(std::string_view text, int64_t& seconds) {
  if (text.empty() || text.size() > 12) return false;
  int64_t s = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    s = s * 10 + (c - '0');
  }
  seconds = s;
  return true;
}

std::string outside_window(int64_t signed_unix_ms, int64_t now_unix_ms, int64_t tolerance_ms) {
  // A replayed notification is a real one, sent again: only its age tells.
  if (now_unix_ms - signed_unix_ms > tolerance_ms)
    return "the signed timestamp is too old (" + std::to_string((now_unix_ms - signed_unix_ms) / 1000) +
           " s, the window is " + std::to_string(tolerance_ms / 1000) + " s)";
  if (signed_unix_ms - now_unix_ms > tolerance_ms)
    return "the signed timestamp is too far in the future (" + std::to_string((signed_unix_ms - now_unix_ms) / 1000) +
           " s ahead, the window is " + std::to_string(tolerance_ms / 1000) + " s)";
  return {};
}

WebhookVerdict verify_none(const WebhookRequest&, const WebhookSecrets&, int64_t, int64_t) {
  return refuse("no scheme configured: a notification is never verified by default");
}

// Mollie's classic webhook: a form body `id=tr_...` and nothing signed. The
// id is all it says; the status comes from fetching the object with the API
// key ("fake calls ... never result in orders being processed").
WebhookVerdict verify_mollie_id_only(const WebhookRequest& request, const WebhookSecrets&, int64_t, int64_t) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (request.body.size() > 4096 || !form_decode(request.body, fields) || fields.size() != 1 ||
      fields[0].first != "id" || fields[0].second.empty() || fields[0].second.size() > 64)
    return refuse("malformed Mollie notification: the body is not one field id=<object id>");
  for (char c : fields[0].second)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return refuse("malformed Mollie notification: the id is not an object id");
  WebhookVerdict v;
  v.kind = WebhookVerdict::hint_only;
  v.why = "Mollie's id-only notification is not signed: look " + fields[0].second + " up";
  v.body = request.body;
  v.items.push_back(fields[0].second);
  return v;
}

}  // namespace webhook

const std::vector<WebhookScheme>& webhook_schemes() {
  using namespace webhook;
  static const std::vector<WebhookScheme> rows = {
      {"none", 0, 0, verify_none},
      // Stripe's SDKs: 300 s (stripe-go DefaultTolerance, stripe-python DEFAULT_TOLERANCE).
      {"stripe", webhook_signed | webhook_timestamped, 300000, verify_stripe},
      {"adyen", webhook_signed | webhook_batch, 0, verify_adyen},
      {"square", webhook_signed, 0, verify_square},
      {"checkout_com", webhook_signed, 0, verify_checkout_com},
      {"mollie_signed", webhook_signed, 0, verify_mollie_signed},
      {"mollie_id_only", webhook_id_only, 0, verify_mollie_id_only},
      // WeChat Pay's Java SDK refuses |now - ts| >= 5 min (WechatPay2Validator).
      {"wechatpay_v3", webhook_signed | webhook_timestamped | webhook_encrypted_body, 300000, verify_wechatpay_v3},
      {"alipay", webhook_signed, 0, verify_alipay},
      {"paypal_offline", webhook_signed, 0, verify_paypal_offline},
  };
  return rows;
}

const WebhookScheme* find_webhook_scheme(std::string_view name) {
  for (const WebhookScheme& s : webhook_schemes())
    if (name == s.name) return &s;
  return nullptr;
}

WebhookVerdict verify_webhook(std::string_view scheme, const WebhookRequest& request, const WebhookSecrets& secrets,
                              int64_t now_unix_ms, int64_t tolerance_ms) {
  const WebhookScheme* row = find_webhook_scheme(scheme.empty() ? std::string_view("none") : scheme);
  if (!row) return webhook::refuse("unknown webhook scheme \"" + std::string(scheme.substr(0, 64)) + "\"");
  try {
    WebhookVerdict v = row->verify(request, secrets, now_unix_ms,
                                   tolerance_ms > 0 ? tolerance_ms : row->default_tolerance_ms);
    // A refusal carries nothing that could be read as the event.
    if (v.kind == WebhookVerdict::refused) {
      v.body.clear();
      v.items.clear();
    }
    // Only a scheme with a key can verify.
    if (v.kind == WebhookVerdict::verified && !(row->capabilities & webhook_signed))
      return webhook::refuse("internal: scheme " + std::string(row->name) + " cannot verify");
    return v;
  } catch (const std::exception& e) {
    return webhook::refuse(std::string("verification failed: ") + e.what());
  } catch (...) {
    return webhook::refuse("verification failed");
  }
}

}  // namespace payretry
