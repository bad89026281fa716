#include "gate.hpp"

#include "alipay_gateway.hpp"
#include "crypto.hpp"
#include "keys.hpp"
#include "wechat_auth.hpp"

namespace payretry_sim {

bool admit(const Config& cfg, const OAuth2Tokens& tokens, const Request& req, Route route,
           int64_t now_s, Route* routed, std::string_view* body, std::string& storage, Reply& refusal,
           OpTarget* op) {
  const Profile& prof = *cfg.profile;
  const KeySet* keys = cfg.keys.get();
  *routed = route;
  *body = req.body;
  refusal.clear();
  switch (prof.auth) {
    case AuthScheme::bearer:
      break;
    case AuthScheme::oauth2_client_credentials:
      if (!tokens.live(req.header("Authorization"))) {
        set_canned(refusal, prof.unauthorized);
        return false;
      }
      break;
    case AuthScheme::wechatpay_v3: {
      const std::string fault =
          check_wechat_request(req.header("Authorization"), req.method, req.target, req.body,
                               keys ? &keys->wechat_merchant_pub : nullptr, now_s);
      if (!fault.empty()) {
        refusal.status = prof.unauthorized.status;
        refusal.body.assign(R"({"code":"SIGN_ERROR","message":)");
        append_json_string(refusal.body, fault);
        refusal.body.push_back('}');
        return false;
      }
      break;
    }
    case AuthScheme::alipay_rsa2: {
      GatewayCall call;
      refusal.status = 200;  // the gateway answers everything with 200
      if (!admit_gateway(req.query, req.header("Content-Type"), req.body,
                         keys ? &keys->alipay_app_pub : nullptr, now_s, &call, &refusal.body)) {
        return false;
      }
      *routed = call.method == "alipay.trade.pay" ? Route::create : Route::lookup;
      if (op && gateway_operation(call.method, op)) *routed = Route::operation;
      // The profile reads this JSON; the idempotency fingerprint is therefore the business
      // content alone, not the timestamp and sign that change with every retry.
      storage.assign(R"({"biz_content":)");
      append_json_string(storage, call.biz_content);
      storage.push_back('}');
      *body = storage;
      return true;
    }
  }
  return true;
}

bool signature_ok(const Config& cfg, const Request& req, Reply& refusal) {
  if (cfg.hmac_secret.empty()) return true;
  std::string message;
  message.reserve(req.method.size() + req.target.size() + req.body.size() + 2);
  message.append(req.method).append("\n").append(req.target).append("\n").append(req.body);
  const std::string expected = "v1=" + hmac_sha256_hex(cfg.hmac_secret, message);
  const std::string_view given = req.header("X-Signature");
  // A timing-safe comparison is beside the point for a test server; equality is the check.
  if (given == expected) return true;
  refusal.clear();
  refusal.status = 401;
  refusal.body = given.empty() ? R"({"error":{"type":"signature_error","message":"X-Signature is missing"}})"
                               : R"({"error":{"type":"signature_error","message":"X-Signature does not match"}})";
  return false;
}

void sign_answer(const Config& cfg, int64_t now_s, std::string& body, std::string& headers) {
  const KeySet* keys = cfg.keys.get();
  if (!keys) return;
  switch (cfg.profile->auth) {
    case AuthScheme::wechatpay_v3:
      append_wechat_answer_signature(headers, body, keys->wechat_platform_key, now_s);
      return;
    case AuthScheme::alipay_rsa2:
      sign_gateway_answer(body, keys->alipay_key);
      return;
    case AuthScheme::bearer:
    case AuthScheme::oauth2_client_credentials:
      return;
  }
}

}  // namespace payretry_sim
