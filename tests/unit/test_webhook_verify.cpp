// Webhook signature verification (issue 46, first step): every scheme of
// src/auth/webhook_scheme.hpp against notifications built here, byte for
// byte, from the providers' documented formats. Signatures, MACs and the
// AES-GCM envelope are made with OpenSSL directly (never with src/util's
// hmac/aead or RsaKey), on the test keys of tests/keys/.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "webhook_scheme.hpp"

namespace payretry {
namespace {

// ---- independent helpers ----------------------------------------------------------------------

std::string read_key(const std::string& name) {
  std::ifstream f(std::string(PAYRETRY_TEST_KEYS) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string hmac256(const std::string& key, const std::string& msg) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

std::string hex(const std::string& bytes) {
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::string b64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// base64(SHA256withRSA(message)) with the private key tests/keys/`file`.
std::string rsa_sign(const std::string& file, const std::string& message) {
  const std::string pem = read_key(file);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  std::string sig;
  if (key && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1) {
    sig.resize(len);
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(&sig[0]), &len,
                   reinterpret_cast<const unsigned char*>(message.data()), message.size());
    sig.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  if (sig.empty()) ADD_FAILURE() << "cannot sign with " << file;
  return b64(sig);
}

// base64(ciphertext || tag) of AES-256-GCM.
std::string gcm_seal(const std::string& key, const std::string& nonce, const std::string& aad,
                     const std::string& plaintext) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  std::string out(plaintext.size() + 16, '\0');
  int len = 0, total = 0;
  EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr);
  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr);
  EVP_EncryptInit_ex(ctx, nullptr, nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                     reinterpret_cast<const unsigned char*>(nonce.data()));
  EVP_EncryptUpdate(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()), static_cast<int>(aad.size()));
  EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(&out[0]), &len,
                    reinterpret_cast<const unsigned char*>(plaintext.data()), static_cast<int>(plaintext.size()));
  total = len;
  EVP_EncryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(&out[0]) + total, &len);
  total += len;
  EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &out[static_cast<size_t>(total)]);
  EVP_CIPHER_CTX_free(ctx);
  out.resize(static_cast<size_t>(total) + 16);
  return b64(out);
}

uint32_t crc32_reference(const std::string& s) {  // bit by bit, unlike the table in webhook_signed.cpp
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string percent(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

constexpr int64_t kNow = 1765000000000;  // ms
constexpr int64_t kNowS = kNow / 1000;

bool verified(const WebhookVerdict& v) { return v.kind == WebhookVerdict::verified; }
bool refused(const WebhookVerdict& v) { return v.kind == WebhookVerdict::refused; }
bool says(const WebhookVerdict& v, const std::string& words) { return v.why.find(words) != std::string::npos; }

WebhookRequest post(std::string body, Headers headers, std::string url = "https://shop.example/hooks") {
  WebhookRequest r;
  r.method = "POST";
  r.url = std::move(url);
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

WebhookSecrets with_keys(std::vector<std::string> keys) {
  WebhookSecrets s;
  s.keys = std::move(keys);
  return s;
}

// ---- the table ----------------------------------------------------------------------------------

TEST(WebhookSchemes, the_table_names_each_scheme_once_with_its_capabilities) {
  const char* names[] = {"none",          "stripe",         "adyen",        "square", "checkout_com", "mollie_signed",
                         "mollie_id_only", "wechatpay_v3", "alipay",       "paypal_offline"};
  EXPECT_EQ(webhook_schemes().size(), sizeof names / sizeof *names);
  for (const char* n : names) ASSERT_NE(find_webhook_scheme(n), nullptr) << n;
  EXPECT_EQ(find_webhook_scheme("none")->capabilities, 0u);
  EXPECT_EQ(find_webhook_scheme("mollie_id_only")->capabilities, unsigned(webhook_id_only));
  EXPECT_EQ(find_webhook_scheme("stripe")->capabilities, unsigned(webhook_signed | webhook_timestamped));
  EXPECT_EQ(find_webhook_scheme("adyen")->capabilities, unsigned(webhook_signed | webhook_batch));
  EXPECT_EQ(find_webhook_scheme("wechatpay_v3")->capabilities,
            unsigned(webhook_signed | webhook_timestamped | webhook_encrypted_body));
  EXPECT_EQ(find_webhook_scheme("stripe")->default_tolerance_ms, 300000);
  EXPECT_EQ(find_webhook_scheme("wechatpay_v3")->default_tolerance_ms, 300000);
  EXPECT_EQ(find_webhook_scheme("nope"), nullptr);
}

TEST(WebhookSchemes, no_scheme_configured_is_refused_never_verified) {
  const WebhookRequest r = post("{}", {{"Stripe-Signature", "t=1,v1=00"}});
  EXPECT_TRUE(refused(verify_webhook("none", r, with_keys({"k"}), kNow)));
  EXPECT_TRUE(says(verify_webhook("", r, with_keys({"k"}), kNow), "no scheme configured"));
  EXPECT_TRUE(says(verify_webhook("stripe2", r, with_keys({"k"}), kNow), "unknown webhook scheme"));
}

// ---- Stripe -------------------------------------------------------------------------------------

const char kStripeBody[] = R"({"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}})";

std::string stripe_header(const std::string& secret, int64_t t, const std::string& body) {
  return "t=" + std::to_string(t) + ",v1=" + hex(hmac256(secret, std::to_string(t) + "." + body));
}

TEST(WebhookStripe, a_signed_event_within_the_window_verifies_and_keeps_the_raw_body) {
  const WebhookVerdict v = verify_webhook(
      "stripe", post(kStripeBody, {{"stripe-signature", stripe_header("whsec_a", kNowS - 10, kStripeBody)}}),
      with_keys({"whsec_a"}), kNow);
  EXPECT_TRUE(verified(v)) << v.why;
  EXPECT_EQ(v.body, kStripeBody);
}

