// Provider profiles as data: the built-in files, the schema's validation,
// "extends", and the JSON path dialect the rules use (docs/profiles.md).
#include <gtest/gtest.h>

#include <cJSON.h>

#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "classify.hpp"
#include "fakes.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "profile.hpp"

namespace payretry {
namespace {

using Strings = std::vector<std::string>;

Profile builtin(const char* name) {
  auto p = builtin_profile(name);
  if (!p) ADD_FAILURE() << "no built-in profile " << name;
  return p ? *p : Profile{};
}

// The message parse_profile throws, or "" when it accepts the text.
std::string error_of(const std::string& json) {
  try {
    parse_profile(json);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_AT(json, field)                                                           \
  do {                                                                                         \
    const std::string err_ = error_of(json);                                                   \
    EXPECT_EQ(err_.rfind(std::string(field) + ": ", 0), 0u) << "got: \"" << err_ << "\"";     \
  } while (0)

Strings path_of(const char* json, const char* path) {
  JsonPtr doc(cJSON_Parse(json));
  EXPECT_TRUE(doc) << json;
  return json_path_strings(doc.get(), path);
}

const std::vector<std::pair<int, int>> k2xx = {{200, 299}}, k3xx = {{300, 399}}, k4xx = {{400, 499}},
                                           k5xx = {{500, 599}};

// ---- built-ins ----------------------------------------------------------

TEST(Profiles, the_nine_built_ins_are_listed) {
  const Strings names = builtin_profile_names();
  const std::set<std::string> got(names.begin(), names.end());
  const std::set<std::string> want = {"generic", "stripe",       "adyen", "paypal",      "square",
                                      "checkout_com", "mollie", "wechatpay_v3", "alipay"};
  EXPECT_EQ(got, want);
  EXPECT_EQ(names.size(), want.size());
}

TEST(Profiles, every_built_in_loads_under_its_own_name) {
  for (const std::string& n : builtin_profile_names()) {
    const auto p = builtin_profile(n);
    ASSERT_TRUE(p) << n;
    EXPECT_EQ(p->name, n);
    EXPECT_FALSE(p->classify.empty()) << n;
    EXPECT_FALSE(p->notes.empty()) << n << ": every profile says what is undocumented";
  }
  EXPECT_FALSE(builtin_profile("nope"));
  EXPECT_FALSE(builtin_profile(""));
  EXPECT_FALSE(builtin_profile("Stripe")) << "names are exact";
}

TEST(Profiles, every_value_of_a_provider_profile_names_its_research_tags) {
  // Tags as defined in docs/providers.md: two letters and a number (St1, Ad4, St6b).
  const std::map<std::string, std::string> prefix = {
      {"stripe", "St"}, {"adyen", "Ad"}, {"paypal", "Pp"},       {"square", "Sq"},
      {"checkout_com", "Ck"}, {"mollie", "Mo"}, {"wechatpay_v3", "Wx"}, {"alipay", "Al"}};
  auto is_tag = [](const std::string& s) {
    size_t i = 2;
    if (s.size() < 3 || !std::isupper(static_cast<unsigned char>(s[0])) || !std::islower(static_cast<unsigned char>(s[1])))
      return false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == 2) return false;
    if (i < s.size() && std::islower(static_cast<unsigned char>(s[i]))) ++i;
    return i == s.size();
  };
  for (const auto& [name, pre] : prefix) {
    const Profile p = builtin(name.c_str());
    ASSERT_FALSE(p.sources.empty()) << name;
    for (const std::string& s : p.sources) {
      EXPECT_TRUE(is_tag(s)) << name << ": " << s;
      EXPECT_EQ(s.substr(0, 2), pre) << name << ": " << s;
    }
  }
  EXPECT_TRUE(builtin("generic").sources.empty()) << "generic is the default table (docs/design.md), not research";
}

TEST(Profiles, generic_is_the_design_default_table_in_order) {
  const Profile g = builtin("generic");
  EXPECT_EQ(g.extends, "");
  ASSERT_EQ(g.classify.size(), 14u);
  const auto& r = g.classify;
  auto transport = [&](size_t i, const char* t, Verdict v, std::optional<bool> processed) {
    EXPECT_EQ(r[i].when.transport, t) << i;
    EXPECT_TRUE(r[i].when.status.empty()) << i;
    EXPECT_EQ(r[i].verdict, v) << i;
    EXPECT_EQ(r[i].processed, processed) << i;
  };
  transport(0, "tls_verify", Verdict::fail, false);
  transport(1, "not_sent", Verdict::retry, std::nullopt);
  transport(2, "any_failure", Verdict::retry, std::nullopt);
  transport(3, "malformed_2xx", Verdict::retry, true);
  EXPECT_EQ(r[4].when.status, k2xx);
  EXPECT_EQ(r[4].verdict, Verdict::success);
  EXPECT_EQ(r[5].when.status, (std::vector<std::pair<int, int>>{{409, 409}}));
  EXPECT_EQ(r[5].verdict, Verdict::retry_after_backoff);
  EXPECT_EQ(r[5].reason, "key_in_use");
  const std::vector<std::pair<int, int>> s400_422 = {{400, 400}, {422, 422}};
  EXPECT_EQ(r[6].when.status, s400_422);
  EXPECT_EQ(r[6].when.code_path, "$.error.type");
  EXPECT_EQ(r[6].when.codes, Strings{"idempotency_error"});
  EXPECT_EQ(r[6].verdict, Verdict::mismatch);
  EXPECT_EQ(r[7].when.status, s400_422);
  EXPECT_EQ(r[7].when.code_path, "$.error.code");
  EXPECT_EQ(r[7].when.codes, Strings{"idempotency_key_reused"});
  EXPECT_EQ(r[7].verdict, Verdict::mismatch);
  EXPECT_EQ(r[8].when.status, s400_422);
  EXPECT_EQ(r[8].when.code_path, "$.code");
  EXPECT_EQ(r[8].when.codes, Strings{"idempotency_key_reused"});
  EXPECT_EQ(r[8].verdict, Verdict::mismatch);
  EXPECT_EQ(r[9].when.status, (std::vector<std::pair<int, int>>{{408, 408}, {425, 425}, {429, 429}}));
  EXPECT_EQ(r[9].verdict, Verdict::retry);
  EXPECT_EQ(r[9].processed, false);
  EXPECT_EQ(r[10].when.status, (std::vector<std::pair<int, int>>{{502, 502}, {503, 503}, {504, 504}}));
  EXPECT_EQ(r[10].verdict, Verdict::retry);
  EXPECT_EQ(r[10].processed, std::nullopt);
  EXPECT_EQ(r[11].when.status, k5xx);
  EXPECT_EQ(r[11].verdict, Verdict::query);
  EXPECT_EQ(r[12].when.status, k3xx);
  EXPECT_EQ(r[12].verdict, Verdict::query);
  EXPECT_EQ(r[13].when.status, k4xx);
  EXPECT_EQ(r[13].verdict, Verdict::fail);
  EXPECT_EQ(r[13].processed, false);

  EXPECT_EQ(g.identity.mode, IdentityMode::header);
  EXPECT_EQ(g.identity.name, "Idempotency-Key");
  EXPECT_EQ(g.identity.max_length, 255u);
  EXPECT_EQ(g.create_path, "");
  EXPECT_EQ(g.retention_ms, int64_t(24) * 3600 * 1000);
  EXPECT_EQ(g.replay_header, "Idempotent-Replayed");
  EXPECT_EQ(g.request_id_headers, (Strings{"Request-Id", "X-Request-Id"}));
  EXPECT_EQ(g.lookup.by, LookupBy::none);
}

bool same_rule(const Rule& a, const Rule& b) {
  return a.when.status == b.when.status && a.when.headers == b.when.headers && a.when.code_path == b.when.code_path &&
         a.when.codes == b.when.codes && a.when.transport == b.when.transport && a.verdict == b.verdict &&
         a.processed == b.processed && a.reason == b.reason;
}

TEST(Profiles, every_provider_extends_generic_and_ends_with_its_rules) {
  const Profile g = builtin("generic");
  for (const std::string& n : builtin_profile_names()) {
    if (n == "generic") continue;
    const Profile p = builtin(n.c_str());
    EXPECT_EQ(p.extends, "generic") << n;
    ASSERT_GT(p.classify.size(), g.classify.size()) << n << " adds rules of its own";
    const size_t off = p.classify.size() - g.classify.size();
    for (size_t i = 0; i < g.classify.size(); ++i)
      EXPECT_TRUE(same_rule(p.classify[off + i], g.classify[i])) << n << ": generic rule " << i;
    EXPECT_EQ(Strings(p.notes.begin(), p.notes.begin() + g.notes.size()), g.notes) << n << ": generic notes first";
  }
}

TEST(Profiles, stripe_keeps_the_core_behaviour) {
  const Profile s = builtin("stripe");
  EXPECT_EQ(s.identity.mode, IdentityMode::header);
  EXPECT_EQ(s.identity.name, "Idempotency-Key");
  EXPECT_EQ(s.identity.max_length, 255u);
  EXPECT_EQ(s.create_path, "/v1/payment_intents");
  EXPECT_EQ(s.retention_ms, int64_t(86400000));
  EXPECT_EQ(s.replay, ReplayKind::all_answers);
  EXPECT_EQ(s.request_id_headers, Strings{"Request-Id"});
  EXPECT_EQ(s.encoding, Encoding::form);
  EXPECT_EQ(s.lookup.by, LookupBy::provider_id);
  EXPECT_EQ(s.lookup.method, "GET");
  // Every new PaymentIntent reads requires_payment_method: no proof of a decline.
  EXPECT_EQ(s.lookup.status_map.at("requires_payment_method"), StatusTarget::pending);
  EXPECT_EQ(s.lookup.status_map.at("succeeded"), StatusTarget::succeeded);
  EXPECT_EQ(s.lookup.status_map.at("canceled"), StatusTarget::failed);
  const auto& r = s.classify;
  const std::pair<std::string, std::string> yes{"Stripe-Should-Retry", "true"}, no{"Stripe-Should-Retry", "false"};
  ASSERT_GE(r.size(), 9u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r[i].when.headers, (std::vector<std::pair<std::string, std::string>>{yes})) << i;
    EXPECT_EQ(r[i].verdict, Verdict::retry) << i;
  }
  EXPECT_EQ(r[0].when.status, k3xx);
  EXPECT_EQ(r[1].when.status, k4xx);
  EXPECT_EQ(r[2].when.status, k5xx);
  EXPECT_EQ(r[3].when.status, k5xx);
  EXPECT_EQ(r[3].when.headers, (std::vector<std::pair<std::string, std::string>>{no}));
  EXPECT_EQ(r[3].verdict, Verdict::query);
  // Stripe-Should-Retry: false outranks the generic retry of 409 and 429.
  EXPECT_EQ(r[4].when.status, (std::vector<std::pair<int, int>>{{429, 429}}));
  EXPECT_EQ(r[4].when.headers, (std::vector<std::pair<std::string, std::string>>{no}));
  EXPECT_EQ(r[4].verdict, Verdict::query);
  EXPECT_EQ(r[4].processed, std::optional<bool>(false));
  EXPECT_EQ(r[5].when.status, (std::vector<std::pair<int, int>>{{409, 409}}));
  EXPECT_EQ(r[5].when.headers, (std::vector<std::pair<std::string, std::string>>{no}));
  EXPECT_EQ(r[5].verdict, Verdict::query);
  EXPECT_EQ(r[6].when.status, (std::vector<std::pair<int, int>>{{409, 409}}));
  EXPECT_EQ(r[6].verdict, Verdict::retry_after_backoff);
  EXPECT_EQ(r[7].verdict, Verdict::mismatch);
  EXPECT_EQ(r[7].when.code_path, "$.error.type");
  EXPECT_EQ(r[8].when.status, k5xx);
  EXPECT_TRUE(r[8].when.headers.empty());
  EXPECT_EQ(r[8].verdict, Verdict::retry) << "Stripe replays a 500 under the same key (St1)";
}

struct Facts {
  const char* name;
  IdentityMode mode;
  const char* key;
  size_t min_len, max_len;
  const char* charset;
  std::optional<int64_t> retention_ms;
  ReplayKind replay;
  const char* lookup_by;
  const char* lookup_path;
};

constexpr int64_t kHour = 3600 * 1000;

TEST(Profiles, each_provider_matches_the_research) {
  const Facts facts[] = {
      {"stripe", IdentityMode::header, "Idempotency-Key", 1, 255, "", 24 * kHour, ReplayKind::all_answers, "provider_id",
       "/v1/payment_intents/{provider_id}"},
      {"adyen", IdentityMode::header, "idempotency-key", 1, 64, "", 7 * 24 * kHour, ReplayKind::none, "none", ""},
      {"paypal", IdentityMode::header, "PayPal-Request-Id", 1, 108, "", 6 * kHour, ReplayKind::current_state, "provider_id",
       "/v2/checkout/orders/{provider_id}"},
      {"square", IdentityMode::body, "$.idempotency_key", 1, 45, "", 24 * kHour, ReplayKind::success_only, "provider_id",
       "/v2/payments/{provider_id}"},
      {"checkout_com", IdentityMode::header, "Cko-Idempotency-Key", 1, 255, "", 24 * kHour, ReplayKind::success_only, "order_id",
       "/payments?reference={order_id}"},
      {"mollie", IdentityMode::header, "Idempotency-Key", 1, 255, "", 1 * kHour, ReplayKind::all_answers, "provider_id",
       "/v2/payments/{provider_id}"},
      {"wechatpay_v3", IdentityMode::reference, "$.out_trade_no", 6, 32, "_-|*", std::nullopt, ReplayKind::reference, "order_id",
       "/v3/pay/transactions/out-trade-no/{order_id}?mchid={merchant_id}"},
      {"alipay", IdentityMode::reference, "$.biz_content.out_trade_no", 1, 64, "_", std::nullopt, ReplayKind::reference, "order_id",
       "/gateway.do?method=alipay.trade.query"},
  };
  for (const Facts& f : facts) {
    const Profile p = builtin(f.name);
    EXPECT_EQ(p.identity.mode, f.mode) << f.name;
    EXPECT_EQ(p.identity.name, f.key) << f.name;
    EXPECT_EQ(p.identity.min_length, f.min_len) << f.name;
    EXPECT_EQ(p.identity.max_length, f.max_len) << f.name;
    EXPECT_EQ(p.identity.charset, f.charset) << f.name;
    EXPECT_EQ(p.retention_ms, f.retention_ms) << f.name;
    EXPECT_EQ(p.replay, f.replay) << f.name;
    EXPECT_STREQ(lookup_by_name(p.lookup.by), f.lookup_by) << f.name;
    if (*f.lookup_path) {
      EXPECT_EQ(p.lookup.path, f.lookup_path) << f.name;
    }
  }
}

const Rule* first_rule(const Profile& p, const std::function<bool(const Rule&)>& pred) {
  for (const Rule& r : p.classify)
    if (pred(r)) return &r;
  return nullptr;
}

TEST(Profiles, checkout_com_settles_5xx_and_timeouts_by_lookup_before_any_resend) {
  const Profile p = builtin("checkout_com");
  const Rule* five = first_rule(p, [](const Rule& r) { return r.when.status == k5xx; });
  ASSERT_TRUE(five);
  EXPECT_EQ(five->verdict, Verdict::query) << "Ck1: only 2xx is cached";
  const Rule* timeout = first_rule(p, [](const Rule& r) { return r.when.transport == "timeout"; });
  ASSERT_TRUE(timeout);
  EXPECT_EQ(timeout->verdict, Verdict::query);
  // A connect timeout wrote nothing: the not_sent retry must come first.
  const Rule* first_transport = first_rule(p, [](const Rule& r) { return !r.when.transport.empty(); });
  EXPECT_EQ(first_transport->when.transport, "not_sent");
  EXPECT_EQ(first_transport->verdict, Verdict::retry);
  // 502-504 too: the generic gateway retry comes after the provider's 5xx rule.
  EXPECT_LT(five, first_rule(p, [](const Rule& r) { return r.when.status == std::vector<std::pair<int, int>>{{502, 502}, {503, 503}, {504, 504}}; }));
  EXPECT_EQ(p.lookup.not_found.code_path, "$.total_count");
  EXPECT_EQ(p.lookup.status_map.at("Declined"), StatusTarget::failed);
}

TEST(Profiles, wechatpay_maps_its_codes) {
  const Profile p = builtin("wechatpay_v3");
  auto verdict_for = [&](const std::string& code) -> std::optional<Verdict> {
    for (const Rule& r : p.classify)
      if (r.when.code_path == "$.code")
        for (const std::string& c : r.when.codes)
          if (c == code) return r.verdict;
    return std::nullopt;
  };
  EXPECT_EQ(verdict_for("OUT_TRADE_NO_USED"), Verdict::mismatch);
  EXPECT_EQ(verdict_for("ORDERPAID"), Verdict::query);
  EXPECT_EQ(verdict_for("ORDER_PAID"), Verdict::query);
  EXPECT_EQ(verdict_for("ORDER_CLOSED"), Verdict::query) << "retry_new_key: payretry never changes an identity";
  EXPECT_EQ(verdict_for("SYSTEM_ERROR"), Verdict::retry_after_backoff);
  EXPECT_EQ(p.lookup.status_path, "$.trade_state");
  EXPECT_EQ(p.lookup.status_map.at("SUCCESS"), StatusTarget::succeeded);
  EXPECT_EQ(p.lookup.not_found.status, (std::vector<std::pair<int, int>>{{404, 404}}));
}

TEST(Profiles, alipay_reads_codes_inside_any_method_response) {
  const Profile p = builtin("alipay");
  const Rule* mismatch = first_rule(p, [](const Rule& r) { return r.verdict == Verdict::mismatch; });
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->when.code_path, "$.*_response.sub_code");
  JsonPtr body(cJSON_Parse(R"({"alipay_trade_pay_response":{"code":"40004","sub_code":"ACQ.CONTEXT_INCONSISTENT"},"sign":"x"})"));
  EXPECT_EQ(json_path_strings(body.get(), mismatch->when.code_path), Strings{"ACQ.CONTEXT_INCONSISTENT"});
  // A refused HTTP 200 must not fall through to the generic 2xx success.
  const Rule* refused = first_rule(p, [](const Rule& r) {
    for (const std::string& c : r.when.codes)
      if (c == "40004") return true;
    return false;
  });
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->verdict, Verdict::fail);
  EXPECT_EQ(p.lookup.method, "POST");
  EXPECT_NE(p.lookup.body.find("{order_id}"), std::string::npos);
  EXPECT_EQ(p.lookup.not_found.codes, Strings{"ACQ.TRADE_NOT_EXIST"});
}

