// A profile's "operations" block (src/profiles/profile_operations.cpp) and
// the "amount" readers (amount_reading.cpp), against docs/profiles.md
// "operations" and the per-provider operations tables of docs/providers.md:
// the loader refuses what cannot be sent safely and names the field, extends
// merges member by member, an amount reads as the provider writes it, and
// each built-in's capture, refund and cancel go where its provider documents.
#include <gtest/gtest.h>

#include <cJSON.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "amount_reading.hpp"
#include "classify.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "money_reading.hpp"
#include "operation_flow.hpp"
#include "path_template.hpp"
#include "profile.hpp"
#include "profile_operations.hpp"

namespace payretry {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_profile(json);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

Profile builtin(const char* name) {
  auto p = builtin_profile(name);
  if (!p) ADD_FAILURE() << "no built-in profile " << name;
  return p ? *p : Profile{};
}

// A profile over `base` whose operations block is `ops` (JSON text).
std::string with_ops(const std::string& ops, const std::string& base = "generic") {
  return R"({"name":"o","extends":")" + base + R"(","operations":)" + ops + "}";
}

// A refund that loads over generic: the smallest operation that is whole.
const char kRefund[] = R"("refund":{"path":"/v1/payments/{provider_id}/refunds")";

std::string refund_with(const std::string& members) {
  return with_ops(std::string("{") + kRefund + (members.empty() ? "" : "," + members) + "}}");
}

// ---- the loader -------------------------------------------------------------------------------

TEST(ProfileOperations, every_built_in_loads_and_generic_has_no_operations) {
  for (const std::string& n : builtin_profile_names()) {
    const Profile p = builtin(n.c_str());
    for (const auto& [name, op] : p.operations) {
      EXPECT_TRUE(name == "capture" || name == "refund" || name == "cancel") << n << ": " << name;
      EXPECT_FALSE(op.path.empty()) << n << "." << name;
      EXPECT_FALSE(op.notes.empty()) << n << "." << name << ": every operation says where its facts come from";
      EXPECT_FALSE(op.parent_states.empty()) << n << "." << name;
    }
  }
  EXPECT_TRUE(builtin("generic").operations.empty());
  EXPECT_TRUE(builtin("generic").amount.path.empty());
}

TEST(ProfileOperations, a_minimal_operation_inherits_the_profiles_key_window_and_replay_and_its_kinds_parent_states) {
  const Profile p = parse_profile(refund_with(""));
  ASSERT_EQ(p.operations.count("refund"), 1u);
  const ProfileOperation& r = p.operations.at("refund");
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.identity.mode, IdentityMode::header);
  EXPECT_EQ(r.identity.name, "Idempotency-Key");
  EXPECT_EQ(r.retention_ms, p.retention_ms);
  EXPECT_EQ(r.replay, p.replay);
  EXPECT_EQ(r.parent_states, (std::vector<MoneyState>{MoneyState::paid, MoneyState::partly_refunded}));
  EXPECT_EQ(operation_default_parent_states("capture"), std::vector<MoneyState>{MoneyState::authorized});
  EXPECT_EQ(operation_default_parent_states("cancel"),
            (std::vector<MoneyState>{MoneyState::awaiting_customer, MoneyState::pending, MoneyState::authorized}));
  EXPECT_EQ(r.lookup.by, LookupBy::none);
}

TEST(ProfileOperations, an_operation_name_the_library_does_not_know_is_refused) {
  EXPECT_EQ(error_of(with_ops(R"({"void":{"path":"/v"}})")),
            "profile.operations.void: unknown operation (known: capture, refund, cancel)");
  EXPECT_EQ(error_of(with_ops(R"([])")), "profile.operations: must be an object");
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"/a"},"refund":{"path":"/b"}})")),
            "profile.operations.refund: given twice");
}