TEST(WebhookStripe, a_tampered_body_or_a_wrong_secret_has_no_valid_signature) {
  const std::string h = stripe_header("whsec_a", kNowS, kStripeBody);
  std::string tampered = kStripeBody;
  tampered[tampered.find("pi_1") + 3] = '2';
  const WebhookVerdict t = verify_webhook("stripe", post(tampered, {{"Stripe-Signature", h}}), with_keys({"whsec_a"}), kNow);
  EXPECT_TRUE(refused(t));
  EXPECT_TRUE(says(t, "no valid signature")) << t.why;
  EXPECT_TRUE(t.body.empty());
  const WebhookVerdict w = verify_webhook("stripe", post(kStripeBody, {{"Stripe-Signature", h}}), with_keys({"whsec_b"}), kNow);
  EXPECT_TRUE(says(w, "no valid signature")) << w.why;
}

TEST(WebhookStripe, any_v1_may_match_and_any_configured_secret_may_be_the_one) {
  // Stripe rolling the endpoint secret: two v1, the first from the old secret.
  const std::string old_sig = hex(hmac256("whsec_old", std::to_string(kNowS) + "." + kStripeBody));
  const std::string header = stripe_header("whsec_new", kNowS, kStripeBody) + ",v1=" + old_sig + ",v0=ignored";
  EXPECT_TRUE(verified(verify_webhook("stripe", post(kStripeBody, {{"Stripe-Signature", header}}), with_keys({"whsec_old"}), kNow)));
  // Our side rotating: the second configured secret matches.
  const std::string only_new = stripe_header("whsec_new", kNowS, kStripeBody);
  EXPECT_TRUE(verified(verify_webhook("stripe", post(kStripeBody, {{"Stripe-Signature", only_new}}),
                                      with_keys({"whsec_old", "whsec_new"}), kNow)));
}

TEST(WebhookStripe, a_stale_or_future_timestamp_is_refused_even_when_signed) {
  const auto at = [](int64_t t) {
    return verify_webhook("stripe", post(kStripeBody, {{"Stripe-Signature", stripe_header("whsec_a", t, kStripeBody)}}),
                          with_keys({"whsec_a"}), kNow);
  };
  EXPECT_TRUE(verified(at(kNowS - 300)));
  EXPECT_TRUE(verified(at(kNowS + 300)));
  EXPECT_TRUE(says(at(kNowS - 301), "too old")) << at(kNowS - 301).why;
  EXPECT_TRUE(says(at(kNowS + 301), "too far in the future")) << at(kNowS + 301).why;
  // The caller's tolerance replaces the default.
  const WebhookRequest r = post(kStripeBody, {{"Stripe-Signature", stripe_header("whsec_a", kNowS - 600, kStripeBody)}});
  EXPECT_TRUE(refused(verify_webhook("stripe", r, with_keys({"whsec_a"}), kNow)));
  EXPECT_TRUE(verified(verify_webhook("stripe", r, with_keys({"whsec_a"}), kNow, 601000)));
}

TEST(WebhookStripe, unsigned_malformed_and_unreadable_headers_say_which) {
  const auto with = [](Headers h) { return verify_webhook("stripe", post(kStripeBody, std::move(h)), with_keys({"whsec_a"}), kNow); };
  EXPECT_TRUE(says(with({}), "not signed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", ""}}), "not signed"));
  const std::string good = stripe_header("whsec_a", kNowS, kStripeBody);
  EXPECT_TRUE(says(with({{"Stripe-Signature", "v1=" + good.substr(good.find("v1=") + 3)}}), "malformed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", "t=abc,v1=00"}}), "malformed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", "t=-5,v1=00"}}), "malformed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", "t=1,t=2," + good.substr(good.find("v1="))}}), "malformed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", good}, {"Stripe-Signature", good}}), "malformed"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", "t=" + std::to_string(kNowS)}}), "no valid signature"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", "t=" + std::to_string(kNowS) + ",v1=zz"}}), "no valid signature"));
  EXPECT_TRUE(says(with({{"Stripe-Signature", ",,,=,==,t"}}), "malformed"));
}

// ---- Adyen --------------------------------------------------------------------------------------

const char kAdyenKey[] = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const char kAdyenKey2[] = "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF";

struct AdyenItem {
  std::string psp, original, merchant_account, merchant_ref, currency, event, success;
  long long value;
};

std::string adyen_item_json(const AdyenItem& i, const std::string& key_hex) {
  const std::string signed_text = i.psp + ":" + i.original + ":" + i.merchant_account + ":" + i.merchant_ref + ":" +
                                  std::to_string(i.value) + ":" + i.currency + ":" + i.event + ":" + i.success;
  const std::string sig = b64(hmac256(unhex(key_hex), signed_text));
  std::string j = R"({"NotificationRequestItem":{"additionalData":{"hmacSignature":")" + sig + R"("},)";
  j += R"("amount":{"currency":")" + i.currency + R"(","value":)" + std::to_string(i.value) + "},";
  j += R"("eventCode":")" + i.event + R"(","eventDate":"2026-12-06T13:00:00+01:00",)";
  j += R"("merchantAccountCode":")" + i.merchant_account + R"(","merchantReference":")" + i.merchant_ref + R"(",)";
  if (!i.original.empty()) j += R"("originalReference":")" + i.original + R"(",)";
  j += R"("pspReference":")" + i.psp + R"(","success":")" + i.success + R"("}})";
  return j;
}

std::string adyen_batch(const std::vector<std::string>& items) {
  std::string b = R"({"live":"false","notificationItems":[)";
  for (size_t i = 0; i < items.size(); ++i) b += (i ? "," : "") + items[i];
  return b + "]}";
}