TEST(Profiles, every_built_in_status_map_and_path_is_well_formed) {
  for (const std::string& n : builtin_profile_names()) {
    const Profile p = builtin(n.c_str());
    for (const auto& [word, target] : p.lookup.status_map)
      EXPECT_NE(std::string(status_target_name(target)), "?") << n << ": " << word;
    for (const Rule& r : p.classify)
      if (!r.when.code_path.empty()) {
        EXPECT_TRUE(valid_json_path(r.when.code_path)) << n << ": " << r.when.code_path;
      }
    EXPECT_TRUE(valid_json_path(p.lookup.status_path)) << n;
  }
}

// ---- extends and inline profiles -----------------------------------------

TEST(Profiles, an_inline_profile_extending_stripe_overrides_create_path_and_lookup) {
  const Profile p = parse_profile(R"({
    "name": "stripe_connect",
    "extends": "stripe",
    "sources": ["local"],
    "notes": ["our own endpoint"],
    "create_path": "/v1/charges",
    "identity": {"max_length": 100},
    "classify": [{"when": {"status": 418}, "verdict": "query", "reason": "teapot"}],
    "lookup": {"by": "order_id", "path": "/v1/charges/search?query=metadata['order_id']:'{order_id}'",
               "status_map": {"succeeded": "SUCCEEDED"}}
  })");
  const Profile s = builtin("stripe");
  EXPECT_EQ(p.name, "stripe_connect");
  EXPECT_EQ(p.extends, "stripe");
  EXPECT_EQ(p.create_path, "/v1/charges");
  // Field by field: the identity keeps stripe's header name.
  EXPECT_EQ(p.identity.name, "Idempotency-Key");
  EXPECT_EQ(p.identity.max_length, 100u);
  EXPECT_EQ(p.lookup.by, LookupBy::order_id);
  EXPECT_EQ(p.lookup.method, "GET");
  EXPECT_EQ(p.lookup.status_path, s.lookup.status_path);
  EXPECT_EQ(p.lookup.status_map, (std::map<std::string, StatusTarget>{{"succeeded", StatusTarget::succeeded}}));
  // The child's rules come first; stripe's (then generic's) stay behind them.
  ASSERT_EQ(p.classify.size(), s.classify.size() + 1);
  EXPECT_EQ(p.classify[0].reason, "teapot");
  for (size_t i = 0; i < s.classify.size(); ++i) EXPECT_TRUE(same_rule(p.classify[i + 1], s.classify[i])) << i;
  Strings sources = s.sources;
  sources.push_back("local");
  EXPECT_EQ(p.sources, sources);
  EXPECT_EQ(p.notes.back(), "our own endpoint");
  EXPECT_EQ(p.notes.size(), s.notes.size() + 1);
  // The rest is stripe's.
  EXPECT_EQ(p.retention_ms, s.retention_ms);
  EXPECT_EQ(p.replay, ReplayKind::all_answers);
  EXPECT_EQ(p.request_id_headers, s.request_id_headers);
}