TEST(ProfileOperations, malformed_members_are_refused_naming_the_field) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("methd":"POST")", "profile.operations.refund.methd: unknown key; did you mean \"method\"?"},
      {R"("method":"PUT")", "profile.operations.refund.method: must be \"POST\" or \"DELETE\""},
      {R"("target_id":"$.captures[*].id")",
       "profile.operations.refund.target_id: must be a JSON path to one value"},
      {R"("identity":{"mode":"reference","name":"$.out_trade_no"})",
       "profile.operations.refund.identity.mode: an operation's key is its own"},
      {R"("identity":{"mode":"body","name":"$.refunds[0].key"})",
       "profile.operations.refund.identity.name: identity mode \"body\" needs a JSON path of members"},
      {R"("body":{"$.a[0]":"{provider_id}"})", "profile.operations.refund.body.$.a[0]: must be a JSON path of members"},
      {R"("body":{"$.pi":"{payment}"})", "profile.operations.refund.body.$.pi: unknown placeholder {payment}"},
      {R"("body":{"$.pi":""})", "profile.operations.refund.body.$.pi: must be a template"},
      {R"("body":{})", "profile.operations.refund.body: must name at least one field"},
      {R"("amount":{"path":"$.amount","format":"cents"})",
       "profile.operations.refund.amount.format: \"cents\" is not an amount format (minor, decimal)"},
      {R"("amount":{"path":"$.amounts[*]","format":"minor"})",
       "profile.operations.refund.amount.path: \"$.amounts[*]\" is not a JSON path to one value"},
      {R"("amount":{"path":"$.amount"})", "profile.operations.refund.amount.format: missing"},
      {R"("retention_ms":0)", "profile.operations.refund.retention_ms: must be an integer from 1"},
      {R"("replay":"always")", "profile.operations.refund.replay: must be none, success_only"},
      {R"("classify":[{"when":{"status":700},"verdict":"retry"}])",
       "profile.operations.refund.classify[0].when.status: must be an integer from 100 to 599"},
      {R"("response":{"status_map":{"ok":"DONE"}})",
       "profile.operations.refund.response.status_map.ok: must be \"SUCCEEDED\", \"FAILED\" or \"PENDING\""},
      {R"("response":{"state_path":"$.s"})", "profile.operations.refund.response.state_path: unknown key"},
      {R"("lookup":{"by":"provider_id","path":"/v1/refunds/{provider_id}"})",
       "profile.operations.refund.lookup.path: a refund's lookup by provider_id needs {operation_id} in its path"},
      {R"("lookup":{"by":"order_id","path":"/v1/refunds/{operation_id}"})",
       "profile.operations.refund.lookup.by: \"order_id\" asks by what is known before the send"},
      {R"("lookup":{"by":"order_id","path":"/v1/refunds"})",
       "profile.operations.refund.lookup.path: a lookup by order_id names the operation's {key}"},
      {R"("lookup":{"by":"provider_id","path":"/p/{provider_id}/actions","items":"$[*]","id_path":"$.id","item_key_path":"$.reference"})",
       "profile.operations.refund.lookup.item_key_path: finds the item by the operation's key: the body must carry it"},
      {R"("body":{"$.reference":"{key}"},"lookup":{"by":"provider_id","path":"/p/{provider_id}/actions/{operation_id}","items":"$[*]","id_path":"$.id","item_key_path":"$.reference"})",
       "profile.operations.refund.lookup.item_key_path: finds a row that knows no id yet: the lookup's path must not need {operation_id}"},
      {R"("body":{"$.reference":"{key}"},"lookup":{"by":"provider_id","path":"/v1/refunds/{operation_id}","item_key_path":"$.reference"})",
       "profile.operations.refund.lookup.item_key_path: reads each listed item: it needs items"},
      {R"("lookup":{"by":"replay"})",
       "profile.operations.refund.lookup.by: \"replay\" is a same-key re-send, which replay \"none\" does not make safe"},
      {R"("lookup":{"by":"provider_id","path":"/r/{refund_id}"})",
       "profile.operations.refund.lookup.path: unknown placeholder {refund_id}"},
      {R"("money":{"states":{"succeeded":"returned"}})",
       "profile.operations.refund.money.states.succeeded: \"returned\" is not a money state"},
      {R"("money":{"create":[{"path":"$.status"}]})",
       "profile.operations.refund.money.create[0]: reads words that no map lists"},
      {R"("parent_states":["paid","unknown"])", "profile.operations.refund.parent_states[1]: \"unknown\" is not a money state"},
      {R"("parent_states":["paid","paid"])", "profile.operations.refund.parent_states[1]: given twice"},
      {R"("parent_states":[])", "profile.operations.refund.parent_states: must name at least one money state"},
      {R"("notes":"x")", "profile.operations.refund.notes: must be an array of strings"},
  };
  for (const auto& [members, want] : cases) {
    const std::string got = error_of(refund_with(members));
    EXPECT_EQ(got.substr(0, want.size()), want) << members << "\n got: " << got;
  }
}

TEST(ProfileOperations, only_an_operations_lookup_finds_its_item_by_key) {
  // A payment's lookup has no key written into an action: item_key_path
  // there would refuse every answer its webhook-confirming lookups read.
  EXPECT_EQ(error_of(R"({"name":"p","lookup":{"by":"provider_id","path":"/p/{provider_id}/actions","items":"$[*]",)"
                     R"("id_path":"$.id","status_path":"$.s","item_key_path":"$.reference"}})"),
            "profile.lookup.item_key_path: finds an operation's action by the key its body carried: only an "
            "operation's lookup has one");
}

TEST(ProfileOperations, the_whole_operation_is_checked_once_every_member_is_known) {
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"method":"POST"}})")),
            "profile.operations.refund.path: missing: where the refund is sent");
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"v1/refunds"}})")),
            "profile.operations.refund.path: must start with / and hold no spaces or control characters");
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"/captures/{target_id}/refund"}})")),
            "profile.operations.refund.target_id: missing: the operation names {target_id}; say where the payment's "
            "lookup answer carries it");
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"/r","target_id":"$.id"}})")),
            "profile.operations.refund.target_id: is given, but neither the path, the body nor the lookup names "
            "{target_id}");
  // generic has no lookup, so there is no answer to read a target from.
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"/c/{target_id}/refund","target_id":"$.capture.id"}})")),
            "profile.operations.refund.target_id: is read from the payment's lookup answer, and the profile has no "
            "lookup");
  EXPECT_EQ(error_of(with_ops(
                R"({"refund":{"path":"/r","identity":{"mode":"body","name":"$.key"},"body":{"$.key":"{order_id}"}}})")),
            "profile.operations.refund.body.$.key: is where the identity writes the key");
  EXPECT_EQ(error_of(with_ops(
                R"({"refund":{"path":"/r","amount":{"path":"$.amount","format":"minor"},"body":{"$.amount":"1"}}})")),
            "profile.operations.refund.body.$.amount: is where the caller gives the amount");
  EXPECT_EQ(error_of(with_ops(
                R"({"cancel":{"method":"DELETE","path":"/p/{provider_id}","identity":{"mode":"body","name":"$.k"}}})")),
            "profile.operations.cancel.identity: a DELETE has no body to carry the key in");
  EXPECT_EQ(error_of(with_ops(R"({"refund":{"path":"/r","response":{"id_path":""},
                                 "lookup":{"by":"provider_id","path":"/r/{operation_id}"}}})")),
            "profile.operations.refund.response.id_path: is empty, and the lookup asks by the id the answer gives");
  // A profile whose key is the payment's reference (WeChat Pay) cannot
  // lend it to an operation.
  EXPECT_EQ(error_of(with_ops(R"({"capture":{"path":"/v3/pay/capture"}})", "wechatpay_v3")),
            "profile.operations.capture.identity: missing: the profile's identity is the payment's reference, which "
            "cannot name a capture; give the operation its own (header, body or none)");
  // wechatpay_v3's refund gave its own, which a child naming the refund keeps.
  EXPECT_EQ(parse_profile(with_ops(R"({"refund":{"path":"/v3/refund/domestic/refunds"}})", "wechatpay_v3"))
                .operations.at("refund")
                .identity.name,
            "$.out_refund_no");
  EXPECT_EQ(error_of(R"({"name":"o","identity":{"mode":"none"}})"),
            "profile.identity.mode: \"none\" is for an operation the provider takes no key for, never a create");
}