const AdyenItem kAuth{"7914073381342284", "", "TestMerchant", "order-1", "EUR", "AUTHORISATION", "true", 1130};
const AdyenItem kRefund{"8815", "7914073381342284", "TestMerchant", "order-1", "EUR", "REFUND", "true", 500};

TEST(WebhookAdyen, every_item_of_a_batch_verifies_with_missing_fields_empty) {
  const std::string body = adyen_batch({adyen_item_json(kAuth, kAdyenKey), adyen_item_json(kRefund, kAdyenKey)});
  const WebhookVerdict v = verify_webhook("adyen", post(body, {}), with_keys({kAdyenKey}), kNow);
  ASSERT_TRUE(verified(v)) << v.why;
  ASSERT_EQ(v.items.size(), 2u);
  EXPECT_NE(v.items[0].find("AUTHORISATION"), std::string::npos);
  EXPECT_NE(v.items[1].find("REFUND"), std::string::npos);
  EXPECT_EQ(v.body, body);
}

TEST(WebhookAdyen, a_batch_with_one_bad_item_is_refused_whole) {
  std::string second = adyen_item_json(kRefund, kAdyenKey);
  second.replace(second.find("\"value\":500"), 11, "\"value\":501");
  const WebhookVerdict v =
      verify_webhook("adyen", post(adyen_batch({adyen_item_json(kAuth, kAdyenKey), second}), {}), with_keys({kAdyenKey}), kNow);
  EXPECT_TRUE(refused(v));
  EXPECT_TRUE(says(v, "item 1")) << v.why;
  EXPECT_TRUE(v.items.empty());
}

TEST(WebhookAdyen, a_wrong_key_fails_and_a_second_rotated_key_matches) {
  const std::string body = adyen_batch({adyen_item_json(kAuth, kAdyenKey2)});
  EXPECT_TRUE(refused(verify_webhook("adyen", post(body, {}), with_keys({kAdyenKey}), kNow)));
  EXPECT_TRUE(verified(verify_webhook("adyen", post(body, {}), with_keys({kAdyenKey, kAdyenKey2}), kNow)));
  // Items signed under different keys of the rotation both pass.
  const std::string mixed = adyen_batch({adyen_item_json(kAuth, kAdyenKey), adyen_item_json(kRefund, kAdyenKey2)});
  EXPECT_TRUE(verified(verify_webhook("adyen", post(mixed, {}), with_keys({kAdyenKey, kAdyenKey2}), kNow)));
}

TEST(WebhookAdyen, a_tampered_signed_field_fails_an_unsigned_one_does_not) {
  const std::string good = adyen_batch({adyen_item_json(kAuth, kAdyenKey)});
  std::string success = good;
  success.replace(success.find("\"success\":\"true\""), 16, "\"success\":\"fals\"");
  EXPECT_TRUE(refused(verify_webhook("adyen", post(success, {}), with_keys({kAdyenKey}), kNow)));
  // eventDate is not among the eight signed fields (Adyen's own choice).
  std::string date = good;
  date.replace(date.find("13:00:00"), 8, "14:00:00");
  EXPECT_TRUE(verified(verify_webhook("adyen", post(date, {}), with_keys({kAdyenKey}), kNow)));
}

TEST(WebhookAdyen, a_second_copy_of_a_signed_field_is_refused_not_read_past) {
  // Adyen signs fields, not the body: anyone holding a real notification can
  // add members. A second pspReference would be read by some JSON readers
  // in place of the signed first one.
  for (const char* name : {"pspReference", "PSPReference"}) {
    std::string after = adyen_batch({adyen_item_json(kAuth, kAdyenKey)});
    after.insert(after.rfind("}}"), std::string(",\"") + name + "\":\"someone-else\"");
    EXPECT_TRUE(says(verify_webhook("adyen", post(after, {}), with_keys({kAdyenKey}), kNow), "twice")) << name;
  }
  std::string amount = adyen_batch({adyen_item_json(kAuth, kAdyenKey)});
  amount.replace(amount.find("\"value\":1130"), 12, "\"value\":1130,\"value\":1");
  EXPECT_TRUE(says(verify_webhook("adyen", post(amount, {}), with_keys({kAdyenKey}), kNow), "twice"));
}

TEST(WebhookAdyen, malformed_notifications_are_refused) {
  const auto check = [](const std::string& body, std::vector<std::string> keys = {kAdyenKey}) {
    return verify_webhook("adyen", post(body, {}), with_keys(std::move(keys)), kNow);
  };
  EXPECT_TRUE(refused(check("")));
  EXPECT_TRUE(refused(check("not json")));
  EXPECT_TRUE(refused(check(R"({"notificationItems":[]})")));
  EXPECT_TRUE(refused(check(R"({"notificationItems":[{"NotificationRequestItem":{}}]})")));
  EXPECT_TRUE(says(check(R"({"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"!!"}}}]})"),
                   "malformed hmacSignature"));
  EXPECT_TRUE(says(check(adyen_batch({adyen_item_json(kAuth, kAdyenKey)}), {"not-hex"}), "not hex"));
  std::string fraction = adyen_batch({adyen_item_json(kAuth, kAdyenKey)});
  fraction.replace(fraction.find("\"value\":1130"), 12, "\"value\":11.5");
  EXPECT_TRUE(says(check(fraction), "amount.value"));
}

// ---- Square, Checkout.com, Mollie (signed) -----------------------------------------------------

const char kSquareUrl[] = "https://shop.example/square/hook";
const char kSquareBody[] = R"({"merchant_id":"M1","type":"payment.updated","event_id":"e1","data":{"id":"p1"}})";

