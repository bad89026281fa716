// The "webhook" block of a profile: the loader's checks, the built-in
// profiles' data, and the scheme names the loader knows held to the
// verifiers' table (src/auth/webhook_scheme.cpp, a layer above it).
#include <gtest/gtest.h>

#include <set>

#include "profile.hpp"
#include "profile_webhook.hpp"
#include "webhook_scheme.hpp"

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

std::string with_webhook(const std::string& block) {
  return R"({"name":"t","extends":"checkout_com","webhook":)" + block + "}";
}

TEST(ProfileWebhook, the_loader_knows_exactly_the_verifiers_schemes) {
  std::set<std::string> loader(webhook_scheme_names().begin(), webhook_scheme_names().end()), verifiers;
  for (const WebhookScheme& s : webhook_schemes()) verifiers.insert(s.name);
  EXPECT_EQ(loader, verifiers);
}

TEST(ProfileWebhook, every_builtin_but_generic_reads_its_providers_notifications) {
  for (const std::string& name : builtin_profile_names()) {
    const Profile p = *builtin_profile(name);
    if (name == "generic") {
      EXPECT_TRUE(p.webhook.scheme.empty()) << "an unknown provider's notifications are refused, never trusted";
      continue;
    }
    EXPECT_FALSE(p.webhook.scheme.empty()) << name;
    EXPECT_NE(find_webhook_scheme(p.webhook.scheme), nullptr) << name;
    EXPECT_FALSE(p.webhook.order_id.empty() && p.webhook.provider_id.empty()) << name;
  }
  EXPECT_EQ(builtin_profile("adyen")->webhook.ack_body, "[accepted]");
  EXPECT_EQ(builtin_profile("alipay")->webhook.ack_body, "success");
  EXPECT_TRUE(builtin_profile("mollie")->webhook.confirm_by_lookup) << "an id-only notification is a hint";
  EXPECT_EQ(builtin_profile("adyen")->webhook.events.at("AUTHORISATION:false"), StatusTarget::failed);
}

TEST(ProfileWebhook, a_profile_that_extends_one_keeps_what_it_does_not_name) {
  const Profile p = parse_profile(with_webhook(R"({"order_id": "$.data.metadata.order"})"));
  EXPECT_EQ(p.webhook.scheme, "checkout_com");
  EXPECT_EQ(p.webhook.order_id, WebhookField{"$.data.metadata.order"});
  EXPECT_EQ(p.webhook.provider_id, WebhookField{"$.data.id"});
  EXPECT_EQ(p.webhook.events.at("payment_declined"), StatusTarget::failed);
  // An events map replaces the inherited one whole, as status_map does.
  const Profile q = parse_profile(with_webhook(R"({"events": {"payment_approved": "SUCCEEDED"}})"));
  EXPECT_EQ(q.webhook.events.size(), 1u);
  // "none" clears the scheme: every notification is refused.
  EXPECT_TRUE(parse_profile(with_webhook(R"({"scheme": "none"})")).webhook.scheme.empty());
}

TEST(ProfileWebhook, fields_are_paths_templates_of_paths_or_alternatives) {
  const Profile p = parse_profile(
      with_webhook(R"({"event_id": "{$.id}:{$.type}", "provider_id": ["$.data.payment.id", "$.data.id"]})"));
  EXPECT_EQ(p.webhook.event_id, WebhookField{"{$.id}:{$.type}"});
  EXPECT_EQ(p.webhook.provider_id.size(), 2u);
  EXPECT_NE(error_of(with_webhook(R"({"event_id": "id"})")).find("neither a JSON path nor a template"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"event_id": "{id}:{$.type}"})")).find("{id} is not a JSON path"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"event_id": "{$.id"})")).find("without its }"), std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"order_id": 5})")).find("profile.webhook.order_id"), std::string::npos);
  // One place each: no wildcard, and text between a template's paths.
  EXPECT_NE(error_of(with_webhook(R"({"order_id": "$.data.metadata.*"})")).find("without a wildcard"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"event_id": "{$.id}{$.type}"})")).find("text between them"), std::string::npos);
}

TEST(ProfileWebhook, mistakes_are_named_with_their_field) {
  EXPECT_NE(error_of(with_webhook(R"({"scheme": "strype"})")).find("did you mean \"stripe\""), std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"schema": "stripe"})")).find("profile.webhook.schema: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"events": {"x": "PAID"}})")).find("profile.webhook.events.x"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"ack": {"body": "ok"}})")).find("needs its content type"), std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"ack": {"status": 500}})")).find("profile.webhook.ack.status"),
            std::string::npos);
  // A scheme that settles must name the event and the payment.
  EXPECT_NE(error_of(with_webhook(R"({"event_id": []})")).find("needs the event's id"), std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"order_id": [], "provider_id": []})")).find("must name the payment"),
            std::string::npos);
  // A hint is confirmed by a lookup that can take what it names:
  // Checkout.com looks up by order id.
  EXPECT_NE(error_of(with_webhook(R"({"confirm_by_lookup": true, "order_id": []})")).find("lookup's key"),
            std::string::npos);
  EXPECT_EQ(error_of(with_webhook(R"({"confirm_by_lookup": true})")), "");
  // A Connect account is read from the event and compared with the
  // payment's header: one without the other compares nothing.
  EXPECT_NE(error_of(R"({"name":"s","extends":"stripe","webhook":{"account_header": "X-Account", "account_path": []}})")
                .find("account_path and account_header go together"),
            std::string::npos);
  EXPECT_NE(error_of(with_webhook(R"({"account_header": "Bad Header"})")).find("must be a header name"),
            std::string::npos);
  // An id-only notification is never an event of its own.
  EXPECT_NE(error_of(R"({"name":"m","extends":"mollie","webhook":{"confirm_by_lookup": false, "event_id": "$.id"}})")
                .find("mollie_id_only carries no signature"),
            std::string::npos);
}

}  // namespace
}  // namespace payretry