TEST(ProfileOperations, the_create_amount_reader_is_checked_too) {
  EXPECT_EQ(error_of(R"({"name":"o","amount":{"path":"amount","format":"minor"}})"),
            "profile.amount.path: \"amount\" is not a JSON path to one value ($.amount, $.amount.value, "
            "$.purchase_units[0].amount.value)");
  EXPECT_EQ(error_of(R"({"name":"o","amount":{"path":"$.amount","format":"minor","currency":"$.c"}})")
                .substr(0, 30),
            "profile.amount.currency: unkno");
  EXPECT_EQ(parse_profile(R"({"name":"o","amount":{"path":"$.amount.value","format":"decimal"}})").amount.format,
            AmountFormat::decimal);
}

TEST(ProfileOperations, extends_merges_an_operation_member_by_member) {
  // stripe's refund has a lookup and notes; a child that moves the path
  // keeps them, puts its rules before the base's and adds a note.
  const Profile base = builtin("stripe");
  ASSERT_EQ(base.operations.count("refund"), 1u);
  const ProfileOperation& br = base.operations.at("refund");
  const Profile child = parse_profile(R"({"name":"c","extends":"stripe","operations":{"refund":{
      "path":"/v1/charges/{provider_id}/refunds",
      "classify":[{"when":{"status":402},"verdict":"fail"}],
      "notes":["the legacy charge refunds"]}}})");
  const ProfileOperation& cr = child.operations.at("refund");
  EXPECT_EQ(cr.path, "/v1/charges/{provider_id}/refunds");
  EXPECT_EQ(cr.lookup.path, br.lookup.path);
  EXPECT_EQ(cr.lookup.status_map, br.lookup.status_map);
  EXPECT_EQ(cr.status_map, br.status_map);
  EXPECT_EQ(cr.body, br.body);
  EXPECT_EQ(cr.money.states, br.money.states);
  ASSERT_EQ(cr.classify.size(), br.classify.size() + 1);
  EXPECT_EQ(cr.classify[0].when.status, (std::vector<std::pair<int, int>>{{402, 402}}));
  EXPECT_EQ(cr.notes.size(), br.notes.size() + 1);
  EXPECT_EQ(cr.notes.back(), "the legacy charge refunds");
  // The operations the child does not name stay as they were.
  EXPECT_EQ(child.operations.at("capture").path, base.operations.at("capture").path);

  // A child that moves PayPal's void off the authorization must clear the
  // inherited target reader, which nothing would use any more.
  EXPECT_EQ(error_of(R"({"name":"c","extends":"paypal","operations":{"cancel":{"path":"/orders/{provider_id}/void",
      "lookup":{"path":"/orders/{provider_id}"}}}})"),
            "profile.operations.cancel.target_id: is given, but neither the path, the body nor the lookup names "
            "{target_id}");
  EXPECT_EQ(error_of(R"({"name":"c","extends":"paypal","operations":{"cancel":{"path":"/orders/{provider_id}/void",
      "target_id":"","lookup":{"path":"/orders/{provider_id}"}}}})"),
            "");

  // A lookup member replaces only itself; a status_map is replaced whole.
  const Profile c2 = parse_profile(R"({"name":"c","extends":"stripe","operations":{"refund":{
      "lookup":{"status_map":{"succeeded":"SUCCEEDED"}}}}})");
  EXPECT_EQ(c2.operations.at("refund").lookup.path, br.lookup.path);
  EXPECT_EQ(c2.operations.at("refund").lookup.status_map.size(), 1u);
}

TEST(ProfileOperations, an_inherited_operation_follows_the_childs_identity_window_and_replay_unless_it_gave_its_own) {
  // stripe's operations give no identity, window or replay of their own:
  // they are the profile's, and a child's top level reaches them.
  const Profile child = parse_profile(R"({"name":"c","extends":"stripe",
      "identity":{"name":"X-Key","max_length":64},"retention_ms":3600000,"replay":"none"})");
  for (const auto& [name, op] : child.operations) {
    EXPECT_EQ(op.identity.name, "X-Key") << name;
    EXPECT_EQ(op.identity.max_length, 64u) << name;
    EXPECT_EQ(op.retention_ms, std::optional<int64_t>(3600000)) << name;
    EXPECT_EQ(op.replay, ReplayKind::none) << name;
  }
  // One given on the operation stays its own.
  const Profile c2 = parse_profile(R"({"name":"c","extends":"stripe","operations":{"refund":{"retention_ms":null,
      "identity":{"mode":"body","name":"$.idempotency_key"}}},"retention_ms":3600000})");
  EXPECT_EQ(c2.operations.at("refund").retention_ms, std::nullopt);
  EXPECT_EQ(c2.operations.at("refund").identity.mode, IdentityMode::body);
  EXPECT_EQ(c2.operations.at("capture").retention_ms, std::optional<int64_t>(3600000));
  // And a grandchild keeps what the child gave.
  EXPECT_EQ(c2.operations.at("refund").identity_given, true);
}