TEST(WebhookSquare, url_plus_body_verifies_under_the_configured_notification_url) {
  const std::string sig = b64(hmac256("sq_key", std::string(kSquareUrl) + kSquareBody));
  WebhookSecrets s = with_keys({"sq_old", "sq_key"});
  s.notification_url = kSquareUrl;
  // Arrived through a proxy at another URL: the subscription's URL is what was signed.
  EXPECT_TRUE(verified(verify_webhook("square", post(kSquareBody, {{"X-Square-HmacSha256-Signature", sig}}, "http://10.0.0.5/hook"), s, kNow)));
  s.notification_url.clear();
  EXPECT_TRUE(refused(verify_webhook("square", post(kSquareBody, {{"x-square-hmacsha256-signature", sig}}, "http://10.0.0.5/hook"), s, kNow)));
  EXPECT_TRUE(verified(verify_webhook("square", post(kSquareBody, {{"x-square-hmacsha256-signature", sig}}, kSquareUrl), s, kNow)));
}

TEST(WebhookSquare, tampered_body_wrong_key_and_malformed_signature_are_refused) {
  WebhookSecrets s = with_keys({"sq_key"});
  s.notification_url = kSquareUrl;
  const std::string sig = b64(hmac256("sq_key", std::string(kSquareUrl) + kSquareBody));
  std::string tampered = kSquareBody;
  tampered[tampered.size() - 3] = '2';
  EXPECT_TRUE(says(verify_webhook("square", post(tampered, {{"x-square-hmacsha256-signature", sig}}), s, kNow), "no valid signature"));
  EXPECT_TRUE(refused(verify_webhook("square", post(kSquareBody, {{"x-square-hmacsha256-signature", sig}}), with_keys({"other"}), kNow)));
  EXPECT_TRUE(says(verify_webhook("square", post(kSquareBody, {{"x-square-hmacsha256-signature", "%%%"}}), s, kNow), "malformed"));
  EXPECT_TRUE(says(verify_webhook("square", post(kSquareBody, {}), s, kNow), "not signed"));
  EXPECT_TRUE(refused(verify_webhook("square", post("", {{"x-square-hmacsha256-signature", b64(hmac256("sq_key", kSquareUrl))}}), s, kNow)));
}

const char kCkoBody[] = R"({"id":"evt_az5","type":"payment_captured","data":{"id":"pay_1","action_id":"act_1"}})";

TEST(WebhookCheckout, hex_hmac_of_the_body_verifies_under_any_configured_key) {
  const std::string sig = hex(hmac256("cko_key", kCkoBody));
  EXPECT_TRUE(verified(verify_webhook("checkout_com", post(kCkoBody, {{"cko-signature", sig}}), with_keys({"cko_key"}), kNow)));
  EXPECT_TRUE(verified(verify_webhook("checkout_com", post(kCkoBody, {{"Cko-Signature", sig}}), with_keys({"x", "cko_key"}), kNow)));
  EXPECT_TRUE(refused(verify_webhook("checkout_com", post(kCkoBody, {{"Cko-Signature", sig}}), with_keys({"x"}), kNow)));
  std::string tampered = kCkoBody;
  tampered.replace(tampered.find("captured"), 8, "declined");
  EXPECT_TRUE(says(verify_webhook("checkout_com", post(tampered, {{"Cko-Signature", sig}}), with_keys({"cko_key"}), kNow), "no valid signature"));
  EXPECT_TRUE(says(verify_webhook("checkout_com", post(kCkoBody, {{"Cko-Signature", sig.substr(1)}}), with_keys({"cko_key"}), kNow), "malformed"));
  EXPECT_TRUE(says(verify_webhook("checkout_com", post(kCkoBody, {}), with_keys({"cko_key"}), kNow), "not signed"));
  EXPECT_TRUE(says(verify_webhook("checkout_com", post(kCkoBody, {{"Cko-Signature", sig}}), with_keys({}), kNow), "no signature key"));
}

const char kMollieBody[] = R"({"resource":"event","id":"event_1","type":"payment.paid","entityId":"tr_1"})";

