// payretry-sim's authentication, per provider mode: every request it must refuse is refused
// with the provider's answer and processes nothing, every request a real client would send
// passes, and with --keys its answers carry signatures that verify with the public halves of
// the test keys. The requests are signed by sim_auth.hpp, written apart from the simulator.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server.hpp"
#include "sim_auth.hpp"
#include "sim_client.hpp"

namespace {

using namespace simtest;
using payretry_sim::Server;
using Headers = std::vector<std::string>;

Response call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = "",
              const Headers& headers = {}) {
  Conn c(port);
  return c.request(method, target, body, headers);
}

class Auth : public ::testing::Test {
 protected:
  void start(const std::string& profile, bool keys, Options o = fast_options()) {
    o.profile = profile;
    if (keys) o.keys_dir = PAYRETRY_TEST_KEYS_DIR;
    sim_ = std::make_unique<Server>(o);
    port_ = sim_->port();
  }
  void TearDown() override {
    if (sim_) sim_->stop();
  }
  // Nothing processed: no payment request reached the provider, no charge.
  void expect_untouched() {
    EXPECT_EQ(sim_->requests(), 0);
    EXPECT_EQ(sim_->total_charges(), 0);
  }
  double stat(const char* name) { return Json(get(port_, "/__admin/stats").body).num(name); }

  std::unique_ptr<Server> sim_;
  uint16_t port_ = 0;
};

// ---- WeChat Pay v3 ------------------------------------------------------------------------------

const char kWxCreate[] = "/v3/pay/transactions/native";
const char kWxLookup[] = "/v3/pay/transactions/out-trade-no/wx_a1?mchid=1900000109";

std::string wx_body(const std::string& out_trade_no) {
  return R"({"appid":"wxd678efh567hg6787","mchid":"1900000109","description":"test","out_trade_no":")" +
         out_trade_no + R"(","notify_url":"https://example.com/n","amount":{"total":100,"currency":"CNY"}})";
}

void expect_sign_error(const Response& r, const std::string& why) {
  EXPECT_EQ(r.status, 401) << r.body;
  Json j(r.body);
  EXPECT_EQ(j.str("code"), "SIGN_ERROR") << r.body;
  EXPECT_NE(j.str("message").find(why), std::string::npos) << r.body;
}

std::string authorization_line(const std::string& params) {
  return "Authorization: WECHATPAY2-SHA256-RSA2048 " + params;
}

TEST_F(Auth, wechat_without_keys_requires_a_well_formed_authorization) {
  start("wechatpay_v3", false);
  const std::string body = wx_body("wx_f1");
  expect_sign_error(call(port_, "POST", kWxCreate, body), "missing");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {"Authorization: Bearer sk_test"}), "scheme");
  const std::string sig = "c2lnbmF0dXJl";  // base64, not a real signature: the form is all that counts here
  const std::string five = R"(mchid="1900000109",nonce_str="n1",signature=")" + sig +
                           R"(",timestamp="1700000000",serial_no="3775B6A45ACD588826D15E583A95F5DD3F3B4DD8")";
  // Each field missing in turn.
  for (const char* field : {"mchid", "nonce_str", "signature", "timestamp", "serial_no"}) {
    std::string params;
    for (const char* f : {"mchid", "nonce_str", "signature", "timestamp", "serial_no"}) {
      if (std::string(f) == field) continue;
      if (!params.empty()) params += ",";
      params += std::string(f) + "=\"" +
                (std::string(f) == "signature" ? sig : std::string(f) == "timestamp" ? "1700000000" : "x") + "\"";
    }
    expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line(params)}),
                      std::string("field ") + field + " is missing");
  }
  expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line(five + R"(,mchid="1")")}), "twice");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line(five + R"(,extra="1")")}), "unknown");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line("mchid=1900000109")}), "quoted");
  std::string bad_ts = five;
  bad_ts.replace(bad_ts.find("1700000000"), 10, "17000x0000");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line(bad_ts)}), "timestamp");
  std::string bad_sig = five;
  bad_sig.replace(bad_sig.find(sig), sig.size(), "not base64!");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {authorization_line(bad_sig)}), "base64");
  expect_sign_error(call(port_, "GET", kWxLookup), "missing");
  expect_untouched();
  EXPECT_EQ(stat("auth_refused"), 13);

  // Well formed is enough without keys (any order, spaces after the commas), and the answers
  // are not signed.
  const std::string reordered = R"(timestamp="1700000000", serial_no="S", signature=")" + sig +
                                R"(", nonce_str="n1", mchid="1900000109")";
  Response ok = call(port_, "POST", kWxCreate, body, {authorization_line(reordered)});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.header("wechatpay-signature"), "");
  EXPECT_EQ(call(port_, "GET", "/v3/pay/transactions/out-trade-no/wx_f1?mchid=1", "", {authorization_line(five)}).status,
            200);
  EXPECT_EQ(sim_->charges_for("wx_f1"), 1);
}

