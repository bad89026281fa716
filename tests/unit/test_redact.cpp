// Redaction: nothing that reaches a log or an error holds a card number, a
// CVV/CVC, a token, a password or a credential.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "redact.hpp"

namespace payretry {
namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(Redact, LuhnCheck) {
  EXPECT_TRUE(luhn_valid("4242424242424242"));
  EXPECT_TRUE(luhn_valid("4111111111111111"));
  EXPECT_TRUE(luhn_valid("5555555555554444"));
  EXPECT_TRUE(luhn_valid("378282246310005"));  // Amex, 15 digits
  EXPECT_FALSE(luhn_valid("4242424242424241"));
  EXPECT_FALSE(luhn_valid(""));
  EXPECT_FALSE(luhn_valid("4242-4242"));
}

TEST(Redact, LuhnValidPanIsMasked) {
  const std::string out = redact("card 4242424242424242 declined");
  EXPECT_FALSE(has(out, "4242424242424242")) << out;
  EXPECT_TRUE(has(out, "card ")) << out;
  EXPECT_TRUE(has(out, " declined")) << out;
}

TEST(Redact, PanGroupedWithSpacesIsMasked) {
  const std::string out = redact("pay with 4242 4242 4242 4242 now");
  EXPECT_FALSE(has(out, "4242 4242")) << out;
  EXPECT_EQ(out.find("4242"), std::string::npos) << out;
  EXPECT_TRUE(has(out, " now")) << out;
}

TEST(Redact, PanGroupedWithDashesIsMasked) {
  const std::string out = redact("pan=x, number: 4111-1111-1111-1111.");
  EXPECT_EQ(out.find("1111"), std::string::npos) << out;
}

TEST(Redact, PanAtTheEdgesOfTheTextIsMasked) {
  EXPECT_EQ(redact("5555555555554444").find("5555"), std::string::npos);
  EXPECT_EQ(redact("[5555555555554444]").find("5555"), std::string::npos);
  EXPECT_EQ(redact("\"number\":\"4242424242424242\"").find("4242"), std::string::npos);
}

TEST(Redact, AmexAndNineteenDigitPansAreMasked) {
  EXPECT_EQ(redact("amex 378282246310005 ok").find("3782"), std::string::npos);
  EXPECT_EQ(redact("x 6011000990139424 y").find("6011"), std::string::npos);
}

TEST(Redact, PanFollowedByAnotherNumberIsStillMasked) {
  // A card number next to its CVC, its expiry or an amount: the digit run
  // with the following group fails Luhn, but the card number itself passes.
  for (const std::string& in : {std::string("card 4242424242424242 123 exp 12/25"),
                               std::string("4242 4242 4242 4242 12 25"),
                               std::string("charged 4111111111111111 100 EUR"),
                               std::string("pan 5555555555554444 2025"),
                               std::string("ref 4242424242424242-123")}) {
    const std::string out = redact(in);
    EXPECT_EQ(out.find("4242 4242 4242 4242"), std::string::npos) << in << " -> " << out;
    EXPECT_EQ(out.find("4242424242424242"), std::string::npos) << in << " -> " << out;
    EXPECT_EQ(out.find("4111111111111111"), std::string::npos) << in << " -> " << out;
    EXPECT_EQ(out.find("5555555555554444"), std::string::npos) << in << " -> " << out;
  }
}

TEST(Redact, TwoPansInARowAreBothMasked) {
  const std::string out = redact("old 4242424242424242 4111111111111111 new");
  EXPECT_EQ(out.find("4242"), std::string::npos) << out;
  EXPECT_EQ(out.find("4111"), std::string::npos) << out;
}

TEST(Redact, PanPrecededByAnotherNumberIsStillMasked) {
  const std::string out = redact("tel 555 4242424242424242");
  EXPECT_EQ(out.find("4242"), std::string::npos) << out;
  EXPECT_TRUE(has(out, "tel 555 ")) << out;
}

TEST(Redact, LuhnInvalidSixteenDigitNumberIsKept) {
  const std::string in = "order 4242424242424241 ok";
  EXPECT_EQ(redact(in), in);
}

TEST(Redact, ShortAndLongDigitRunsAreKept) {
  // 12 digits: too short for a card; 20+ digits: an id, not a card.
  EXPECT_EQ(redact("ref 424242424242 ok"), "ref 424242424242 ok");
  EXPECT_EQ(redact("ts 1700000000000 ms"), "ts 1700000000000 ms");  // 13 digits, Luhn-invalid
  EXPECT_EQ(redact("id 42424242424242424242424242 x"), "id 42424242424242424242424242 x");
}

TEST(Redact, UuidIsKept) {
  const std::string in = "Idempotency-Key 550e8400-e29b-41d4-a716-446655440000 reused";
  EXPECT_EQ(redact(in), in);
  const std::string in2 = "key=123e4567-e89b-12d3-a456-426614174000";
  EXPECT_EQ(redact(in2), in2);
}

TEST(Redact, JsonCvcIsMasked) {
  const std::string out = redact(R"({"amount":1000,"cvc":"123","currency":"eur"})");
  EXPECT_FALSE(has(out, "123")) << out;
  EXPECT_TRUE(has(out, R"("amount":1000)")) << out;
  EXPECT_TRUE(has(out, R"("currency":"eur")")) << out;
}

TEST(Redact, FormCvvIsMasked) {
  const std::string out = redact("amount=1000&cvv=123&currency=eur");
  EXPECT_FALSE(has(out, "123")) << out;
  EXPECT_TRUE(has(out, "amount=1000&")) << out;
  EXPECT_TRUE(has(out, "&currency=eur")) << out;
}

TEST(Redact, JsonCardNumberWithSpaceAfterColonIsMasked) {
  const std::string out = redact(R"({"card_number": "4000 0000 0000 0002", "name":"Jo"})");
  EXPECT_FALSE(has(out, "4000")) << out;
  EXPECT_FALSE(has(out, "0002")) << out;
  EXPECT_TRUE(has(out, R"("name":"Jo")")) << out;
  // Even a number that is not Luhn-valid is hidden when the field says what it is.
  const std::string out2 = redact(R"({"card_number": "1234 5678"})");
  EXPECT_FALSE(has(out2, "5678")) << out2;
}

TEST(Redact, AuthorizationBearerIsMasked) {
  const std::string out = redact("Authorization: Bearer sk_live_x\r\nAccept: application/json");
  EXPECT_FALSE(has(out, "sk_live_x")) << out;
  EXPECT_TRUE(has(out, "Accept: application/json")) << out;
  const std::string out2 = redact("authorization=Bearer sk_live_abcdef");
  EXPECT_FALSE(has(out2, "sk_live_abcdef")) << out2;
}

TEST(Redact, CookieAndApiKeyHeadersAreMasked) {
  const std::string out = redact("Cookie: session=abc123; theme=dark\nX-Api-Key: key_live_9999\nok");
  EXPECT_FALSE(has(out, "abc123")) << out;
  EXPECT_FALSE(has(out, "key_live_9999")) << out;
  EXPECT_TRUE(has(out, "\nok")) << out;
}

TEST(Redact, PasswordIsMasked) {
  const std::string out = redact(R"({"user":"ann","password":"hunter2 with \"quotes\""})");
  EXPECT_FALSE(has(out, "hunter2")) << out;
  EXPECT_FALSE(has(out, "quotes")) << out;
  EXPECT_TRUE(has(out, R"("user":"ann")")) << out;
}