TEST(WebhookMollie, signed_notifications_verify_with_or_without_the_sha256_prefix) {
  const std::string sig = hex(hmac256("mollie_secret", kMollieBody));
  const WebhookSecrets s = with_keys({"mollie_secret"});
  EXPECT_TRUE(verified(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", sig}}), s, kNow)));
  EXPECT_TRUE(verified(verify_webhook("mollie_signed", post(kMollieBody, {{"x-mollie-signature", "sha256=" + sig}}), s, kNow)));
  // Mollie rotating its secret sends two signatures: one header each, or joined.
  const std::string old_sig = "sha256=" + hex(hmac256("mollie_old", kMollieBody));
  EXPECT_TRUE(verified(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", old_sig}, {"X-Mollie-Signature", "sha256=" + sig}}), s, kNow)));
  EXPECT_TRUE(verified(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", old_sig + ", sha256=" + sig}}), s, kNow)));
  EXPECT_TRUE(verified(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", old_sig}}), with_keys({"mollie_secret", "mollie_old"}), kNow)));
}

TEST(WebhookMollie, signed_tampered_wrong_key_and_unsigned_are_refused) {
  const std::string sig = hex(hmac256("mollie_secret", kMollieBody));
  std::string tampered = kMollieBody;
  tampered.replace(tampered.find("paid"), 4, "fail");
  EXPECT_TRUE(refused(verify_webhook("mollie_signed", post(tampered, {{"X-Mollie-Signature", sig}}), with_keys({"mollie_secret"}), kNow)));
  EXPECT_TRUE(refused(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", sig}}), with_keys({"other"}), kNow)));
  EXPECT_TRUE(says(verify_webhook("mollie_signed", post(kMollieBody, {}), with_keys({"mollie_secret"}), kNow), "not signed"));
  EXPECT_TRUE(says(verify_webhook("mollie_signed", post(kMollieBody, {{"X-Mollie-Signature", "sha256="}}), with_keys({"mollie_secret"}), kNow), "malformed"));
}

TEST(WebhookMollie, an_id_only_notification_is_a_hint_never_verified) {
  const WebhookVerdict v = verify_webhook("mollie_id_only", post("id=tr_WDqYK6vllg", {{"Content-Type", "application/x-www-form-urlencoded"}}), with_keys({"k"}), kNow);
  EXPECT_EQ(v.kind, WebhookVerdict::hint_only);
  EXPECT_TRUE(says(v, "tr_WDqYK6vllg"));
  ASSERT_EQ(v.items.size(), 1u);
  EXPECT_EQ(v.items[0], "tr_WDqYK6vllg");
  // Even carrying what looks like a signature, it says only an id.
  const std::string sig = hex(hmac256("k", "id=tr_WDqYK6vllg"));
  EXPECT_EQ(verify_webhook("mollie_id_only", post("id=tr_WDqYK6vllg", {{"X-Mollie-Signature", sig}}), with_keys({"k"}), kNow).kind,
            WebhookVerdict::hint_only);
  EXPECT_TRUE(refused(verify_webhook("mollie_id_only", post("id=tr_1&status=paid", {}), {}, kNow)));
  EXPECT_TRUE(refused(verify_webhook("mollie_id_only", post("id=../../x", {}), {}, kNow)));
  EXPECT_TRUE(refused(verify_webhook("mollie_id_only", post("", {}), {}, kNow)));
}

// ---- WeChat Pay v3 ------------------------------------------------------------------------------

const char kPlatformSerial[] = "PUB_KEY_ID_0119000001092026120200000000";
const char kApiV3Key[] = "0123456789abcdefghijABCDEFGHIJ01";  // 32 bytes
const char kWxPlain[] = R"({"mchid":"1900000109","out_trade_no":"order-1","transaction_id":"4200","trade_state":"SUCCESS","amount":{"total":100,"currency":"CNY"}})";

std::string wx_body(const std::string& api_key = kApiV3Key, const std::string& aad = "transaction",
                    const std::string& nonce = "fdasflkja484") {
  return R"({"id":"EV-2018022511223320873","create_time":"2026-12-06T13:00:00+08:00","resource_type":"encrypt-resource",)"
         R"("event_type":"TRANSACTION.SUCCESS","summary":"ok","resource":{"algorithm":"AEAD_AES_256_GCM",)"
         R"("ciphertext":")" + gcm_seal(api_key, nonce, aad, kWxPlain) + R"(","associated_data":")" + aad +
         R"(","original_type":"transaction","nonce":")" + nonce + R"("}})";
}

Headers wx_headers(const std::string& body, int64_t ts = kNowS, const std::string& key_file = "wechat_platform_key.pem",
                   const std::string& serial = kPlatformSerial) {
  const std::string nonce = "5K8264ILTKCH16CQ2502SI8ZNMTM67VS";
  const std::string sig = rsa_sign(key_file, std::to_string(ts) + "\n" + nonce + "\n" + body + "\n");
  return {{"Wechatpay-Signature", sig}, {"Wechatpay-Timestamp", std::to_string(ts)}, {"Wechatpay-Nonce", nonce},
          {"Wechatpay-Serial", serial}, {"Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048"}};
}

WebhookSecrets wx_secrets() {
  WebhookSecrets s;
  s.api_v3_key = kApiV3Key;
  s.public_key_pem = read_key("wechat_platform_pub.pem");
  s.public_key_id = kPlatformSerial;
  return s;
}

TEST(WebhookWeChatPay, a_signed_notification_verifies_and_its_body_is_the_decrypted_resource) {
  const std::string body = wx_body();
  const WebhookVerdict v = verify_webhook("wechatpay_v3", post(body, wx_headers(body)), wx_secrets(), kNow);
  ASSERT_TRUE(verified(v)) << v.why;
  EXPECT_EQ(v.body, kWxPlain);
  // Header names in any case.
  Headers lower = wx_headers(body);
  for (auto& h : lower)
    for (char& c : h.first) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_TRUE(verified(verify_webhook("wechatpay_v3", post(body, lower), wx_secrets(), kNow)));
}

TEST(WebhookWeChatPay, tampered_body_wrong_key_and_wrong_serial_are_refused) {
  const std::string body = wx_body();
  const Headers h = wx_headers(body);
  std::string tampered = body;
  tampered.replace(tampered.find("TRANSACTION.SUCCESS"), 19, "TRANSACTION.SUCCESX");
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(tampered, h), wx_secrets(), kNow), "no valid signature"));
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, wx_headers(body, kNowS, "wechat_merchant_key.pem")), wx_secrets(), kNow),
                   "no valid signature"));
  const WebhookVerdict serial = verify_webhook("wechatpay_v3", post(body, wx_headers(body, kNowS, "wechat_platform_key.pem", "PUB_KEY_ID_OTHER")), wx_secrets(), kNow);
  EXPECT_TRUE(says(serial, "not the configured platform key")) << serial.why;
}

TEST(WebhookWeChatPay, outside_five_minutes_either_way_is_refused) {
  const std::string body = wx_body();
  EXPECT_TRUE(verified(verify_webhook("wechatpay_v3", post(body, wx_headers(body, kNowS - 300)), wx_secrets(), kNow)));
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, wx_headers(body, kNowS - 301)), wx_secrets(), kNow), "too old"));
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, wx_headers(body, kNowS + 301)), wx_secrets(), kNow), "future"));
}