TEST_F(Auth, wechat_with_keys_verifies_signature_path_query_body_and_timestamp) {
  start("wechatpay_v3", true);
  const std::string body = wx_body("wx_a1");
  // Signed with the wrong key, or over another body, path or query: refused, nothing processed.
  WechatSigning wrong_key;
  wrong_key.key = key_file("alipay_app_key.pem");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body, wrong_key)}),
                    "does not verify");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, wx_body("wx_a2"))}),
                    "does not verify");
  expect_sign_error(call(port_, "POST", kWxCreate, body,
                         {wechat_authorization("POST", "/v3/pay/transactions/jsapi", body)}),
                    "does not verify");
  expect_sign_error(call(port_, "GET", kWxLookup, "",
                         {wechat_authorization("GET", "/v3/pay/transactions/out-trade-no/wx_a1", "")}),
                    "does not verify");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {wechat_authorization("PUT", kWxCreate, body)}),
                    "does not verify");
  // Five minutes either way, no more.
  WechatSigning old;
  old.timestamp -= 6 * 60;
  expect_sign_error(call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body, old)}),
                    "5 minutes");
  WechatSigning ahead;
  ahead.timestamp += 6 * 60;
  expect_sign_error(call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body, ahead)}),
                    "5 minutes");
  expect_untouched();

  // The refusals are signed like every other answer.
  Response refused = call(port_, "POST", kWxCreate, body);
  EXPECT_EQ(refused.status, 401);
  EXPECT_TRUE(wechat_answer_verifies(refused));

  WechatSigning recent;
  recent.timestamp -= 4 * 60;
  Response created = call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body, recent)});
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_TRUE(wechat_answer_verifies(created));
  EXPECT_EQ(created.header("wechatpay-serial"), kPlatformSerial);
  EXPECT_EQ(created.header("wechatpay-signature-type"), "WECHATPAY2-SHA256-RSA2048");
  EXPECT_EQ(sim_->charges_for("wx_a1"), 1);
  Response look = call(port_, "GET", kWxLookup, "", {wechat_authorization("GET", kWxLookup, "")});
  ASSERT_EQ(look.status, 200) << look.body;
  EXPECT_EQ(Json(look.body).str("trade_state"), "SUCCESS");
  EXPECT_TRUE(wechat_answer_verifies(look));

  // A forged answer does not verify: the check is not vacuous.
  Response forged = look;
  forged.body.replace(forged.body.find("SUCCESS"), 7, "NOTPAY!");
  EXPECT_FALSE(wechat_answer_verifies(forged));
  // Each answer has its own nonce.
  EXPECT_NE(created.header("wechatpay-nonce"), look.header("wechatpay-nonce"));
}