TEST(ProfileOperations, paypal_reads_the_capture_and_authorization_it_targets_from_the_orders_lookup_answer) {
  const Profile p = builtin("paypal");
  // An order authorized, then captured in part (Orders v2 GET answer).
  JsonPtr order(cJSON_Parse(R"({"id":"ORDER1","status":"COMPLETED","purchase_units":[{"payments":{
      "authorizations":[{"id":"AUTH1","status":"PARTIALLY_CAPTURED"}],
      "captures":[{"id":"CAP1","status":"COMPLETED"}]}}]})"));
  EXPECT_EQ(json_path_first_string(order.get(), p.operations.at("refund").target_id), "CAP1");
  EXPECT_EQ(json_path_first_string(order.get(), p.operations.at("capture").target_id), "AUTH1");
  EXPECT_EQ(json_path_first_string(order.get(), p.operations.at("cancel").target_id), "AUTH1");
  // Payments v2 keeps request ids 45 days, Orders v2 6 h.
  EXPECT_EQ(p.operations.at("refund").retention_ms, std::optional<int64_t>(int64_t(45) * 24 * 3600 * 1000));
  EXPECT_EQ(p.retention_ms, std::optional<int64_t>(int64_t(6) * 3600 * 1000));
  // The void's key is kept as long, and a re-send answers its latest state.
  EXPECT_EQ(p.operations.at("cancel").retention_ms, std::optional<int64_t>(int64_t(45) * 24 * 3600 * 1000));
  EXPECT_EQ(p.operations.at("cancel").replay, ReplayKind::current_state);
  // Its default answer, 204 with no body, is the void done; a 2xx naming
  // the authorization VOIDED is too.
  const Profile voids = operation_profile(p, p.operations.at("cancel"));
  TransportResult no_content;
  no_content.response.status = 204;
  EXPECT_EQ(classify(voids, no_content).verdict, Verdict::success);
  TransportResult voided;
  voided.response.status = 200;
  voided.response.body = R"({"id":"AUTH1","status":"VOIDED"})";
  EXPECT_EQ(classify(voids, voided).verdict, Verdict::success);
  // Another 2xx without a JSON body (a proxy's page) proves nothing: it is
  // asked again under the key, whose replay tells.
  TransportResult page;
  page.response.status = 200;
  page.response.body = "<html>ok</html>";
  EXPECT_NE(classify(voids, page).verdict, Verdict::success);
  // The void done with no word about the money: the hold is released.
  EXPECT_EQ(p.operations.at("cancel").money.created, MoneyState::failed);
}

// A 2xx whose body cannot be read still has its status and headers to match
// (PayPal's void: 204 with none), never codes.
TEST(ProfileOperations, a_malformed_2xx_rule_may_name_its_status_and_headers_but_not_codes) {
  EXPECT_EQ(error_of(R"({"name":"c","extends":"paypal","classify":[{"when":{"transport":"malformed_2xx","status":204,
      "header":{"Paypal-Debug-Id":"*"}},"verdict":"success"}]})"), "");
  EXPECT_NE(error_of(R"({"name":"c","extends":"paypal","classify":[{"when":{"transport":"malformed_2xx",
      "code_path":"$.name","codes":["X"]},"verdict":"success"}]})").find("cannot be combined with code_path"), std::string::npos);
  EXPECT_NE(error_of(R"({"name":"c","extends":"paypal","classify":[{"when":{"transport":"timeout","status":504},
      "verdict":"query"}]})").find("cannot be combined with status"), std::string::npos);
}

// The notes of every operation cite their sources by tag; each tag is one of
// the profile's sources and is defined in docs/providers.md, whose
// operations section has a table for every built-in that has operations.
TEST(ProfileOperations, every_operations_source_tag_is_the_profiles_and_defined_in_providers_md) {
  std::ifstream in(std::string(PAYRETRY_SOURCE_DIR) + "/docs/providers.md");
  ASSERT_TRUE(in) << "docs/providers.md";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex tag(R"(\b([A-Z][a-z][0-9]+[a-z]?)\b)");
  for (const std::string& n : builtin_profile_names()) {
    const Profile p = builtin(n.c_str());
    if (p.operations.empty()) continue;
    EXPECT_NE(doc.find("### `" + n + "` operations"), std::string::npos) << n;
    size_t cited = 0;
    for (const auto& [kind, op] : p.operations) {
      for (const std::string& note : op.notes) {
        for (std::sregex_iterator it(note.begin(), note.end(), tag), end; it != end; ++it) {
          const std::string t = (*it)[1];
          ++cited;
          EXPECT_NE(std::find(p.sources.begin(), p.sources.end(), t), p.sources.end())
              << n << "." << kind << " cites " << t << ", not among the profile's sources";
          std::string anchor = "<a id=\"" + t + "\"></a>";
          for (char& c : anchor) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          EXPECT_NE(doc.find(anchor), std::string::npos) << n << "." << kind << ": " << t << " is not defined in providers.md";
        }
      }
    }
    EXPECT_GT(cited, 0u) << n << ": its operations cite no source";
  }
}

// ---- read_amount ------------------------------------------------------------------------------

std::optional<int64_t> amount_in(AmountFormat f, const char* path, const char* json, std::string& error) {
  JsonPtr doc(cJSON_Parse(json));
  EXPECT_TRUE(doc) << json;
  return read_amount(AmountField{path, f}, doc.get(), error);
}

TEST(AmountReading, minor_units_are_a_whole_non_negative_number) {
  std::string e;
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":1000})", e), 1000);
  EXPECT_EQ(e, "");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":0})", e), 0);
  // Stripe's form fields make "1000" and 1000 the same bytes.
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":"1000"})", e), 1000);
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount.value", R"({"amount":{"value":9007199254740992}})", e),
            int64_t(1) << 53);
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":10.5})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: must be a whole number of minor units, not a fraction");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":-5})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: must not be negative");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":"10.00"})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: \"10.00\" is not a whole number of minor units");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":"-5"})", e), std::nullopt);
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":"90071992547409930"})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: is too large");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":"9007199254740993"})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: is too large");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":9007199254740994})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: is too large");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount", R"({"amount":true})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount: must be a whole number of minor units");
}