TEST(WebhookWeChatPay, a_resource_that_does_not_decrypt_is_refused_though_signed) {
  // Sealed under another APIv3 key; signed correctly.
  const std::string other = wx_body("ZYXWVUTSRQPONMLKJIHGFEDCBA987654");
  const WebhookVerdict v = verify_webhook("wechatpay_v3", post(other, wx_headers(other)), wx_secrets(), kNow);
  EXPECT_TRUE(says(v, "does not decrypt")) << v.why;
  EXPECT_TRUE(v.body.empty());
  // associated_data in the envelope is not what was sealed.
  std::string aad = wx_body();
  const std::string sealed_aad = R"("associated_data":"transaction")";
  aad.replace(aad.find(sealed_aad), sealed_aad.size(), R"("associated_data":"transactiox")");
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(aad, wx_headers(aad)), wx_secrets(), kNow), "does not decrypt"));
  WebhookSecrets short_key = wx_secrets();
  short_key.api_v3_key = "short";
  const std::string body = wx_body();
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, wx_headers(body)), short_key, kNow), "32 bytes"));
}

TEST(WebhookWeChatPay, malformed_headers_are_refused) {
  const std::string body = wx_body();
  const auto without = [&](const std::string& name) {
    Headers h = wx_headers(body);
    for (auto it = h.begin(); it != h.end(); ++it)
      if (it->first == name) {
        h.erase(it);
        break;
      }
    return verify_webhook("wechatpay_v3", post(body, h), wx_secrets(), kNow);
  };
  EXPECT_TRUE(says(without("Wechatpay-Nonce"), "malformed"));
  EXPECT_TRUE(says(without("Wechatpay-Serial"), "malformed"));
  EXPECT_TRUE(verified(without("Wechatpay-Signature-Type")));
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, {}), wx_secrets(), kNow), "not signed"));
  Headers h = wx_headers(body);
  h[4].second = "WECHATPAY2-SM2-WITH-SM3";
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, h), wx_secrets(), kNow), "Signature-Type"));
  h = wx_headers(body);
  h[1].second = "17650000O0";
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, h), wx_secrets(), kNow), "Timestamp"));
  h = wx_headers(body);
  h.push_back(h[0]);
  EXPECT_TRUE(says(verify_webhook("wechatpay_v3", post(body, h), wx_secrets(), kNow), "more than once"));
  WebhookSecrets bad = wx_secrets();
  bad.public_key_pem = "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n";
  EXPECT_TRUE(refused(verify_webhook("wechatpay_v3", post(body, wx_headers(body)), bad, kNow)));
}

// ---- Alipay -------------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> alipay_params() {
  return {{"notify_time", "2026-12-06 21:00:00"}, {"notify_type", "trade_status_sync"},
          {"notify_id", "ac05099524730693a8b330c5ecf72da9786"}, {"app_id", "2021000000000001"},
          {"charset", "utf-8"}, {"version", "1.0"}, {"trade_no", "2026120622001"},
          {"out_trade_no", "order-1"}, {"trade_status", "TRADE_SUCCESS"}, {"total_amount", "88.88"},
          {"subject", "测试 订单 & more"}, {"body", ""}};
}

// The form Alipay posts: sign over the sorted k=v (raw values, sign and
// sign_type left out), every field percent-encoded, in `order`.
std::string alipay_form(std::vector<std::pair<std::string, std::string>> params, const std::string& key_file,
                        bool reverse = false, const std::string& sign_type = "RSA2") {
  auto sorted = params;
  std::sort(sorted.begin(), sorted.end());
  std::string content;
  for (const auto& [k, v] : sorted) content += (content.empty() ? "" : "&") + k + "=" + v;
  params.emplace_back("sign", rsa_sign(key_file, content));
  if (!sign_type.empty()) params.emplace_back("sign_type", sign_type);
  if (reverse) std::reverse(params.begin(), params.end());
  std::string form;
  for (const auto& [k, v] : params) form += (form.empty() ? "" : "&") + percent(k) + "=" + percent(v);
  return form;
}

WebhookSecrets alipay_secrets() {
  WebhookSecrets s;
  s.public_key_pem = read_key("alipay_pub.pem");
  return s;
}