TEST_F(Auth, wechat_fault_answers_are_signed_and_a_cut_answer_fails_verification) {
  start("wechatpay_v3", true);
  sim_->script("wx_f429", {"429"});
  const std::string b429 = wx_body("wx_f429");
  Response rl = call(port_, "POST", kWxCreate, b429, {wechat_authorization("POST", kWxCreate, b429)});
  EXPECT_EQ(rl.status, 429);
  EXPECT_TRUE(wechat_answer_verifies(rl));
  // The provider signed the whole answer; the client got half of it: the signature must not
  // verify, so a client cannot mistake the fragment for a genuine answer.
  sim_->script("wx_fmal", {"malformed"});
  const std::string bmal = wx_body("wx_fmal");
  Response cut = call(port_, "POST", kWxCreate, bmal, {wechat_authorization("POST", kWxCreate, bmal)});
  EXPECT_EQ(cut.status, 200);
  EXPECT_FALSE(Json(cut.body).ok());
  EXPECT_NE(cut.header("wechatpay-signature"), "");
  EXPECT_FALSE(wechat_answer_verifies(cut));
  EXPECT_EQ(sim_->charges_for("wx_fmal"), 1);
  // Unknown paths are answered (and signed) without asking for a signature.
  Response nowhere = call(port_, "GET", "/v3/nowhere");
  EXPECT_EQ(nowhere.status, 404);
  EXPECT_TRUE(wechat_answer_verifies(nowhere));
}

TEST_F(Auth, signing_and_verifying_hold_across_worker_threads) {
  Options o = fast_options();
  o.threads = 4;
  start("wechatpay_v3", true, o);
  std::vector<std::thread> clients;
  std::vector<int> verified(8, 0);
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string body = wx_body("wx_t" + std::to_string(t) + "_" + std::to_string(i));
        Response r = call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body)});
        if (r.status == 200 && wechat_answer_verifies(r)) ++verified[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& c : clients) c.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(verified[static_cast<std::size_t>(t)], 20) << "client " << t;
  EXPECT_EQ(sim_->total_charges(), 160);
}

// ---- Alipay -------------------------------------------------------------------------------------

std::string biz(const std::string& no) {
  return R"({"out_trade_no":")" + no + R"(","total_amount":"10.00","subject":"测试 a+b&c=d"})";
}

Response send(uint16_t port, const GatewayRequest& g) { return call(port, "POST", g.target, g.body, g.headers); }

Response send_signed(uint16_t port, Params p, const std::string& key = key_file("alipay_app_key.pem")) {
  p["sign"] = alipay_sign(p, key);
  return send(port, gateway_request(p));
}

// An Alipay refusal: HTTP 200, the code and sub_code in `member`.
void expect_gateway_error(const Response& r, const std::string& member, const std::string& code,
                          const std::string& sub_code) {
  EXPECT_EQ(r.status, 200) << r.body;
  Json j(r.body);
  EXPECT_EQ(j.str((member + ".code").c_str()), code) << r.body;
  EXPECT_EQ(j.str((member + ".sub_code").c_str()), sub_code) << r.body;
  EXPECT_NE(j.str((member + ".msg").c_str()), "") << r.body;
  EXPECT_NE(j.str((member + ".sub_msg").c_str()), "") << r.body;
}