TEST(AmountReading, a_decimal_is_read_as_hundredths_with_at_most_two_decimals) {
  std::string e;
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"10.00"})", e), 1000);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"10"})", e), 1000);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"10.5"})", e), 1050);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"0.01"})", e), 1);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"0.00"})", e), 0);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"10.001"})", e), std::nullopt);
  EXPECT_EQ(e, "$.v: \"10.001\" has more than two decimals");
  for (const char* bad : {R"({"v":"abc"})", R"({"v":"-1.00"})", R"({"v":"+1.00"})", R"({"v":"1e3"})",
                          R"({"v":"1."})", R"({"v":".5"})", R"({"v":""})", R"({"v":"1,00"})", R"({"v":" 1.00"})"}) {
    EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", bad, e), std::nullopt) << bad;
    EXPECT_NE(e.find("is not a decimal amount"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":"123456789012345.00"})", e), std::nullopt);
  EXPECT_EQ(e, "$.v: \"123456789012345.00\" is too large");
  // A JSON number only when it is exactly such a value.
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":88.88})", e), 8888);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":10})", e), 1000);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":0.1})", e), 10);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":10.001})", e), std::nullopt);
  EXPECT_EQ(e, "$.v: has more than two decimals");
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":-1})", e), std::nullopt);
  EXPECT_EQ(amount_in(AmountFormat::decimal, "$.v", R"({"v":{"x":1}})", e), std::nullopt);
  EXPECT_EQ(e, "$.v: must be a decimal amount (\"10.00\")");
}

TEST(AmountReading, a_missing_value_or_body_is_an_error_not_zero) {
  std::string e;
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.amount.value", R"({"amount":5})", e), std::nullopt);
  EXPECT_EQ(e, "$.amount.value: no value there");
  EXPECT_EQ(amount_in(AmountFormat::minor, "$.purchase_units[1].amount", R"({"purchase_units":[{"amount":1}]})", e),
            std::nullopt);
  EXPECT_EQ(read_amount(AmountField{"$.amount", AmountFormat::minor}, nullptr, e), std::nullopt);
  EXPECT_EQ(e, "the body is not a JSON document");
  EXPECT_EQ(read_amount(AmountField{}, nullptr, e), std::nullopt);
  EXPECT_EQ(e, "the profile names no amount");
}

TEST(AmountReading, alipays_biz_content_is_read_as_an_object_or_as_its_json_text) {
  std::string e;
  const char* path = "$.biz_content.total_amount";
  // What tests/integration hands pay_submit for alipay (form_flat sends the
  // object as its JSON text), and the same body with that text already.
  EXPECT_EQ(amount_in(AmountFormat::decimal, path, R"({"biz_content":{"out_trade_no":"o1","total_amount":"10.00"}})", e),
            1000);
  EXPECT_EQ(amount_in(AmountFormat::decimal, path,
                      R"({"biz_content":"{\"out_trade_no\":\"o1\",\"total_amount\":\"88.88\"}"})", e),
            8888);
  EXPECT_EQ(amount_in(AmountFormat::decimal, path, R"({"biz_content":"not json"})", e), std::nullopt);
  EXPECT_EQ(e, "$.biz_content.total_amount: no value there");
}

TEST(AmountReading, alipays_refund_amount_is_read_inside_biz_content_as_the_gateway_form_carries_it) {
  const Profile p = builtin("alipay");
  const AmountField& f = p.operations.at("refund").amount;
  JsonPtr body(cJSON_Parse(R"({"biz_content":{"refund_amount":"3.50","refund_reason":"x"}})"));
  std::string e;
  EXPECT_EQ(read_amount(f, body.get(), e), 350) << e;
  const ProfileOperation& r = p.operations.at("refund");
  EXPECT_EQ(r.body, (std::vector<std::pair<std::string, std::string>>{{"$.biz_content.out_trade_no", "{order_id}"}}));
  // Alipay's refund query page (providers.md Al6): a refund the query does not find was not made,
  // and is asked again with the same out_request_no.
  EXPECT_EQ(r.replay, ReplayKind::reference);
}

// Each built-in's create amount, on the body shape its provider takes (the
// bodies tests/integration and the simulator send).
TEST(AmountReading, each_built_in_reads_its_create_amount_where_its_provider_carries_it) {
  const std::map<std::string, std::pair<const char*, int64_t>> bodies = {
      {"stripe", {R"({"amount":1000,"currency":"eur","metadata":{"order_id":"o"}})", 1000}},
      {"adyen", {R"({"amount":{"currency":"EUR","value":1000},"reference":"o","merchantAccount":"M"})", 1000}},
      {"checkout_com", {R"({"amount":1000,"currency":"EUR","reference":"o"})", 1000}},
      {"mollie", {R"({"amount":{"currency":"EUR","value":"10.00"},"description":"Order","metadata":{"order_id":"o"}})", 1000}},
      {"paypal", {R"({"intent":"CAPTURE","purchase_units":[{"reference_id":"pr","amount":{"currency_code":"USD","value":"10.50"}}]})", 1050}},
      {"square", {R"({"source_id":"cnon:card-nonce-ok","amount_money":{"amount":1000,"currency":"USD"}})", 1000}},
      {"wechatpay_v3", {R"({"out_trade_no":"wx_order_1","amount":{"total":100,"currency":"CNY"}})", 100}},
      {"alipay", {R"({"biz_content":{"out_trade_no":"o","total_amount":"88.88","subject":"x"}})", 8888}},
  };
  for (const auto& [name, body] : bodies) {
    const Profile p = builtin(name.c_str());
    if (p.amount.path.empty()) {
      ADD_FAILURE() << name << ": no create amount";
      continue;
    }
    JsonPtr doc(cJSON_Parse(body.first));
    std::string e;
    EXPECT_EQ(read_amount(p.amount, doc.get(), e), body.second) << name << ": " << e;
  }
}