TEST(Profiles, a_profile_without_extends_still_falls_back_to_generic) {
  const Profile p = parse_profile(R"({"name": "acme", "create_path": "/pay",
    "classify": [{"when": {"status": 500}, "verdict": "retry"}]})");
  const Profile g = builtin("generic");
  EXPECT_EQ(p.extends, "generic");
  ASSERT_EQ(p.classify.size(), g.classify.size() + 1);
  EXPECT_EQ(p.classify[0].verdict, Verdict::retry);
  EXPECT_EQ(p.lookup.by, LookupBy::none);
}

TEST(Profiles, a_nameless_inline_profile_keeps_its_bases_name) {
  EXPECT_EQ(parse_profile(R"({"extends": "mollie", "create_path": "/v2/orders"})").name, "mollie");
}

TEST(Profiles, a_child_can_switch_to_a_reference_identity_with_no_expiry) {
  const Profile p = parse_profile(R"({"name": "wx_native", "extends": "wechatpay_v3",
    "create_path": "/v3/pay/transactions/native",
    "lookup": {"path": "/v3/pay/transactions/out-trade-no/{order_id}?mchid=1230000109"}})");
  EXPECT_EQ(p.identity.mode, IdentityMode::reference);
  EXPECT_FALSE(p.retention_ms);
  EXPECT_EQ(p.lookup.path, "/v3/pay/transactions/out-trade-no/{order_id}?mchid=1230000109");
  EXPECT_EQ(p.lookup.status_path, "$.trade_state");

  const Profile q = parse_profile(R"({"name": "ref", "identity": {"mode": "reference", "name": "$.order.reference",
    "max_length": 40}, "retention_ms": null})");
  EXPECT_EQ(q.identity.name, "$.order.reference");
  EXPECT_FALSE(q.retention_ms);
}