TEST_F(Auth, alipay_refuses_json_bodies_and_missing_parameters) {
  start("alipay", false);
  // The JSON shape the gateway does not read: nothing it needs is there.
  Response json = call(port_, "POST", "/gateway.do",
                       R"({"method":"alipay.trade.pay","biz_content":{"out_trade_no":"alj","total_amount":"1.00"}})",
                       {"Content-Type: application/json"});
  expect_gateway_error(json, "error_response", "40001", "isv.missing-method");
  EXPECT_EQ(Json(json.body).str("error_response.msg"), "Missing Required Arguments");
  // Every common parameter in the query, biz_content as JSON: the body is still not read.
  Params p = alipay_params("alipay.trade.pay", biz("alj"));
  p.erase("biz_content");
  p["sign"] = "c2lnbg==";
  Response json_body = call(port_, "POST", gateway_request(p).target, biz("alj"), {"Content-Type: application/json"});
  expect_gateway_error(json_body, "alipay_trade_pay_response", "40001", "isv.missing-biz-content");
  // A form body without its Content-Type is not read either.
  GatewayRequest untyped = alipay_call("alipay.trade.pay", biz("alj"));
  expect_gateway_error(call(port_, "POST", untyped.target, untyped.body, {"Content-Type: text/plain"}),
                       "alipay_trade_pay_response", "40001", "isv.missing-biz-content");

  // Each required parameter missing (or empty) in turn.
  const std::pair<const char*, const char*> required[] = {
      {"app_id", "isv.missing-app-id"},       {"sign", "isv.missing-signature"},
      {"sign_type", "isv.missing-signature-type"}, {"timestamp", "isv.missing-timestamp"},
      {"version", "isv.missing-version"},     {"format", "isv.missing-format"},
      {"charset", "isv.missing-charset"},     {"biz_content", "isv.missing-biz-content"}};
  for (const auto& [name, sub_code] : required) {
    Params q = alipay_params("alipay.trade.query", R"({"out_trade_no":"alj"})");
    q["sign"] = "c2lnbg==";
    q.erase(name);
    expect_gateway_error(send(port_, gateway_request(q)), "alipay_trade_query_response", "40001", sub_code);
    q[name] = "";
    expect_gateway_error(send(port_, gateway_request(q)), "alipay_trade_query_response", "40001", sub_code);
  }
  Params no_method = alipay_params("", biz("alj"));
  no_method["sign"] = "c2lnbg==";
  expect_gateway_error(send(port_, gateway_request(no_method)), "error_response", "40001", "isv.missing-method");

  // Values the gateway does not take.
  const std::pair<std::pair<const char*, const char*>, const char*> invalid[] = {
      {{"sign_type", "RSA"}, "isv.invalid-signature-type"},
      {{"format", "XML"}, "isv.invalid-format"},
      {{"charset", "gbk"}, "isv.invalid-charset"},
      {{"timestamp", "2026-01-01T10:00:00"}, "isv.invalid-timestamp"},
      {{"timestamp", "2026-13-01 10:00:00"}, "isv.invalid-timestamp"}};
  for (const auto& [param, sub_code] : invalid) {
    Params q = alipay_params("alipay.trade.pay", biz("alj"));
    q[param.first] = param.second;
    q["sign"] = "c2lnbg==";
    expect_gateway_error(send(port_, gateway_request(q)), "alipay_trade_pay_response", "40002", sub_code);
  }
  Params unknown_method = alipay_params("alipay.trade.precreate", biz("alj"));
  unknown_method["sign"] = "c2lnbg==";
  expect_gateway_error(send(port_, gateway_request(unknown_method)), "error_response", "40002", "isv.invalid-method");
  GatewayRequest bad_escape = alipay_call("alipay.trade.pay", biz("alj"));
  bad_escape.body += "&x=%zz";
  expect_gateway_error(send(port_, bad_escape), "error_response", "40002", "isv.invalid-encoding");

  // One URL, POST only.
  EXPECT_EQ(call(port_, "GET", untyped.target).status, 405);
  EXPECT_EQ(call(port_, "POST", "/v1/payments", untyped.body, untyped.headers).status, 404);
  expect_untouched();
  EXPECT_EQ(stat("auth_refused"), 27);

  // Without keys any sign passes, and the answers carry none.
  Params ok = alipay_params("alipay.trade.pay", biz("alj"));
  ok["sign"] = "c2lnbg==";
  Response paid = send(port_, gateway_request(ok));
  EXPECT_EQ(Json(paid.body).str("alipay_trade_pay_response.code"), "10000") << paid.body;
  EXPECT_EQ(Json(paid.body).str("sign"), "");
  EXPECT_EQ(sim_->charges_for("alj"), 1);
}