// ---- the built-ins against docs/providers.md ---------------------------------------------------

// What docs/providers.md says of one operation of one provider.
struct Documented {
  const char* method;
  const char* endpoint;   // the path with the sample ids below filled in
  IdentityMode carrier;
  const char* key_name;   // header name or body path; "" for none
  std::map<std::string, StatusTarget> answer;  // status words of its answer
  LookupBy lookup;
  const char* lookup_endpoint;  // with the sample ids; "" for none
  const char* amount_path;      // "" for none
};

// Sample ids: the parent's provider id and order id, the operation's key,
// a target id and the operation's own id.
std::string expand(const std::string& tmpl) {
  return fill_template(tmpl,
                       {{"provider_id", "PAY1"}, {"order_id", "ORD1"}, {"key", "KEY1"}, {"target_id", "TGT1"},
                        {"operation_id", "OP1"}, {"merchant_id", "M1"}},
                       false);
}

constexpr StatusTarget S = StatusTarget::succeeded;
constexpr StatusTarget F = StatusTarget::failed;
constexpr StatusTarget P = StatusTarget::pending;

const std::map<std::string, std::map<std::string, Documented>>& documented() {
  static const std::map<std::string, std::map<std::string, Documented>> table = {
      {"stripe",
       {{"capture",
         {"POST", "/v1/payment_intents/PAY1/capture", IdentityMode::header, "Idempotency-Key",
          {{"succeeded", S}, {"processing", P}, {"canceled", F}}, LookupBy::order_id, "/v1/payment_intents/PAY1",
          "$.amount_to_capture"}},
        {"refund",
         {"POST", "/v1/refunds", IdentityMode::header, "Idempotency-Key",
          {{"succeeded", S}, {"pending", P}, {"requires_action", P}, {"failed", F}, {"canceled", F}},
          LookupBy::provider_id, "/v1/refunds/OP1", "$.amount"}},
        {"cancel",
         {"POST", "/v1/payment_intents/PAY1/cancel", IdentityMode::header, "Idempotency-Key", {{"canceled", S}},
          LookupBy::order_id, "/v1/payment_intents/PAY1", ""}}}},
      // Checkout.com answers 202 with an action id and no status word.
      {"checkout_com",
       {{"capture",
         {"POST", "/payments/PAY1/captures", IdentityMode::header, "Cko-Idempotency-Key", {}, LookupBy::provider_id,
          "/payments/PAY1/actions", "$.amount"}},
        {"refund",
         {"POST", "/payments/PAY1/refunds", IdentityMode::header, "Cko-Idempotency-Key", {}, LookupBy::provider_id,
          "/payments/PAY1/actions", "$.amount"}},
        {"cancel",
         {"POST", "/payments/PAY1/voids", IdentityMode::header, "Cko-Idempotency-Key", {}, LookupBy::provider_id,
          "/payments/PAY1/actions", ""}}}},
      // Adyen answers received and settles by notification only.
      {"adyen",
       {{"capture",
         {"POST", "/v72/payments/PAY1/captures", IdentityMode::header, "idempotency-key", {{"received", P}},
          LookupBy::none, "", "$.amount.value"}},
        {"refund",
         {"POST", "/v72/payments/PAY1/refunds", IdentityMode::header, "idempotency-key", {{"received", P}},
          LookupBy::none, "", "$.amount.value"}},
        {"cancel",
         {"POST", "/v72/payments/PAY1/cancels", IdentityMode::header, "idempotency-key", {{"received", P}},
          LookupBy::none, "", ""}}}},
      // Mollie: major units as strings; a cancel is a DELETE of the payment.
      {"mollie",
       {{"capture",
         {"POST", "/v2/payments/PAY1/captures", IdentityMode::header, "Idempotency-Key",
          {{"succeeded", S}, {"pending", P}, {"failed", F}}, LookupBy::provider_id, "/v2/payments/PAY1/captures/OP1",
          "$.amount.value"}},
        {"refund",
         {"POST", "/v2/payments/PAY1/refunds", IdentityMode::header, "Idempotency-Key",
          {{"refunded", S}, {"queued", P}, {"pending", P}, {"processing", P}, {"failed", F}, {"canceled", F}},
          LookupBy::provider_id, "/v2/payments/PAY1/refunds/OP1", "$.amount.value"}},
        {"cancel",
         {"DELETE", "/v2/payments/PAY1", IdentityMode::header, "Idempotency-Key", {{"canceled", S}}, LookupBy::order_id,
          "/v2/payments/PAY1", ""}}}},
      // PayPal: captures and voids name the authorization, refunds the
      // capture ({target_id}); each under its PayPal-Request-Id (the void's
      // too: its reference page and the SDKs send one).
      {"paypal",
       {{"capture",
         {"POST", "/v2/payments/authorizations/TGT1/capture", IdentityMode::header, "PayPal-Request-Id",
          {{"COMPLETED", S}, {"PARTIALLY_REFUNDED", S}, {"REFUNDED", S}, {"PENDING", P}, {"DECLINED", F}, {"FAILED", F}},
          LookupBy::provider_id, "/v2/payments/captures/OP1", "$.amount.value"}},
        {"refund",
         {"POST", "/v2/payments/captures/TGT1/refund", IdentityMode::header, "PayPal-Request-Id",
          {{"COMPLETED", S}, {"PENDING", P}, {"FAILED", F}, {"CANCELLED", F}}, LookupBy::provider_id,
          "/v2/payments/refunds/OP1", "$.amount.value"}},
        {"cancel",
         {"POST", "/v2/payments/authorizations/TGT1/void", IdentityMode::header, "PayPal-Request-Id", {{"VOIDED", S}},
          LookupBy::order_id, "/v2/payments/authorizations/TGT1", ""}}}},
      // Square: complete and cancel take no key; a refund's is in its body.
      {"square",
       {{"capture",
         {"POST", "/v2/payments/PAY1/complete", IdentityMode::none, "", {{"COMPLETED", S}, {"CANCELED", F}, {"FAILED", F}},
          LookupBy::order_id, "/v2/payments/PAY1", ""}},
        {"refund",
         {"POST", "/v2/refunds", IdentityMode::body, "$.idempotency_key",
          {{"COMPLETED", S}, {"PENDING", P}, {"REJECTED", F}, {"FAILED", F}}, LookupBy::provider_id, "/v2/refunds/OP1",
          "$.amount_money.amount"}},
        {"cancel",
         {"POST", "/v2/payments/PAY1/cancel", IdentityMode::none, "", {{"CANCELED", S}, {"COMPLETED", F}},
          LookupBy::order_id, "/v2/payments/PAY1", ""}}}},
      // WeChat Pay: a refund's own number travels in its body; no capture.
      {"wechatpay_v3",
       {{"refund",
         {"POST", "/v3/refund/domestic/refunds", IdentityMode::body, "$.out_refund_no",
          {{"SUCCESS", S}, {"PROCESSING", P}, {"ABNORMAL", P}, {"CLOSED", F}}, LookupBy::order_id,
          "/v3/refund/domestic/refunds/KEY1", "$.amount.refund"}},
        {"cancel",
         {"POST", "/v3/pay/transactions/out-trade-no/ORD1/close", IdentityMode::none, "", {}, LookupBy::order_id,
          "/v3/pay/transactions/out-trade-no/ORD1?mchid=M1", ""}}}},
      // Alipay: gateway methods in the path, the refund's key inside biz_content.
      {"alipay",
       {{"refund",
         {"POST", "/gateway.do?method=alipay.trade.refund", IdentityMode::body, "$.biz_content.out_request_no",
          {{"Y", S}, {"N", P}}, LookupBy::order_id, "/gateway.do?method=alipay.trade.fastpay.refund.query",
          "$.biz_content.refund_amount"}},
        {"cancel",
         {"POST", "/gateway.do?method=alipay.trade.close", IdentityMode::none, "", {}, LookupBy::order_id,
          "/gateway.do?method=alipay.trade.query", ""}}}},
  };
  return table;
}

