// Alipay's open-platform gateway. A request is POST /gateway.do with the common parameters
// (app_id, method, format, charset, sign_type, timestamp, version, sign) in the query string or
// the form body and biz_content (JSON text) in an application/x-www-form-urlencoded body, signed
// RSA2 by the merchant's app. An answer is {"<method>_response":{...}} (or "error_response"),
// and carries Alipay's "sign" over the exact bytes of that member's value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "crypto.hpp"

namespace payretry_sim {

// How far a request's timestamp may be from now, either way.
inline constexpr int64_t kAlipayMaxSkewS = 15 * 60;

// An admitted gateway request.
struct GatewayCall {
  // alipay.trade.pay, alipay.trade.query, or an operation (operations.hpp: alipay.trade.refund,
  // alipay.trade.fastpay.refund.query, alipay.trade.cancel, alipay.trade.close)
  std::string method;
  std::string biz_content;  // the decoded JSON text, as sent
};

// Reads and checks one gateway request: every common parameter and biz_content present and
// non-empty (query and form body together; the body counts only with a form Content-Type, so
// a JSON body leaves them missing), a known method, format JSON, charset utf-8, sign_type RSA2,
// timestamp "yyyy-MM-dd HH:mm:ss". With the app's public key also the timestamp (UTC+8) within
// kAlipayMaxSkewS of now_s and the sign: RSA-SHA256 over every parameter but sign, sorted by
// name, non-empty decoded values, "k=v" joined by '&'. On refusal returns false with
// `refusal` set to the gateway's answer body (sent with HTTP 200); nothing may be processed.
bool admit_gateway(std::string_view query, std::string_view content_type, std::string_view body,
                   const RsaKey* app_public, int64_t now_s, GatewayCall* out, std::string* refusal);

// Adds "sign" after the answer's single *_response member:
// {"alipay_trade_pay_response":{...}} -> {"alipay_trade_pay_response":{...},"sign":"..."},
// signing the member's value byte for byte. Leaves a body of any other shape alone.
void sign_gateway_answer(std::string& body, const RsaKey& alipay_key);

}  // namespace payretry_sim