TEST_F(Auth, alipay_with_keys_verifies_the_sign_and_signs_every_answer) {
  start("alipay", true);
  const std::string content = biz("alk");
  // Signed by the wrong key, or a parameter changed after signing.
  expect_gateway_error(send_signed(port_, alipay_params("alipay.trade.pay", content), key_file("wechat_merchant_key.pem")),
                       "alipay_trade_pay_response", "40002", "isv.invalid-signature");
  Params tampered = alipay_params("alipay.trade.pay", content);
  tampered["sign"] = alipay_sign(tampered);
  tampered["biz_content"] = biz("alk2");
  expect_gateway_error(send(port_, gateway_request(tampered)), "alipay_trade_pay_response", "40002",
                       "isv.invalid-signature");
  // A sign that leaves a parameter out (here: sign_type) is not the gateway's sign content.
  Params partial = alipay_params("alipay.trade.pay", content);
  Params unsigned_type = partial;
  unsigned_type.erase("sign_type");
  partial["sign"] = alipay_sign(unsigned_type);
  expect_gateway_error(send(port_, gateway_request(partial)), "alipay_trade_pay_response", "40002",
                       "isv.invalid-signature");
  // Twenty minutes old.
  expect_gateway_error(send_signed(port_, alipay_params("alipay.trade.pay", content, std::time(nullptr) - 20 * 60)),
                       "alipay_trade_pay_response", "40002", "isv.invalid-timestamp");
  Response refused = send_signed(port_, alipay_params("alipay.trade.pay", content), key_file("alipay_key.pem"));
  EXPECT_TRUE(alipay_answer_verifies(refused.body)) << refused.body;  // refusals are signed too
  expect_untouched();

  // Decoded values are signed (the subject has spaces, '+', '&', '=' and Chinese); empty
  // parameters are left out of the sign content; extra parameters are signed like the rest.
  Params good = alipay_params("alipay.trade.pay", content, std::time(nullptr) - 10 * 60);
  good["notify_url"] = "";
  good["app_auth_token"] = "tok en+1";
  Response paid = send_signed(port_, good);
  ASSERT_EQ(Json(paid.body).str("alipay_trade_pay_response.code"), "10000") << paid.body;
  EXPECT_TRUE(alipay_answer_verifies(paid.body)) << paid.body;
  EXPECT_EQ(paid.body.rfind(",\"sign\":\""), paid.body.find(",\"sign\":\""));
  EXPECT_EQ(paid.body.find("{\"alipay_trade_pay_response\":{"), 0u);  // sign after the member
  EXPECT_EQ(sim_->charges_for("alk"), 1);

  // A retry carries a new timestamp and so a new sign: still the same trade.
  Response retry = send_signed(port_, alipay_params("alipay.trade.pay", content));
  EXPECT_EQ(Json(retry.body).str("alipay_trade_pay_response.sub_code"), "ACQ.TRADE_HAS_SUCCESS") << retry.body;
  EXPECT_TRUE(alipay_answer_verifies(retry.body));
  EXPECT_EQ(sim_->charges_for("alk"), 1);

  Response q = send_signed(port_, alipay_params("alipay.trade.query", R"({"out_trade_no":"alk"})"));
  EXPECT_EQ(Json(q.body).str("alipay_trade_query_response.trade_status"), "TRADE_SUCCESS") << q.body;
  EXPECT_TRUE(alipay_answer_verifies(q.body));
  Response unknown = send_signed(port_, alipay_params("alipay.trade.precreate", content));
  EXPECT_EQ(Json(unknown.body).str("error_response.sub_code"), "isv.invalid-method");
  EXPECT_TRUE(alipay_answer_verifies(unknown.body));
  Response no_route = call(port_, "POST", "/elsewhere");
  EXPECT_EQ(no_route.status, 404);
  EXPECT_TRUE(alipay_answer_verifies(no_route.body));

  // A forged answer does not verify.
  std::string forged = q.body;
  forged.replace(forged.find("TRADE_SUCCESS"), 13, "TRADE_CLOSED!");
  EXPECT_FALSE(alipay_answer_verifies(forged));

  // The malformed fault cuts the signed answer: what arrives does not verify.
  sim_->script("alm", {"malformed"});
  Response cut = send_signed(port_, alipay_params("alipay.trade.pay", biz("alm")));
  EXPECT_FALSE(Json(cut.body).ok());
  EXPECT_FALSE(alipay_answer_verifies(cut.body));
  EXPECT_EQ(sim_->charges_for("alm"), 1);
}