TEST(Profiles, an_empty_not_found_clears_the_inherited_one) {
  const Profile p = parse_profile(R"({"name": "x", "extends": "checkout_com", "lookup": {"not_found": {}}})");
  EXPECT_TRUE(p.lookup.not_found.empty());
}

// ---- validation: every error names its field -------------------------------

TEST(ProfileErrors, unknown_keys_are_named_with_their_full_path) {
  EXPECT_ERROR_AT(R"({"name": "x", "retention": 1})", "profile.retention");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"header": "K"}})", "profile.identity.header");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": 500}, "verdict": "retry"},
                     {"when": {"stauts": 500}, "verdict": "retry"}]})",
                  "profile.classify[1].when.stauts");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": 500}, "verdict": "retry", "note": "n"}]})",
                  "profile.classify[0].note");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "none", "url": "/x"}})", "profile.lookup.url");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"not_found": {"transport": "timeout"}}})", "profile.lookup.not_found.transport");
  EXPECT_ERROR_AT(R"({"name": "x", "response": {"id": "$.id"}})", "profile.response.id");
  EXPECT_ERROR_AT(R"({"name": "x", "name": "y"})", "profile.name");
}

TEST(ProfileErrors, a_bad_status_is_named) {
  const char* bad[] = {"600", "99", "\"6xx\"", "\"5XX\"", "[]", "[\"5xx\"]", "true", "500.5", "\"500\""};
  for (const char* s : bad) {
    const std::string json = std::string(R"({"name": "x", "classify": [{"when": {"status": 500}, "verdict": "retry"},
      {"when": {"status": 502}, "verdict": "retry"}, {"when": {"status": )") + s + R"(}, "verdict": "retry"}]})";
    const std::string err = error_of(json);
    EXPECT_EQ(err.rfind("profile.classify[2].when.status", 0), 0u) << s << " -> " << err;
  }
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": [500, 700]}, "verdict": "retry"}]})",
                  "profile.classify[0].when.status[1]");
}