TEST(Redact, TokenIsMasked) {
  const std::string out = redact("token=tok_visa_abcdef&amount=5");
  EXPECT_FALSE(has(out, "tok_visa_abcdef")) << out;
  EXPECT_TRUE(has(out, "&amount=5")) << out;
  const std::string out2 = redact(R"({"access_token":"eyJhbGciOi.payload.sig"})");
  EXPECT_FALSE(has(out2, "eyJhbGciOi")) << out2;
}

TEST(Redact, FieldNamesMatchCaseInsensitively) {
  const std::string out = redact(R"({"CVC":"987","Password":"Pa55"})");
  EXPECT_FALSE(has(out, "987")) << out;
  EXPECT_FALSE(has(out, "Pa55")) << out;
}

TEST(Redact, EscapedJsonInsideAStringIsMasked) {
  const std::string out = redact(R"({"raw":"{\"cvc\":\"123\",\"amount\":5}"})");
  EXPECT_FALSE(has(out, "123")) << out;
  EXPECT_TRUE(has(out, R"(\"amount\":5)")) << out;
  const std::string out2 = redact(R"(body={\"card_number\":\"4242424242424242\",\"password\":\"pw_1\"})");
  EXPECT_FALSE(has(out2, "4242")) << out2;
  EXPECT_FALSE(has(out2, "pw_1")) << out2;
}