// ---- PayPal -------------------------------------------------------------------------------------

const char kOrders[] = "/v2/checkout/orders";
const char kOrder[] = R"({"order_id":"pp1","amount":1000})";

void expect_invalid_token(const Response& r) {
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_EQ(r.body, R"({"error":"invalid_token","error_description":"Token signature verification failed"})");
}

TEST_F(Auth, paypal_token_endpoint_checks_the_client_and_the_grant) {
  start("paypal", false);
  Response t = paypal_token_request(port_);
  ASSERT_EQ(t.status, 200) << t.body;
  Json j(t.body);
  EXPECT_EQ(j.str("token_type"), "Bearer");
  EXPECT_EQ(j.str("app_id"), "APP-TEST");
  EXPECT_EQ(j.num("expires_in"), 32400);
  EXPECT_NE(j.str("scope"), "");
  EXPECT_NE(j.str("nonce"), "");
  EXPECT_GE(j.str("access_token").size(), 32u);
  EXPECT_NE(paypal_token(port_), j.str("access_token"));  // every token is new

  const std::string invalid_client = R"({"error":"invalid_client","error_description":"Client Authentication failed"})";
  Response wrong = paypal_token_request(port_, "test-client-id", "wrong-secret");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body, invalid_client);
  EXPECT_EQ(paypal_token_request(port_, "other-id", "test-client-secret").body, invalid_client);
  Response anonymous = call(port_, "POST", "/v1/oauth2/token", "grant_type=client_credentials",
                            {"Content-Type: application/x-www-form-urlencoded"});
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(anonymous.body, invalid_client);
  Response bearer_creds = call(port_, "POST", "/v1/oauth2/token", "grant_type=client_credentials",
                               {bearer(j.str("access_token")), "Content-Type: application/x-www-form-urlencoded"});
  EXPECT_EQ(bearer_creds.status, 401);

  Response no_grant = paypal_token_request(port_, "test-client-id", "test-client-secret", "");
  EXPECT_EQ(no_grant.status, 400);
  EXPECT_EQ(Json(no_grant.body).str("error"), "unsupported_grant_type");
  Response other_grant = paypal_token_request(port_, "test-client-id", "test-client-secret", "grant_type=password");
  EXPECT_EQ(other_grant.status, 400);
  EXPECT_EQ(Json(other_grant.body).str("error"), "unsupported_grant_type");
  Response json_grant = call(port_, "POST", "/v1/oauth2/token", R"({"grant_type":"client_credentials"})",
                             {basic_authorization("test-client-id", "test-client-secret")});
  EXPECT_EQ(json_grant.status, 400);
  EXPECT_EQ(paypal_token_request(port_, "test-client-id", "test-client-secret",
                                 "grant_type=client_credentials&scope=openid")
                .status,
            200);
  EXPECT_EQ(call(port_, "GET", "/v1/oauth2/token").status, 405);

  EXPECT_EQ(stat("oauth2_tokens_issued"), 3);
  EXPECT_EQ(stat("oauth2_tokens_refused"), 7);
  expect_untouched();
}