TEST(ProfileOperations, each_built_in_operation_goes_where_its_provider_documents_with_the_documented_key) {
  // Every built-in but generic describes its operations.
  for (const std::string& n : builtin_profile_names())
    EXPECT_EQ(documented().count(n), n == "generic" ? 0u : 1u) << n;
  for (const auto& [name, ops] : documented()) {
    const Profile p = builtin(name.c_str());
    EXPECT_EQ(p.operations.size(), ops.size()) << name;
    for (const auto& [kind, want] : ops) {
      const auto it = p.operations.find(kind);
      if (it == p.operations.end()) {
        ADD_FAILURE() << name << " has no " << kind;
        continue;
      }
      const ProfileOperation& op = it->second;
      const std::string where = name + "." + kind;
      EXPECT_EQ(op.method, want.method) << where;
      EXPECT_EQ(expand(op.path), want.endpoint) << where;
      EXPECT_EQ(op.identity.mode, want.carrier) << where;
      if (want.carrier != IdentityMode::none) {
        EXPECT_EQ(op.identity.name, want.key_name) << where;
      }
      EXPECT_EQ(op.status_map, want.answer) << where;
      EXPECT_EQ(op.lookup.by, want.lookup) << where;
      EXPECT_EQ(expand(op.lookup.path), want.lookup_endpoint) << where;
      EXPECT_EQ(op.amount.path, want.amount_path) << where;
    }
  }
}

