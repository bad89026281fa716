// The provider's authentication, per mode: what a create or lookup must carry before the
// provider acts on it (WeChat Pay v3's signed Authorization, Alipay's signed gateway form,
// PayPal's OAuth2 bearer token), and the signature the provider puts on its answers when keys
// are loaded. The plain --api-key bearer of the other modes stays State::authorized.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "http_conn.hpp"
#include "profiles.hpp"
#include "state.hpp"

namespace payretry_sim {

// `route` is route()'s answer for req: Route::create, create_form, lookup or gateway. Returns
// false with `refusal` set to the provider's answer when the request does not pass; nothing may
// be processed then. On success `*routed` is the route to serve (a gateway call becomes create
// or lookup by its method) and `*body` the body the profile reads: the request's own, or for
// Alipay the admitted form as {"biz_content":"<JSON text>"}, kept in `storage`.
// An Alipay operation method becomes Route::operation with `*op` set (gateway_operation).
bool admit(const Config& cfg, const OAuth2Tokens& tokens, const Request& req, Route route,
           int64_t now_s, Route* routed, std::string_view* body, std::string& storage, Reply& refusal,
           OpTarget* op = nullptr);

// --hmac-secret: true when `req` carries `X-Signature: v1=<lower-case hex HMAC-SHA256(secret,
// METHOD "\n" TARGET "\n" BODY)>`, TARGET being the path and query exactly as sent. Otherwise
// false with `refusal` set to a 401. True when no secret is configured.
bool signature_ok(const Config& cfg, const Request& req, Reply& refusal);

// With keys loaded, signs a provider answer as the mode's provider does: WeChat Pay appends its
// Wechatpay-* header lines to `headers`, Alipay adds "sign" to `body`. Other modes: nothing.
void sign_answer(const Config& cfg, int64_t now_s, std::string& body, std::string& headers);

}  // namespace payretry_sim