TEST_F(Auth, paypal_creates_and_lookups_need_a_live_issued_token) {
  Options o = fast_options();
  o.api_key = "sk_static";  // a bearer mode's static key is no PayPal token
  start("paypal", false, o);
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {"PayPal-Request-Id: r1"}));
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {bearer("A21AAnot-issued"), "PayPal-Request-Id: r1"}));
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {bearer("sk_static"), "PayPal-Request-Id: r1"}));
  expect_invalid_token(call(port_, "POST", "/v1/payments", kOrder, {"PayPal-Request-Id: r1"}));
  const std::string token = paypal_token(port_);
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {"Authorization: Basic " + token}));
  expect_invalid_token(call(port_, "GET", "/v2/checkout/orders/ORD00000000000001"));
  expect_untouched();
  EXPECT_EQ(stat("auth_refused"), 6);

  Response created = call(port_, "POST", kOrders, kOrder, {bearer(token), "PayPal-Request-Id: r1"});
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = Json(created.body).str("id");
  EXPECT_EQ(call(port_, "GET", "/v2/checkout/orders/" + id, "", {"authorization: bearer " + token}).status, 200);

  // Revoked: the same token is refused, and nothing is processed until the client renews.
  ASSERT_EQ(admin_post(port_, "/__admin/oauth2/revoke", "").status, 200);
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {bearer(token), "PayPal-Request-Id: r1"}));
  expect_invalid_token(call(port_, "GET", "/v2/checkout/orders/" + id, "", {bearer(token)}));
  EXPECT_EQ(sim_->requests(), 1);
  const std::string renewed = paypal_token(port_);
  Response replay = call(port_, "POST", kOrders, kOrder, {bearer(renewed), "PayPal-Request-Id: r1"});
  EXPECT_EQ(replay.status, 200);  // the same request id: the payment's current state
  EXPECT_EQ(Json(replay.body).str("id"), id);
  EXPECT_EQ(sim_->charges_for("pp1"), 1);
  EXPECT_EQ(get(port_, "/__admin/oauth2/revoke").status, 405);

  // Tokens outlive /__admin/reset, like the config.
  ASSERT_EQ(admin_post(port_, "/__admin/reset", "").status, 200);
  EXPECT_EQ(call(port_, "POST", kOrders, kOrder, {bearer(renewed), "PayPal-Request-Id: r2"}).status, 201);
  sim_->revoke_oauth2_tokens();
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {bearer(renewed), "PayPal-Request-Id: r3"}));
}