TEST(Redact, GivenSecretsAreMaskedWherever) {
  const std::vector<std::string> secrets = {"sk_live_SUPERSECRET", "apikey-0987"};
  const std::string out = redact("failed with sk_live_SUPERSECRET and xapikey-0987y twice sk_live_SUPERSECRET", secrets);
  EXPECT_FALSE(has(out, "SUPERSECRET")) << out;
  EXPECT_FALSE(has(out, "apikey-0987")) << out;
  EXPECT_TRUE(has(out, "failed with ")) << out;
}

TEST(Redact, NormalTextIsUntouched) {
  for (const std::string& in :
       {std::string("payment failed: card declined by issuer (code 51), retry in 5 minutes"),
        std::string(R"({"id":"pi_3MtwBwLkdIwHu7ix28a3tqPa","status":"requires_action","amount":2000})"),
        std::string("attempt 3 of 5 after 1200 ms; http_503"), std::string(""),
        std::string("timestamp 2024-01-02T03:04:05Z, order ord_20240102_0001"),
        std::string("tokens left: 500; passwords are never logged")}) {
    EXPECT_EQ(redact(in), in);
  }
}

TEST(Redact, ShortSecretsDoNotShredTheText) {
  EXPECT_EQ(redact("a b c abc", {"abc"}), "a b c abc");
}

// Hole 16: a credential or card token a provider echoes bare (in a
// request-id header, an error) carries its kind in its prefix.
TEST(Redact, CredentialShapedTokensAreMaskedWhereverTheyAppear) {
  for (const char* secret : {"tok_live_abcdefghijklmnop", "sk_live_51Habcdefghijkl", "rk_test_0123456789ab",
                             "whsec_abcdefghijklmn", "pi_3Nq2abc_secret_Zx9yW8vU7t",
                             "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk"}) {
    const std::string out = redact(std::string("Request-Id: ") + secret + " (retry)");
    EXPECT_EQ(out.find(secret), std::string::npos) << out;
    EXPECT_NE(out.find("(retry)"), std::string::npos) << out;
  }
  // Short or embedded look-alikes are words, not credentials.
  EXPECT_EQ(redact("tok_short and stock_live_abcdefghijklmnop"), "tok_short and stock_live_abcdefghijklmnop");
}

// Hole 16: a security code written as prose survived before.
TEST(Redact, SecurityCodeWrittenAsProseIsMasked) {
  for (const char* text : {"card declined: cvc 737 wrong", "CVV 1234 mismatch", "csc  999", "security_code 123."}) {
    const std::string out = redact(text);
    for (const char* code : {"737", "1234", "999", "123"}) {
      if (std::string(text).find(code) != std::string::npos) {
        EXPECT_EQ(out.find(code), std::string::npos) << text << " -> " << out;
      }
    }
  }
  // Prose that merely names the field keeps its other numbers.
  EXPECT_EQ(redact("cvc 12345678 is not a code"), "cvc 12345678 is not a code");
  EXPECT_EQ(redact("the cvc check failed 3 times"), "the cvc check failed 3 times");
}

// Text is scanned for field values only when it holds a character one can
// follow ('=', ':', a blank, a quote, a backslash); these pin that boundary
// from both sides, one character each.
TEST(Redact, EveryCharacterThatCanLeadToAFieldValueStillGetsItScanned) {
  for (const char* text : {"cvc=737", "CVV:1234", "cvc 737", "cvc\t737", "cvc'737", "cvc\"737", "cvc\\\"737",
                           "password=hunter22", "Authorization:Bearer abcdefgh"}) {
    const std::string out = redact(text);
    for (const char* secret : {"737", "1234", "hunter22", "abcdefgh"}) {
      if (std::string(text).find(secret) != std::string::npos) {
        EXPECT_FALSE(has(out, secret)) << text << " -> " << out;
      }
    }
  }
  // None of them: a field name glued to digits is a word, as it always was.
  EXPECT_EQ(redact("cvc737"), "cvc737");
  EXPECT_EQ(redact("pi_3MtwBwLkdIwHu7ix28a3tqPa"), "pi_3MtwBwLkdIwHu7ix28a3tqPa");
  // The other scans do not depend on it: a card number, a token, a given secret.
  EXPECT_FALSE(has(redact("ref-4242424242424242"), "4242424242424242"));
  EXPECT_FALSE(has(redact("sk_live_abcdefghijkl"), "abcdefghijkl"));
  EXPECT_FALSE(has(redact("order_s3cr3tvalue_1", {"s3cr3tvalue"}), "s3cr3tvalue"));
}

