// WeChat Pay API v3 signatures: the merchant's Authorization header on every request, and the
// platform's Wechatpay-* headers on every answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "crypto.hpp"

namespace payretry_sim {

// The platform public key id the answers name in Wechatpay-Serial (tests/keys/README.md).
inline constexpr std::string_view kWechatPlatformSerial = "PUB_KEY_ID_0119000001092026120200000000";
// How far a request's timestamp may be from now, either way.
inline constexpr int64_t kWechatMaxSkewS = 5 * 60;

// Checks `Authorization: WECHATPAY2-SHA256-RSA2048 mchid="..",nonce_str="..",signature="..",
// timestamp="..",serial_no=".."` (all five, any order, nothing else). Without a key only its
// form; with the merchant's public key also the signature over
// "METHOD\nTARGET\nTIMESTAMP\nNONCE\nBODY\n" (TARGET: path and query as sent) and the timestamp
// within kWechatMaxSkewS of now_s. Returns "" when the request passes, else what is wrong.
std::string check_wechat_request(std::string_view authorization, std::string_view method,
                                 std::string_view target, std::string_view body,
                                 const RsaKey* merchant_public, int64_t now_s);

// Appends the Wechatpay-Timestamp, -Nonce, -Serial, -Signature and -Signature-Type header lines
// ("Name: value\r\n") that sign `body`: RSA-SHA256 over "TIMESTAMP\nNONCE\nBODY\n".
void append_wechat_answer_signature(std::string& headers, std::string_view body,
                                    const RsaKey& platform_key, int64_t now_s);

}  // namespace payretry_sim