TEST_F(Auth, paypal_client_and_token_lifetime_are_configurable) {
  Options o = fast_options();
  o.oauth2_client_id = "merchant-7";
  o.oauth2_client_secret = "s3cr:et";
  o.oauth2_ttl_s = 1;
  start("paypal", false, o);
  EXPECT_EQ(paypal_token_request(port_).status, 401);  // the defaults no longer work
  Response t = paypal_token_request(port_, "merchant-7", "s3cr:et");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(Json(t.body).num("expires_in"), 1);
  const std::string token = Json(t.body).str("access_token");
  EXPECT_EQ(call(port_, "POST", kOrders, kOrder, {bearer(token)}).status, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  expect_invalid_token(call(port_, "POST", kOrders, kOrder, {bearer(token)}));  // expired
  EXPECT_EQ(sim_->charges_for("pp1"), 1);

  Json cfg(get(port_, "/__admin/config").body);
  EXPECT_EQ(cfg.str("oauth2_client_id"), "merchant-7");
  EXPECT_EQ(cfg.num("oauth2_ttl_s"), 1);
  EXPECT_EQ(get(port_, "/__admin/config").body.find("s3cr"), std::string::npos);  // never the secret
}

// ---- modes and options --------------------------------------------------------------------------

TEST_F(Auth, the_token_endpoint_is_paypals_and_the_bearer_modes_keep_their_api_key) {
  Options o = fast_options();
  o.api_key = "sk_test_k";
  start("stripe", true, o);
  EXPECT_EQ(paypal_token_request(port_).status, 404);
  Response no_key = call(port_, "POST", "/v1/payments", R"({"order_id":"s1","amount":5})");
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(no_key.header("wechatpay-signature"), "");  // keys sign only the signing modes
  EXPECT_EQ(call(port_, "POST", "/v1/payments", R"({"order_id":"s1","amount":5})", {bearer("sk_test_k")}).status, 200);
  Json cfg(get(port_, "/__admin/config").body);
  EXPECT_TRUE(cJSON_IsTrue(cfg.at("keys")));
  EXPECT_TRUE(cJSON_IsTrue(cfg.at("auth")));

  // Switching modes at run time switches the checks.
  ASSERT_EQ(admin_post(port_, "/__admin/config", R"({"profile":"wechatpay_v3"})").status, 200);
  const std::string body = wx_body("wx_sw");
  expect_sign_error(call(port_, "POST", kWxCreate, body, {bearer("sk_test_k")}), "scheme");
  Response signed_ok = call(port_, "POST", kWxCreate, body, {wechat_authorization("POST", kWxCreate, body)});
  EXPECT_EQ(signed_ok.status, 200) << signed_ok.body;
  EXPECT_TRUE(wechat_answer_verifies(signed_ok));
}

TEST(AuthOptions, a_bad_key_directory_or_oauth2_client_is_refused_at_start) {
  Options o = fast_options();
  o.keys_dir = "/nonexistent-payretry-keys";
  EXPECT_THROW(Server s(o), std::invalid_argument);
  o.keys_dir = std::string(PAYRETRY_TEST_KEYS_DIR) + "/README.md";  // not a directory of keys
  EXPECT_THROW(Server s(o), std::invalid_argument);
  Options empty = fast_options();
  empty.oauth2_client_secret = "";
  EXPECT_THROW(Server s(empty), std::invalid_argument);
  Options ttl = fast_options();
  ttl.oauth2_ttl_s = 0;
  EXPECT_THROW(Server s(ttl), std::invalid_argument);
}

// ---- --hmac-secret (any mode) -------------------------------------------------------------------

// Written apart from the simulator's: OpenSSL's one-shot HMAC over METHOD \n TARGET \n BODY.
std::string hmac_signature(const std::string& secret, const std::string& method, const std::string& target,
                           const std::string& body) {
  const std::string msg = method + "\n" + target + "\n" + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  std::string out = "v1=";
  for (unsigned i = 0; i < len; ++i) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", mac[i]);
    out += two;
  }
  return out;
}

TEST_F(Auth, hmac_secret_refuses_a_missing_or_wrong_signature_and_processes_nothing) {
  Options o = fast_options();
  o.profile = "checkout_com";
  o.hmac_secret = "s3cret";
  sim_ = std::make_unique<Server>(o);
  port_ = sim_->port();
  const std::string body = R"({"amount":100,"currency":"EUR","reference":"h1"})";
  const Headers key = {"Cko-Idempotency-Key: k-h1"};
  Response r = call(port_, "POST", "/payments", body, key);
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_NE(r.body.find("missing"), std::string::npos) << r.body;
  Headers wrong = key;
  wrong.push_back("X-Signature: " + hmac_signature("other", "POST", "/payments", body));
  EXPECT_EQ(call(port_, "POST", "/payments", body, wrong).status, 401);
  // Signed over another target: the query is part of what is signed.
  EXPECT_EQ(call(port_, "GET", "/payments?reference=h1", "",
                 {"X-Signature: " + hmac_signature("s3cret", "GET", "/payments", "")}).status, 401);
  expect_untouched();
  EXPECT_EQ(stat("bad_signatures"), 3);
  EXPECT_EQ(stat("signed_requests"), 0);

  Headers good = key;
  good.push_back("X-Signature: " + hmac_signature("s3cret", "POST", "/payments", body));
  r = call(port_, "POST", "/payments", body, good);
  EXPECT_EQ(r.status / 100, 2) << r.body;
  r = call(port_, "GET", "/payments?reference=h1", "",
           {"X-Signature: " + hmac_signature("s3cret", "GET", "/payments?reference=h1", "")});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(sim_->total_charges(), 1);
  EXPECT_EQ(stat("signed_requests"), 2);
  EXPECT_EQ(stat("bad_signatures"), 3);
}

}  // namespace
