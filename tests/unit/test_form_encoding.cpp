// Form-encoded request bodies: the encoder's nesting and escaping, and what a
// form profile (Stripe) sends on every attempt.
#include <cJSON.h>
#include <gtest/gtest.h>

#include <string>

#include "error.hpp"
#include "fakes.hpp"
#include "form_encoding.hpp"
#include "json_util.hpp"
#include "profile.hpp"

namespace payretry {
namespace {

using namespace payretry::test;

std::string encode(const std::string& json) {
  JsonPtr j(cJSON_Parse(json.c_str()));
  EXPECT_TRUE(j) << json;
  return form_encode_json(j.get());
}

TEST(FormEncoding, NestsObjectsAndArraysWithBracketsAsStripesSdksDo) {
  // stripe-python's _api_encode + urlencode: key[member], key[index], brackets escaped.
  EXPECT_EQ(encode(R"({"amount":2000,"currency":"usd","metadata":{"order_id":"o-1"},)"
                   R"("payment_method_types":["card","link"],"items":[{"id":"a","qty":2}]})"),
            "amount=2000&currency=usd&metadata%5Border_id%5D=o-1&payment_method_types%5B0%5D=card&"
            "payment_method_types%5B1%5D=link&items%5B0%5D%5Bid%5D=a&items%5B0%5D%5Bqty%5D=2");
}

TEST(FormEncoding, ScalarsAreWrittenTheWayTheProviderReadsThem) {
  EXPECT_EQ(encode(R"({"confirm":true,"off_session":false,"description":null})"),
            "confirm=true&off_session=false&description=");
  // Amounts in minor units stay exact integers, never 1e+15.
  EXPECT_EQ(encode(R"({"amount":1000000000000000,"neg":-5,"zero":0})"), "amount=1000000000000000&neg=-5&zero=0");
  EXPECT_EQ(encode(R"({"rate":0.5})"), "rate=0.5");
}

TEST(FormEncoding, EscapesEverythingButUnreservedCharactersAndWritesSpacesAsPlus) {
  EXPECT_EQ(encode(R"({"description":"Caf\u00e9 & bar = 100%","k~e.y-_":"a+b/c?"})"),
            "description=Caf%C3%A9+%26+bar+%3D+100%25&k~e.y-_=a%2Bb%2Fc%3F");
}

TEST(FormEncoding, EmptyObjectsAndArraysWriteNothing) {
  EXPECT_EQ(encode(R"({"metadata":{},"list":[],"amount":1})"), "amount=1");
  EXPECT_EQ(encode(R"({})"), "");
}

TEST(FormEncoding, KeepsTheDocumentsMemberOrderSoTheSameDocumentGivesTheSameBytes) {
  EXPECT_EQ(encode(R"({"b":1,"a":2})"), "b=1&a=2");
  EXPECT_EQ(encode(R"({"b":1,"a":2})"), encode(R"({ "b" : 1 , "a" : 2 })"));
}

TEST(FormEncoding, RecognisesFieldsWrittenByHand) {
  EXPECT_TRUE(looks_form_encoded("amount=2000&currency=usd"));
  EXPECT_TRUE(looks_form_encoded("metadata%5Border_id%5D=o-1"));
  EXPECT_TRUE(looks_form_encoded("metadata[order_id]=o-1&flag"));
  EXPECT_FALSE(looks_form_encoded(R"({"amount":2000})"));
  EXPECT_FALSE(looks_form_encoded("[1,2]"));
  EXPECT_FALSE(looks_form_encoded(R"("amount")"));
  EXPECT_FALSE(looks_form_encoded("amount=2000&&currency=usd"));  // an empty field
  EXPECT_FALSE(looks_form_encoded("=2000"));                      // no name
  EXPECT_FALSE(looks_form_encoded("amount=20 00"));               // a raw space
  EXPECT_FALSE(looks_form_encoded("amount=%2"));                  // a broken escape
  EXPECT_FALSE(looks_form_encoded("amount=2000&"));
  EXPECT_FALSE(looks_form_encoded(""));
}

// ---- what a form profile sends --------------------------------------------------

const std::string kStripeDoc = R"({"amount":2000,"currency":"usd","metadata":{"order_id":"order-1"}})";
const std::string kStripeForm = "amount=2000&currency=usd&metadata%5Border_id%5D=order-1";

TEST(FormEncoding, StripeSendsTheDocumentAsFormFieldsOnEveryAttempt) {
  Harness h("stripe");
  h.config.create_path.clear();
  h.transport.script = {timeout_after_write(), http(503), ok_200()};
  h.config.retry.max_attempts = 3;
  h.config.retry.deadline_ms = 120000;
  const PaymentResult r = h.submit("order-1", kStripeDoc, "k1");
  EXPECT_EQ(r.outcome, Outcome::succeeded);
  ASSERT_EQ(h.transport.sent.size(), 3u);
  for (const SentRequest& s : h.transport.sent) {
    EXPECT_EQ(s.url, "https://api.provider.test/v1/payment_intents");
    EXPECT_EQ(s.one("Content-Type"), "application/x-www-form-urlencoded");
    EXPECT_EQ(s.one("Idempotency-Key"), "k1");
    EXPECT_EQ(s.body, kStripeForm);
  }
}

TEST(FormEncoding, FormFieldsTheCallerWroteGoAsGiven) {
  Harness h("stripe");
  h.transport.script = {ok_200()};
  h.submit("order-1", "amount=2000&currency=usd&metadata[order_id]=order-1", "k1");
  ASSERT_EQ(h.transport.sent.size(), 1u);
  EXPECT_EQ(h.transport.sent[0].body, "amount=2000&currency=usd&metadata[order_id]=order-1");
  EXPECT_EQ(h.transport.sent[0].one("Content-Type"), "application/x-www-form-urlencoded");
}

TEST(FormEncoding, ABodyThatIsNeitherADocumentNorFormFieldsIsRefusedBeforeAnySend) {
  Harness h("stripe");
  h.transport.script = {ok_200()};
  std::string message;
  try {
    h.submit("order-1", "amount 2000", "k1");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::PAY_EINVALID);
    message = e.what();
  }
  EXPECT_NE(message.find("form"), std::string::npos) << message;
  EXPECT_TRUE(h.transport.sent.empty());
}

TEST(FormEncoding, JsonProfilesKeepTheCallersBytes) {
  for (const char* name : {"generic", "checkout_com", "paypal", "adyen", "mollie"}) {
    Harness h(name);
    h.transport.script = {ok_200()};
    h.submit("order-1", R"({"amount":2000,"currency":"usd","reference":"order-1"})", "k1");
    ASSERT_EQ(h.transport.sent.size(), 1u) << name;
    EXPECT_EQ(h.transport.sent[0].one("Content-Type"), "application/json") << name;
  }
}

TEST(FormEncoding, AProfileNamesItsEncoding) {
  const Profile p = parse_profile(R"({"name":"formy","extends":"generic","encoding":"form"})");
  EXPECT_EQ(p.encoding, Encoding::form);
  EXPECT_EQ(builtin_profile("stripe")->encoding, Encoding::form);
  EXPECT_EQ(builtin_profile("generic")->encoding, Encoding::json);
  try {
    parse_profile(R"({"name":"x","extends":"generic","encoding":"xml"})");
    ADD_FAILURE() << "accepted encoding xml";
  } catch (const ProfileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("profile.encoding: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace payretry