TEST(ProfileErrors, a_bad_verdict_is_named) {
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": 500}, "verdict": "retry_same_key"}]})",
                  "profile.classify[0].verdict");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": 500}}]})", "profile.classify[0].verdict");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"verdict": "retry"}]})", "profile.classify[0].when");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {}, "verdict": "retry"}]})", "profile.classify[0].when");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"status": 500}, "verdict": "retry", "processed": "no"}]})",
                  "profile.classify[0].processed");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": {"when": {"status": 500}, "verdict": "retry"}})", "profile.classify");
}

TEST(ProfileErrors, a_bad_json_path_is_named) {
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"code_path": "error.code", "codes": ["a"]}, "verdict": "fail"}]})",
                  "profile.classify[0].when.code_path");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"code_path": "$..code", "codes": ["a"]}, "verdict": "fail"}]})",
                  "profile.classify[0].when.code_path");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"code_path": "$.code"}, "verdict": "fail"}]})",
                  "profile.classify[0].when.codes");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"codes": ["a"]}, "verdict": "fail"}]})",
                  "profile.classify[0].when.code_path");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"code_path": "$.code", "codes": []}, "verdict": "fail"}]})",
                  "profile.classify[0].when.codes");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"status_path": "$.data[x]"}})", "profile.lookup.status_path");
  EXPECT_ERROR_AT(R"({"name": "x", "response": {"id_path": "id"}})", "profile.response.id_path");
}

TEST(ProfileErrors, transport_and_header_matchers_are_checked) {
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"transport": "dns"}, "verdict": "retry"}]})",
                  "profile.classify[0].when.transport");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"transport": "timeout", "status": 500}, "verdict": "retry"}]})",
                  "profile.classify[0].when.transport");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"header": {"Bad Header": "x"}}, "verdict": "retry"}]})",
                  "profile.classify[0].when.header.Bad Header");
  EXPECT_ERROR_AT(R"({"name": "x", "classify": [{"when": {"header": {}}, "verdict": "retry"}]})",
                  "profile.classify[0].when.header");
}

TEST(ProfileErrors, extends_must_name_a_built_in) {
  const std::string err = error_of(R"({"name": "x", "extends": "stripe_v2"})");
  EXPECT_EQ(err.rfind("profile.extends: ", 0), 0u) << err;
  EXPECT_NE(err.find("stripe_v2"), std::string::npos) << err;
  EXPECT_NE(err.find("checkout_com"), std::string::npos) << "lists the built-ins: " << err;
  EXPECT_ERROR_AT(R"({"name": "x", "extends": ""})", "profile.extends");
  EXPECT_ERROR_AT(R"({"name": "x", "extends": ["stripe"]})", "profile.extends");
}

TEST(ProfileErrors, identity_modes_need_a_fitting_name) {
  // Reference mode inherits generic's header name unless it says where the reference is.
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"mode": "reference"}})", "profile.identity.name");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"mode": "reference", "name": "$.refs[*].id"}})", "profile.identity.name");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"mode": "body", "name": "$.payment.key"}})", "profile.identity.name");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"mode": "header", "name": "$.key"}})", "profile.identity.name");
  EXPECT_ERROR_AT(R"({"name": "x", "extends": "square", "identity": {"mode": "header"}})", "profile.identity.name");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"mode": "cookie"}})", "profile.identity.mode");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"min_length": 10, "max_length": 5}})", "profile.identity.min_length");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"max_length": 0}})", "profile.identity.max_length");
  EXPECT_ERROR_AT(R"({"name": "x", "identity": {"charset": "a b"}})", "profile.identity.charset");
}

TEST(ProfileErrors, lookup_and_scalars_are_checked) {
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "order_id", "path": "/payments"}})", "profile.lookup.path");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "provider_id", "path": "/p/{order_id}"}})", "profile.lookup.path");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "order_id", "path": "/p/{order_id}?m={mchid}"}})", "profile.lookup.path");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "merchant_ref"}})", "profile.lookup.by");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"method": "DELETE"}})", "profile.lookup.method");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"status_map": {"paid": "succeeded"}}})", "profile.lookup.status_map.paid");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"body": "{\"id\":\"{payment}\"}"}})", "profile.lookup.body");
  EXPECT_ERROR_AT(R"({"name": "x", "retention_ms": -1})", "profile.retention_ms");
  EXPECT_ERROR_AT(R"({"name": "x", "retention_ms": "24h"})", "profile.retention_ms");
  EXPECT_ERROR_AT(R"({"name": "x", "replays_server_errors": true})", "profile.replays_server_errors");
  EXPECT_ERROR_AT(R"({"name": "x", "replay": "sometimes"})", "profile.replay");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "provider_id", "path": "/p/{provider_id}", "reference_path": "$.ref"}})",
                  "profile.lookup.reference_path");
  EXPECT_ERROR_AT(R"({"name": "x", "lookup": {"by": "order_id", "path": "/p?r={order_id}", "reference_path": "$.refs[*]"}})",
                  "profile.lookup.reference_path");
  EXPECT_ERROR_AT(R"({"name": "x", "create_path": "v1/pay"})", "profile.create_path");
  EXPECT_ERROR_AT(R"({"name": "x", "request_id_headers": ["Request Id"]})", "profile.request_id_headers[0]");
  EXPECT_ERROR_AT(R"({"name": "x", "sources": ["St1", ""]})", "profile.sources[1]");
  EXPECT_ERROR_AT(R"({"name": "a b"})", "profile.name");
  EXPECT_ERROR_AT(R"([1, 2])", "profile");
  EXPECT_ERROR_AT(R"({"name": "x",)", "profile");
  // A JSON body template keeps its own braces.
  EXPECT_EQ(error_of(R"({"name": "x", "lookup": {"by": "order_id", "method": "POST", "path": "/q/{order_id}",
                          "body": "{\"q\":{\"ref\":\"{order_id}\"}}"}})"),
            "");
}