TEST(WebhookAlipay, a_signed_notification_verifies_in_any_field_order) {
  const WebhookVerdict v = verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_key.pem"), {}), alipay_secrets(), kNow);
  EXPECT_TRUE(verified(v)) << v.why;
  EXPECT_TRUE(verified(verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_key.pem", true), {}), alipay_secrets(), kNow)));
  // '+' for a space, as an HTML form writes it.
  std::string plus = alipay_form(alipay_params(), "alipay_key.pem");
  const size_t at = plus.find("2026-12-06%2021");
  plus.replace(at, 15, "2026-12-06+21");
  EXPECT_TRUE(verified(verify_webhook("alipay", post(plus, {}), alipay_secrets(), kNow)));
}

TEST(WebhookAlipay, tampered_wrong_key_and_weak_or_missing_signatures_are_refused) {
  std::string tampered = alipay_form(alipay_params(), "alipay_key.pem");
  tampered.replace(tampered.find("88.88"), 5, "0.01");
  EXPECT_TRUE(says(verify_webhook("alipay", post(tampered, {}), alipay_secrets(), kNow), "no valid signature"));
  EXPECT_TRUE(refused(verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_app_key.pem"), {}), alipay_secrets(), kNow)));
  EXPECT_TRUE(says(verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_key.pem", false, "RSA"), {}), alipay_secrets(), kNow), "not RSA2"));
  EXPECT_TRUE(verified(verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_key.pem", false, ""), {}), alipay_secrets(), kNow)));
  EXPECT_TRUE(says(verify_webhook("alipay", post("trade_status=TRADE_SUCCESS&out_trade_no=1", {}), alipay_secrets(), kNow), "not signed"));
  const std::string twice = alipay_form(alipay_params(), "alipay_key.pem") + "&out_trade_no=order-2";
  EXPECT_TRUE(says(verify_webhook("alipay", post(twice, {}), alipay_secrets(), kNow), "more than once"));
  EXPECT_TRUE(refused(verify_webhook("alipay", post("a=%zz", {}), alipay_secrets(), kNow)));
  EXPECT_TRUE(says(verify_webhook("alipay", post(alipay_form(alipay_params(), "alipay_key.pem"), {}), {}, kNow), "no Alipay public key"));
}

// ---- PayPal (offline) ---------------------------------------------------------------------------

const char kPaypalBody[] = R"({"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"CAP-1"}})";
const char kWebhookId[] = "1JE4291016473214C";

Headers paypal_headers(const std::string& body, const std::string& webhook_id = kWebhookId,
                       const std::string& key_file = "alipay_key.pem") {
  const std::string id = "103e3700-8b62-11ef-9f39-3b3c6e7b8c2b", time = "2026-12-06T13:00:00Z";
  const std::string sig = rsa_sign(key_file, id + "|" + time + "|" + webhook_id + "|" + std::to_string(crc32_reference(body)));
  return {{"PAYPAL-TRANSMISSION-ID", id}, {"PAYPAL-TRANSMISSION-TIME", time}, {"PAYPAL-TRANSMISSION-SIG", sig},
          {"PAYPAL-AUTH-ALGO", "SHA256withRSA"}, {"PAYPAL-CERT-URL", "https://evil.example/cert.pem"}};
}

WebhookSecrets paypal_secrets() {
  WebhookSecrets s;
  s.public_key_pem = read_key("alipay_pub.pem");  // any pinned RSA key: the tests have no PayPal one
  s.webhook_id = kWebhookId;
  return s;
}

TEST(WebhookPaypal, transmission_id_time_webhook_id_and_crc32_verify_with_the_pinned_key) {
  EXPECT_EQ(crc32_reference("123456789"), 0xCBF43926u);  // the CRC-32 check value
  const WebhookVerdict v = verify_webhook("paypal_offline", post(kPaypalBody, paypal_headers(kPaypalBody)), paypal_secrets(), kNow);
  EXPECT_TRUE(verified(v)) << v.why;
  EXPECT_EQ(v.body, kPaypalBody);
}

TEST(WebhookPaypal, tampered_body_wrong_key_or_webhook_id_and_missing_headers_are_refused) {
  std::string tampered = kPaypalBody;
  tampered.replace(tampered.find("CAP-1"), 5, "CAP-2");
  EXPECT_TRUE(says(verify_webhook("paypal_offline", post(tampered, paypal_headers(kPaypalBody)), paypal_secrets(), kNow), "no valid signature"));
  EXPECT_TRUE(refused(verify_webhook("paypal_offline", post(kPaypalBody, paypal_headers(kPaypalBody, kWebhookId, "wechat_platform_key.pem")), paypal_secrets(), kNow)));
  EXPECT_TRUE(refused(verify_webhook("paypal_offline", post(kPaypalBody, paypal_headers(kPaypalBody, "OTHER-WEBHOOK")), paypal_secrets(), kNow)));
  Headers h = paypal_headers(kPaypalBody);
  h[3].second = "SHA1withRSA";
  EXPECT_TRUE(says(verify_webhook("paypal_offline", post(kPaypalBody, h), paypal_secrets(), kNow), "AUTH-ALGO"));
  h = paypal_headers(kPaypalBody);
  h.erase(h.begin());
  EXPECT_TRUE(says(verify_webhook("paypal_offline", post(kPaypalBody, h), paypal_secrets(), kNow), "malformed"));
  EXPECT_TRUE(says(verify_webhook("paypal_offline", post(kPaypalBody, {}), paypal_secrets(), kNow), "not signed"));
  WebhookSecrets no_id = paypal_secrets();
  no_id.webhook_id.clear();
  EXPECT_TRUE(says(verify_webhook("paypal_offline", post(kPaypalBody, paypal_headers(kPaypalBody)), no_id, kNow), "webhook id"));
}

// ---- hostile input: never a crash, never verified ----------------------------------------------

TEST(WebhookHostile, hostile_requests_never_crash_and_never_verify) {
  const std::string huge(1 << 20, 'A');
  std::vector<Headers> header_sets = {
      {},
      {{"", ""}},
      {{"Stripe-Signature", huge}},
      {{"Stripe-Signature", "t=" + huge + ",v1=" + huge}},
      {{"Stripe-Signature", "t=99999999999999999999,v1=00"}},
      {{"x-square-hmacsha256-signature", "===="}, {"Cko-Signature", "0g"}, {"X-Mollie-Signature", "sha256=,,,"}},
      {{"Wechatpay-Signature", huge}, {"Wechatpay-Timestamp", "1"}, {"Wechatpay-Nonce", "n"}, {"Wechatpay-Serial", "s"}},
      {{"Wechatpay-Signature", "!!"}, {"Wechatpay-Timestamp", std::to_string(kNowS)}, {"Wechatpay-Nonce", ""}, {"Wechatpay-Serial", kPlatformSerial}},
      {{"PAYPAL-TRANSMISSION-SIG", "@@@"}, {"PAYPAL-TRANSMISSION-ID", huge}, {"PAYPAL-TRANSMISSION-TIME", "x"}},
  };
  std::vector<std::string> bodies = {"", huge, "{", "id=", "=&=&", std::string("\0\xff\xfe", 3),
                                     R"({"notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":")" + huge + R"("}}}]})",
                                     R"({"notificationItems":[{"NotificationRequestItem":{"amount":7,"additionalData":{"hmacSignature":"AAAA"}}}]})",
                                     R"({"resource_type":"encrypt-resource","resource":{"algorithm":"AEAD_AES_256_GCM","ciphertext":"AAAA","nonce":"n"}})",
                                     "sign=" + huge + "&sign_type=RSA2"};
  WebhookSecrets all = wx_secrets();
  all.keys = {"k", kAdyenKey};
  all.webhook_id = kWebhookId;
  all.notification_url = "https://x";
  std::mt19937 rng(46);
  for (const WebhookScheme& scheme : webhook_schemes())
    for (const Headers& h : header_sets)
      for (const std::string& body : bodies) {
        WebhookRequest r = post(body, h);
        // Random byte flips in one header value and the body.
        if (!r.body.empty() && r.body.size() < 4096) r.body[rng() % r.body.size()] ^= static_cast<char>(1 + rng() % 255);
        const WebhookVerdict v = verify_webhook(scheme.name, r, all, kNow);
        EXPECT_NE(v.kind, WebhookVerdict::verified) << scheme.name;
        if (v.kind == WebhookVerdict::refused) {
          EXPECT_FALSE(v.why.empty()) << scheme.name;
        }
      }
}

TEST(WebhookHostile, a_flipped_byte_anywhere_in_a_valid_notification_is_never_verified_with_other_content) {
  // For each signed scheme, a valid notification with one byte flipped at
  // random (body or a signature header) either fails or, when the flip hit
  // something unsigned, still yields exactly the original content.
  std::mt19937 rng(4646);
  const std::string stripe_sig = stripe_header("whsec_a", kNowS, kStripeBody);
  const std::string wxb = wx_body();
  struct Case {
    const char* scheme;
    WebhookRequest request;
    WebhookSecrets secrets;
  };
  std::vector<Case> cases = {
      {"stripe", post(kStripeBody, {{"Stripe-Signature", stripe_sig}}), with_keys({"whsec_a"})},
      {"checkout_com", post(kCkoBody, {{"Cko-Signature", hex(hmac256("cko_key", kCkoBody))}}), with_keys({"cko_key"})},
      {"wechatpay_v3", post(wxb, wx_headers(wxb)), wx_secrets()},
      {"alipay", post(alipay_form(alipay_params(), "alipay_key.pem"), {}), alipay_secrets()},
  };
  for (Case& c : cases) {
    const WebhookVerdict original = verify_webhook(c.scheme, c.request, c.secrets, kNow);
    ASSERT_TRUE(verified(original)) << c.scheme << ": " << original.why;
    for (int i = 0; i < 200; ++i) {
      WebhookRequest r = c.request;
      std::string& target = (rng() % 2 || r.headers.empty()) ? r.body : r.headers[rng() % r.headers.size()].second;
      if (target.empty()) continue;
      target[rng() % target.size()] ^= static_cast<char>(1 + rng() % 255);
      const WebhookVerdict v = verify_webhook(c.scheme, r, c.secrets, kNow);
      if (verified(v)) {
        EXPECT_EQ(v.body, original.body) << c.scheme;
      }
    }
  }
}

}  // namespace
}  // namespace payretry

// ---- what an outside review found (issue 46) ----------------------------------------------------
namespace payretry {
namespace {

TEST(WebhookKeys, an_empty_key_in_the_list_refuses_every_notification_rather_than_verify_what_anyone_can_sign) {
  // An HMAC under "" is computable by anyone: an unset variable, or a
  // trailing comma in a rotation list, must not turn into a forgery.
  const std::string forged_stripe = stripe_header("", kNowS, kStripeBody);
  EXPECT_TRUE(says(verify_webhook("stripe", post(kStripeBody, {{"Stripe-Signature", forged_stripe}}),
                                  with_keys({"whsec_a", ""}), kNow),
                   "empty"));
  const std::string forged = hex(hmac256("", kSquareBody));
  EXPECT_TRUE(says(verify_webhook("checkout_com", post(kSquareBody, {{"Cko-Signature", forged}}), with_keys({""}), kNow),
                   "empty"));
  EXPECT_TRUE(refused(verify_webhook("adyen", post(adyen_batch({adyen_item_json(kAuth, kAdyenKey)}), {}),
                                     with_keys({kAdyenKey, ""}), kNow)));
}

TEST(WebhookAdyen, a_colon_moved_between_signed_fields_does_not_keep_the_signature) {
  // "MA" + "shop:1001" and "MA:shop" + "1001" join to the same signed text:
  // only the merchant's own reference may hold a ':'.
  AdyenItem genuine = kAuth;
  genuine.merchant_account = "MA";
  genuine.merchant_ref = "shop:1001";
  ASSERT_TRUE(verified(verify_webhook("adyen", post(adyen_batch({adyen_item_json(genuine, kAdyenKey)}), {}),
                                      with_keys({kAdyenKey}), kNow)));
  AdyenItem shifted = genuine;
  shifted.merchant_account = "MA:shop";
  shifted.merchant_ref = "1001";
  // Signed over the very same text as the genuine item.
  const WebhookVerdict v =
      verify_webhook("adyen", post(adyen_batch({adyen_item_json(shifted, kAdyenKey)}), {}), with_keys({kAdyenKey}), kNow);
  EXPECT_TRUE(says(v, "holds a ':'")) << v.why;
}

}  // namespace
}  // namespace payretry

namespace payretry {
namespace {

TEST(WebhookRefusals, a_reason_never_carries_the_senders_control_bytes) {
  const WebhookVerdict v = verify_webhook(
      "wechatpay_v3",
      post("{}", {{"Wechatpay-Signature", "c2ln"}, {"Wechatpay-Timestamp", "1"}, {"Wechatpay-Nonce", "n"},
                  {"Wechatpay-Serial", "S"}, {"Wechatpay-Signature-Type", "X\r\nforged log line"}}),
      with_keys({}), kNow);
  ASSERT_TRUE(says(v, "unsupported Wechatpay-Signature-Type X??forged log line")) << v.why;
  EXPECT_EQ(v.why.find('\r'), std::string::npos) << v.why;
  EXPECT_EQ(v.why.find('\n'), std::string::npos) << v.why;
}

}  // namespace
}  // namespace payretry