// The copy-free form the log and the answer reader use: nothing back means
// redact() would have returned the text as it was; anything back is exactly
// what redact() returns. Over every shape of input above.
TEST(Redact, IfNeededAnswersNothingOnlyWhereRedactWouldChangeNothing) {
  const std::vector<std::string> secrets = {"sk_live_given_secret_1", "xy"};
  for (const std::string& text : std::vector<std::string>{
           "", "order-1", "key-H28897-12345", "pi_3MtwBwLkdIwHu7ix28a3tqPa", "succeeded", "4242424242424242",
           "card 4242 4242 4242 4242 exp 12/30", "cvc=737", "cvc 737", "{\"cvc\":\"123\"}", "Authorization: Bearer abc",
           "tok_1234567890abcdef", "uses sk_live_given_secret_1 here", "caf\xc3\xa9", "bad \xff byte", "a\0b",
           "550e8400-e29b-41d4-a716-446655440000", "timeout after 30000 ms", "xy"}) {
    const std::optional<std::string> changed = redact_if_needed(text, secrets);
    const std::string full = redact(text, secrets);
    if (changed) {
      EXPECT_EQ(*changed, full) << text;
    } else {
      EXPECT_EQ(full, text) << text;
    }
  }
  EXPECT_FALSE(redact_if_needed("key-H28897-12345"));
  EXPECT_FALSE(redact_if_needed(""));
  EXPECT_TRUE(redact_if_needed("4242424242424242"));
  EXPECT_TRUE(redact_if_needed("uses sk_live_given_secret_1 here", secrets));
  EXPECT_EQ(redact_if_needed("bad \xff byte"), std::optional<std::string>("bad \xef\xbf\xbd byte"));
}

}  // namespace
}  // namespace payretry

namespace payretry {
namespace {

// An id the provider numbered: "ORD" then 14 digits that pass Luhn. The run
// continues a word, so it is no card number, whichever digit it is read from.
TEST(Redact, ADigitRunThatContinuesAWordIsNeverACardNumberFromAnyOfItsDigits) {
  const std::string id = "ORD00000000000018";
  ASSERT_TRUE(luhn_valid("00000000000018"));
  ASSERT_TRUE(luhn_valid("0000000000018"));
  EXPECT_EQ(redact(id), id);
  EXPECT_EQ(redact("card 4242424242424242 and ORD00000000000018"),
            "card [REDACTED-PAN] and ORD00000000000018");
}

// A payment id is kept as the provider gave it: masked, it would name no
// payment, and the payment could never be looked up nor found by its
// notifications. A configured secret or a credential in it still goes.
TEST(Redact, AProviderIdIsKeptWholeEvenWhenItsDigitsPassLuhnButNotWhenItHoldsASecret) {
  EXPECT_EQ(redact_identifier_if_needed("PAY-4242424242424242"), std::nullopt);
  // Digits only may be a card number echoed as the id (hole 16): masked.
  EXPECT_NE(redact_identifier_if_needed("4242424242424242"), std::nullopt);
  EXPECT_EQ(redact_identifier_if_needed("pi_3MtwBwLkdIwHu7ix28a3tqPa"), std::nullopt);
  EXPECT_NE(redact_identifier_if_needed("id-with-sk_live_abcdefghijklmnop", {"sk_live_abcdefghijklmnop"}), std::nullopt);
  EXPECT_NE(redact_identifier_if_needed("4242 4242 4242 4242"), std::nullopt) << "not one token: read as text";
  EXPECT_NE(redact_identifier_if_needed("sk_live_51Habcdefghijklmnopqrstuvwxyz"), std::nullopt);
}

}  // namespace
}  // namespace payretry