TEST(ProfileErrors, in_progress_is_a_verdict_and_names_round_trip) {
  for (Verdict v : {Verdict::success, Verdict::retry, Verdict::retry_after_backoff, Verdict::query, Verdict::fail,
                    Verdict::mismatch, Verdict::in_progress})
    EXPECT_EQ(parse_verdict(verdict_name(v)), v);
  EXPECT_FALSE(parse_verdict("Retry"));
  EXPECT_FALSE(parse_verdict(""));
  EXPECT_EQ(error_of(R"({"name": "x", "classify": [{"when": {"status": 423}, "verdict": "in_progress"}]})"), "");
}

// ---- what the built-in rules decide, through the real classifier -----------

void verdict_is(const char* profile, const TransportResult& t, Verdict v, const std::string& what) {
  const Classification c = classify(builtin(profile), t);
  EXPECT_STREQ(verdict_name(c.verdict), verdict_name(v)) << profile << ": " << what << " (reason " << c.reason << ")";
}

TEST(ProfileVerdicts, checkout_com_queries_after_anything_that_may_have_run_uncached) {
  using test::http;
  verdict_is("checkout_com", http(500), Verdict::query, "500");
  verdict_is("checkout_com", http(503), Verdict::query, "503: gateway errors too (Ck1)");
  verdict_is("checkout_com", test::timeout_after_write(), Verdict::query, "timeout after write");
  verdict_is("checkout_com", test::reset_after_write(), Verdict::query, "reset after write");
  verdict_is("checkout_com", test::connect_timeout(), Verdict::retry, "connect timeout: nothing written");
  verdict_is("checkout_com", test::connect_refused(), Verdict::retry, "refused");
  verdict_is("checkout_com", http(409), Verdict::retry_after_backoff, "409");
  verdict_is("checkout_com", http(201, R"({"id":"pay_1","status":"Declined"})"), Verdict::fail, "201 Declined");
  verdict_is("checkout_com", http(201, R"({"id":"pay_1","status":"Authorized"})"), Verdict::success, "201 Authorized");
}

TEST(ProfileVerdicts, wechatpay_codes) {
  using test::http;
  verdict_is("wechatpay_v3", http(403, R"({"code":"ORDERPAID","message":"paid"})"), Verdict::query, "ORDERPAID");
  verdict_is("wechatpay_v3", http(400, R"({"code":"OUT_TRADE_NO_USED"})"), Verdict::mismatch, "OUT_TRADE_NO_USED");
  verdict_is("wechatpay_v3", http(500, R"({"code":"SYSTEM_ERROR"})"), Verdict::retry_after_backoff, "SYSTEM_ERROR");
  verdict_is("wechatpay_v3", http(400, R"({"code":"PARAM_ERROR"})"), Verdict::fail, "PARAM_ERROR");
  verdict_is("wechatpay_v3", test::timeout_after_write(), Verdict::query, "timeout after write");
  verdict_is("wechatpay_v3", test::connect_timeout(), Verdict::retry, "connect timeout");
  verdict_is("wechatpay_v3", http(200, R"({"prepay_id":"wx1"})"), Verdict::success, "prepay_id");
}

TEST(ProfileVerdicts, alipay_gateway_codes_inside_http_200) {
  using test::http;
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"10000","trade_no":"1"},"sign":"s"})"),
             Verdict::success, "10000");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"10003"}})"), Verdict::query, "10003");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"40004","sub_code":"ACQ.TRADE_HAS_SUCCESS"}})"),
             Verdict::query, "TRADE_HAS_SUCCESS");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"40004","sub_code":"ACQ.CONTEXT_INCONSISTENT"}})"),
             Verdict::mismatch, "CONTEXT_INCONSISTENT");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"40004","sub_code":"ACQ.BUYER_BALANCE_NOT_ENOUGH"}})"),
             Verdict::fail, "a business refusal");
  verdict_is("alipay", http(200, R"({"error_response":{"code":"40002","sub_code":"isv.invalid-signature"}})"),
             Verdict::fail, "bad signature");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"20000","sub_code":"isp.unknow-error"}})"),
             Verdict::query, "20000");
}

TEST(Profiles, adyen_posts_to_its_versioned_path_and_maps_every_result_code) {
  const Profile a = *builtin_profile("adyen");
  EXPECT_EQ(a.create_path, "/v72/payments");  // adyen-node-api-library's paymentsApi.ts
  EXPECT_EQ(a.id_path, "$.pspReference");
  // PaymentResponse.ResultCodeEnum: fourteen values, each mapped.
  for (const char* code : {"AuthenticationFinished", "AuthenticationNotRequired", "Authorised", "Cancelled",
                           "ChallengeShopper", "Error", "IdentifyShopper", "PartiallyAuthorised", "Pending",
                           "PresentToShopper", "Received", "RedirectShopper", "Refused", "Success"})
    EXPECT_EQ(a.lookup.status_map.count(code), 1u) << code;
  EXPECT_EQ(a.lookup.status_map.size(), 14u);
  EXPECT_EQ(a.lookup.status_map.at("PartiallyAuthorised"), StatusTarget::succeeded);  // a charge exists
  EXPECT_EQ(a.lookup.status_map.at("AuthenticationFinished"), StatusTarget::pending);
}

TEST(Profiles, mollie_maps_every_payment_status_of_its_docs) {
  // docs.mollie.com "Handling payment status": seven statuses, each mapped.
  const Profile m = *builtin_profile("mollie");
  const auto ok = StatusTarget::succeeded, no = StatusTarget::failed;
  const std::map<std::string, StatusTarget> want = {{"open", ok},     {"authorized", ok}, {"paid", ok},
                                                    {"pending", StatusTarget::pending},
                                                    {"canceled", no}, {"expired", no},    {"failed", no}};
  EXPECT_EQ(m.lookup.status_map, want);
}