// Money read by each operation's lookup and notifications.
TEST(ProfileOperations, each_built_in_operations_lookup_and_events_move_the_money_as_documented) {
  struct Case {
    const char* profile;
    const char* op;
    const char* lookup_answer;  // "" none
    const char* event_type;     // "" none
    MoneyState money;
  };
  const Case cases[] = {
      {"stripe", "capture", R"({"id":"pi_1","status":"succeeded"})", "", MoneyState::paid},
      {"stripe", "refund", R"({"id":"re_1","status":"pending","payment_intent":"pi_1"})", "", MoneyState::unknown},
      // Checkout.com's operations are read as their own actions, never as the payment's status.
      {"checkout_com", "capture", R"({"id":"act_1","type":"Capture","approved":true})", "", MoneyState::paid},
      {"checkout_com", "capture", R"({"id":"act_1","type":"Capture","approved":false})", "", MoneyState::unknown},
      {"checkout_com", "capture", R"({"id":"pay_1","status":"Partially Captured"})", "", MoneyState::unknown},
      {"checkout_com", "capture", "", "payment_captured", MoneyState::paid},
      {"checkout_com", "refund", "", "payment_refunded", MoneyState::refunded},
      {"checkout_com", "refund", "", "payment_refund_declined", MoneyState::unknown},
      // Its lookup reads the refund's own action: approved or not.
      {"checkout_com", "refund", R"({"id":"act_1","type":"Refund","approved":true})", "", MoneyState::refunded},
      {"checkout_com", "refund", R"({"id":"act_1","type":"Refund","approved":false})", "", MoneyState::unknown},
      {"checkout_com", "cancel", R"({"id":"act_1","type":"Void","approved":true})", "", MoneyState::failed},
      {"adyen", "capture", "", "CAPTURE:true", MoneyState::paid},
      {"adyen", "capture", "", "CAPTURE:false", MoneyState::unknown},
      {"adyen", "capture", "", "CAPTURE_FAILED:true", MoneyState::unknown},
      {"adyen", "refund", "", "REFUND:true", MoneyState::refunded},
      {"adyen", "refund", "", "REFUND_FAILED:true", MoneyState::unknown},
      {"adyen", "cancel", "", "CANCELLATION:true", MoneyState::failed},
      {"mollie", "refund", R"({"id":"re_1","paymentId":"tr_1","status":"refunded"})", "", MoneyState::refunded},
      {"mollie", "refund", R"({"id":"re_1","paymentId":"tr_1","status":"queued"})", "", MoneyState::unknown},
      {"mollie", "capture", R"({"id":"cpt_1","paymentId":"tr_1","status":"succeeded"})", "", MoneyState::paid},
      {"mollie", "cancel", R"({"id":"tr_1","status":"canceled"})", "", MoneyState::failed},
      {"paypal", "capture", R"({"id":"CAP1","status":"COMPLETED"})", "", MoneyState::paid},
      {"paypal", "refund", R"({"id":"REF1","status":"COMPLETED"})", "", MoneyState::refunded},
      {"paypal", "refund", R"({"id":"REF1","status":"CANCELLED"})", "", MoneyState::unknown},
      {"paypal", "cancel", R"({"id":"AUTH1","status":"VOIDED"})", "", MoneyState::failed},
      {"square", "capture", R"({"payment":{"id":"P1","status":"COMPLETED"}})", "", MoneyState::paid},
      {"square", "refund", R"({"refund":{"id":"R1","payment_id":"P1","status":"COMPLETED"}})", "", MoneyState::refunded},
      {"square", "refund", R"({"refund":{"id":"R1","payment_id":"P1","status":"REJECTED"}})", "", MoneyState::unknown},
      {"square", "cancel", R"({"payment":{"id":"P1","status":"CANCELED"}})", "", MoneyState::failed},
      {"wechatpay_v3", "refund", R"({"refund_id":"5030","out_refund_no":"K","status":"SUCCESS"})", "", MoneyState::refunded},
      {"wechatpay_v3", "refund", R"({"refund_id":"5030","out_refund_no":"K","status":"ABNORMAL"})", "", MoneyState::unknown},
      {"wechatpay_v3", "cancel", R"({"out_trade_no":"o","mchid":"m","trade_state":"CLOSED"})", "", MoneyState::failed},
      // A synchronous refund's query carries no refund_status: it moves nothing.
      {"alipay", "refund", R"({"alipay_trade_fastpay_refund_query_response":{"code":"10000","out_request_no":"K","refund_amount":"1.00"}})",
       "", MoneyState::unknown},
      {"alipay", "refund", R"({"alipay_trade_fastpay_refund_query_response":{"code":"10000","refund_status":"REFUND_SUCCESS"}})",
       "", MoneyState::refunded},
      {"alipay", "cancel", R"({"alipay_trade_query_response":{"code":"10000","trade_status":"TRADE_CLOSED"}})", "",
       MoneyState::failed},
  };
  for (const Case& c : cases) {
    const Profile p = builtin(c.profile);
    const auto it = p.operations.find(c.op);
    if (it == p.operations.end()) {
      ADD_FAILURE() << c.profile << " has no " << c.op;
      continue;
    }
    const ProfileMoney& m = it->second.money;
    const std::string where = std::string(c.profile) + "." + c.op + " " + c.lookup_answer + c.event_type;
    if (*c.lookup_answer) {
      JsonPtr doc(cJSON_Parse(c.lookup_answer));
      EXPECT_EQ(money_in_answer(m, m.lookup, doc.get()), c.money) << where;
    } else {
      EXPECT_EQ(money_in_event(m, c.event_type, nullptr), c.money) << where;
    }
  }
}

// Money: what each operation's success word says the payment reaches.
TEST(ProfileOperations, each_built_in_operations_success_word_moves_the_money_as_documented) {
  struct Case {
    const char* profile;
    const char* op;
    const char* answer;
    MoneyState money;
  };
  const Case cases[] = {
      {"stripe", "capture", R"({"id":"pi_1","status":"succeeded"})", MoneyState::paid},
      {"stripe", "capture", R"({"id":"pi_1","status":"requires_capture"})", MoneyState::unknown},
      {"stripe", "refund", R"({"id":"re_1","status":"succeeded"})", MoneyState::refunded},
      {"stripe", "refund", R"({"id":"re_1","status":"failed"})", MoneyState::unknown},
      {"stripe", "cancel", R"({"id":"pi_1","status":"canceled"})", MoneyState::failed},
      // An accepted (202) Checkout.com action says nothing of the money.
      {"checkout_com", "capture", R"({"action_id":"act_1"})", MoneyState::unknown},
      {"checkout_com", "refund", R"({"action_id":"act_1"})", MoneyState::unknown},
      // received: recorded, no money moved yet.
      {"adyen", "refund", R"({"pspReference":"R1","paymentPspReference":"P1","status":"received"})", MoneyState::unknown},
      {"alipay", "refund", R"({"alipay_trade_refund_response":{"code":"10000","fund_change":"Y","refund_fee":"1.00"}})",
       MoneyState::refunded},
      {"alipay", "refund", R"({"alipay_trade_refund_response":{"code":"10000","fund_change":"N"}})", MoneyState::unknown},
  };
  for (const Case& c : cases) {
    const Profile p = builtin(c.profile);
    const auto it = p.operations.find(c.op);
    if (it == p.operations.end()) {
      ADD_FAILURE() << c.profile << " has no " << c.op;
      continue;
    }
    JsonPtr doc(cJSON_Parse(c.answer));
    EXPECT_EQ(money_in_answer(it->second.money, it->second.money.create, doc.get()), c.money)
        << c.profile << "." << c.op << " " << c.answer;
  }
}

}  // namespace
}  // namespace payretry