TEST(ProfileVerdicts, adyen_square_paypal_mollie_stripe_specifics) {
  using test::http;
  verdict_is("adyen", http(422, R"({"errorCode":"704"})", {{"transient-error", "true"}}), Verdict::retry_after_backoff,
             "704 transient");
  verdict_is("adyen", http(409, R"({"errorCode":"704"})"), Verdict::query, "704 without transient-error");
  verdict_is("adyen", http(503, R"({"errorCode":"703"})"), Verdict::retry_after_backoff, "703");
  verdict_is("adyen", http(200, R"({"pspReference":"x","resultCode":"Refused"})"), Verdict::fail, "Refused");
  verdict_is("adyen", http(200, R"({"pspReference":"x","resultCode":"Authorised"})"), Verdict::success, "Authorised");
  verdict_is("adyen", http(500), Verdict::query, "500 may be a malformed request (Ad2)");
  verdict_is("square", http(400, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]})"),
             Verdict::mismatch, "IDEMPOTENCY_KEY_REUSED");
  // Square documents a replay of the first successful answer only (Sq1):
  // a 500 that followed a charge may not be replayed, so it is queried.
  verdict_is("square", http(500), Verdict::query, "500 (replay success_only)");
  verdict_is("square", http(503), Verdict::retry, "503 (a gateway error, before processing)");
  verdict_is("paypal", http(422, R"({"details":[{"issue":"ORDER_COMPLETION_IN_PROGRESS"}]})"), Verdict::retry_after_backoff,
             "ORDER_COMPLETION_IN_PROGRESS");
  verdict_is("paypal", http(422, R"({"details":[{"issue":"DUPLICATE_INVOICE_ID"}]})"), Verdict::query, "DUPLICATE_INVOICE_ID");
  verdict_is("paypal", http(500), Verdict::retry_after_backoff, "500");
  verdict_is("mollie", http(500), Verdict::retry_after_backoff, "500");
  verdict_is("mollie", http(400), Verdict::fail, "a bare 400");
  verdict_is("stripe", http(404, R"({"error":{"type":"idempotency_error"}})"), Verdict::mismatch, "404 idempotency_error");
  verdict_is("stripe", http(500, "{}", {{"Stripe-Should-Retry", "false"}}), Verdict::query, "500 should-retry false");
  verdict_is("stripe", http(409, "{}", {{"Stripe-Should-Retry", "false"}}), Verdict::query, "409 should-retry false");
  verdict_is("stripe", http(429, "{}", {{"Stripe-Should-Retry", "false"}}), Verdict::query, "429 should-retry false");
  verdict_is("stripe", http(409, "{}"), Verdict::retry_after_backoff, "409 without the header");
  verdict_is("stripe", http(429, "{}"), Verdict::retry, "429 without the header");
  // Alipay answers HTTP 200 whatever happened: only code 10000 is success.
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"10000","trade_no":"t"}})"), Verdict::success,
             "10000");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"code":"40003","msg":"?"}})"), Verdict::query,
             "an unlisted code");
  verdict_is("alipay", http(200, R"({"alipay_trade_pay_response":{"msg":"no code"}})"), Verdict::query, "no code at all");
  verdict_is("alipay", http(200, R"({"something_else":1})"), Verdict::query, "no response member");
}

// ---- the JSON path dialect -----------------------------------------------

TEST(JsonPath, reads_nested_members_and_array_elements) {
  const char* doc = R"({"error": {"code": "card_declined", "type": "card_error"},
                        "data": [{"id": "pay_1", "status": "Captured"}, {"id": "pay_2", "status": "Voided"}]})";
  EXPECT_EQ(path_of(doc, "$.error.code"), Strings{"card_declined"});
  EXPECT_EQ(path_of(doc, "$.data[0].status"), Strings{"Captured"});
  EXPECT_EQ(path_of(doc, "$.data[1].id"), Strings{"pay_2"});
  EXPECT_EQ(path_of(doc, "$.data[*].id"), (Strings{"pay_1", "pay_2"}));
  EXPECT_EQ(path_of(doc, "$.data.*.status"), (Strings{"Captured", "Voided"}));
  EXPECT_EQ(path_of(doc, "$.error.*"), (Strings{"card_declined", "card_error"}));
  EXPECT_EQ(path_of(doc, "$.error[*]"), (Strings{"card_declined", "card_error"}));
}

TEST(JsonPath, wildcards_match_member_name_prefixes_and_suffixes) {
  const char* doc = R"({"alipay_trade_pay_response": {"code": "40004", "sub_code": "ACQ.TRADE_HAS_SUCCESS"},
                        "error_response": {"sub_code": "isv.invalid-signature"},
                        "responses": {"sub_code": "not me"}, "sign": "abc"})";
  EXPECT_EQ(path_of(doc, "$.*_response.sub_code"), (Strings{"ACQ.TRADE_HAS_SUCCESS", "isv.invalid-signature"}));
  EXPECT_EQ(path_of(doc, "$.alipay_*.code"), Strings{"40004"});
  EXPECT_EQ(path_of(doc, "$.alipay*response.code"), Strings{"40004"});
  EXPECT_EQ(path_of(doc, "$.*.sub_code"), (Strings{"ACQ.TRADE_HAS_SUCCESS", "isv.invalid-signature", "not me"}));
}

TEST(JsonPath, missing_paths_reach_nothing) {
  const char* doc = R"({"a": {"b": [1, 2]}, "s": "x"})";
  EXPECT_TRUE(path_of(doc, "$.nope").empty());
  EXPECT_TRUE(path_of(doc, "$.a.b[5]").empty());
  EXPECT_TRUE(path_of(doc, "$.a.c.d").empty());
  EXPECT_TRUE(path_of(doc, "$.s.t").empty()) << "a member of a string";
  EXPECT_TRUE(path_of(doc, "$.s[0]").empty()) << "an element of a string";
  EXPECT_TRUE(path_of(doc, "$.a[0]").empty()) << "an index into an object";
  EXPECT_TRUE(path_of(doc, "$.a").empty()) << "an object is not a string";
  EXPECT_TRUE(json_path_strings(nullptr, "$.a").empty());
}

TEST(JsonPath, integers_and_booleans_read_as_text_and_other_values_are_skipped) {
  const char* doc = R"({"errorCode": 704, "neg": -3, "big": 9007199254740992, "frac": 1.5, "t": true,
                        "n": null, "codes": [10000, "10003", 2.25, false]})";
  EXPECT_EQ(path_of(doc, "$.errorCode"), Strings{"704"});
  EXPECT_EQ(path_of(doc, "$.neg"), Strings{"-3"});
  EXPECT_EQ(path_of(doc, "$.big"), Strings{"9007199254740992"});
  EXPECT_TRUE(path_of(doc, "$.frac").empty());
  // Checkout.com says whether an action was approved with a boolean.
  EXPECT_EQ(path_of(doc, "$.t"), Strings{"true"});
  EXPECT_TRUE(path_of(doc, "$.n").empty());
  EXPECT_EQ(path_of(doc, "$.codes[*]"), (Strings{"10000", "10003", "false"}));
  EXPECT_EQ(path_of(R"("top")", "$"), Strings{"top"});
}

TEST(JsonPath, only_the_dialect_is_valid) {
  for (const char* ok : {"$", "$.a", "$.a.b", "$.a[0]", "$.a[12].b", "$.a[*]", "$.*", "$.*_response.sub_code",
                         "$.pre*", "$.a*z", "$[0]", "$.errors[*].code", "$.a-b.c_d"})
    EXPECT_TRUE(valid_json_path(ok)) << ok;
  for (const char* bad : {"", "a.b", "$.", "$..a", "$.a.", "$.a[", "$.a[]", "$.a[-1]", "$.a[x]", "$.**", "$.a*b*c",
                          "$.a b", "$a", "$.a[0", "$.a]", " $.a"})
    EXPECT_FALSE(valid_json_path(bad)) << bad;
  JsonPtr doc(cJSON_Parse(R"({"a": "x"})"));
  EXPECT_TRUE(json_path_strings(doc.get(), "a").empty()) << "an invalid path reaches nothing";
}

TEST(JsonPath, duplicate_members_are_all_reached) {
  EXPECT_EQ(path_of(R"({"code": "A", "code": "B"})", "$.code"), (Strings{"A", "B"}));
}

TEST(JsonPath, paths_of_more_steps_than_are_held_in_place_reach_as_deep) {
  // Eight steps are kept in place; the ninth on goes to the heap.
  const char* doc = R"({"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":[{"k":"deep"},{"k":7}]}}}}}}}}}})";
  EXPECT_EQ(path_of(doc, "$.a.b.c.d.e.f.g.h"), Strings{}) << "an object is not a string";
  EXPECT_EQ(path_of(doc, "$.a.b.c.d.e.f.g.h.i.j[*].k"), (Strings{"deep", "7"}));
  EXPECT_EQ(path_of(doc, "$.a.b.c.d.e.f.g.h.i.j[1].k"), Strings{"7"});
  EXPECT_TRUE(path_of(doc, "$.a.b.c.d.e.f.g.h.i.x[0].k").empty());
  EXPECT_TRUE(valid_json_path("$.a.b.c.d.e.f.g.h.i.j[*].k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z"));
  EXPECT_FALSE(valid_json_path("$.a.b.c.d.e.f.g.h.i.j[*].k.l.m..n"));
}

TEST(JsonPath, the_first_string_is_the_first_in_document_order_or_nothing) {
  // "bad": valid UTF-8, then a byte that is not; read as utf8_clean makes it.
  JsonPtr doc(cJSON_Parse("{\"errors\": [{\"n\": 1}, {\"code\": \"A\"}, {\"code\": 704}, {\"code\": \"B\"}],"
                          " \"bad\": \"caf\xc3\xa9 \xff\", \"id\": \"pi_1\"}"));
  ASSERT_TRUE(doc);
  for (const char* path : {"$.errors[*].code", "$.id", "$.errors[2].code", "$.bad", "$.nope", "$.errors", "id",
                           "$.a.b.c.d.e.f.g.h.i"}) {
    const Strings all = json_path_strings(doc.get(), path);
    const std::optional<std::string> first = json_path_first_string(doc.get(), path);
    if (all.empty()) {
      EXPECT_FALSE(first) << path;
    } else {
      ASSERT_TRUE(first) << path;
      EXPECT_EQ(*first, all.front()) << path;
    }
  }
  EXPECT_EQ(json_path_first_string(doc.get(), "$.errors[*].code"), std::optional<std::string>("A"));
  EXPECT_EQ(json_path_first_string(doc.get(), "$.errors[2].code"), std::optional<std::string>("704"));
  EXPECT_EQ(json_path_first_string(doc.get(), "$.bad"), std::optional<std::string>("caf\xc3\xa9 \xef\xbf\xbd"));
  EXPECT_FALSE(json_path_first_string(nullptr, "$.id"));
}

}  // namespace
}  // namespace payretry

namespace payretry::test {
namespace {

TEST(ProfileTemplates, a_create_path_may_name_the_merchant_and_the_order_and_nothing_else) {
  EXPECT_NO_THROW(parse_profile(R"({"name":"p","create_path":"/v3/pay/partner/{merchant_id}/orders/{order_id}"})"));
  EXPECT_ERROR_AT(R"({"name":"p","create_path":"/payments/{provider_id}"})", "profile.create_path");
  EXPECT_ERROR_AT(R"({"name":"p","create_path":"/payments/{key}"})", "profile.create_path");
  EXPECT_ERROR_AT(R"({"name":"p","create_path":"/payments/{account}"})", "profile.create_path");
}

TEST(ProfileTemplates, the_create_path_is_filled_from_the_config_and_the_order_percent_encoded) {
  Harness h("generic");
  h.config.create_path = "/v1/merchants/{merchant_id}/orders/{order_id}/pay";
  h.config.merchant_id = "m 1/2";
  h.transport.script.push_back(http(201, R"({"id":"p1"})"));
  const PaymentResult r = h.submit("order-7", R"({"amount":1})");
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].url, h.config.base_url + "/v1/merchants/m%201%2F2/orders/order-7/pay");
}

}  // namespace
}  // namespace payretry::test
