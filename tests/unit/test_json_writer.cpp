// The result view and the attempt log are written by JsonWriter, straight
// into a string. Readers (bindings, log shippers, tests) were written against
// cJSON's output: the bytes must stay the same.
#include <cJSON.h>
#include <gtest/gtest.h>

#include <string>

#include "json_util.hpp"
#include "json_writer.hpp"
#include "result.hpp"

namespace payretry {
namespace {

std::string written(const std::string& value) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("v", value);
  w.end_object();
  return out;
}

std::string by_cjson(const std::string& value) {
  JsonPtr o(cJSON_CreateObject());
  json_add(o.get(), "v", value);
  return json_print(o.get());
}

TEST(JsonWriter, StringsAreEscapedAsCJsonEscapesThem) {
  for (const std::string& s : {std::string(""), std::string("plain"), std::string("quote\" back\\slash /"),
                               std::string("\b\f\n\r\t"), std::string("\x01\x1f\x7f"), std::string("caf\xc3\xa9 \xe2\x82\xac"),
                               std::string("cut\0here", 8)})
    EXPECT_EQ(written(s), by_cjson(s)) << s;
}

TEST(JsonWriter, NumbersBoolsNullsAndNestingMatchCJson) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field("i", 0);
  w.field("neg", -1);
  w.field("ms", static_cast<int64_t>(1764669600123));
  w.field("u", 7u);
  w.field_bool("t", true);
  w.field_null("n");
  w.field_or_null("e", "");
  w.begin_array("list");
  w.begin_object();
  w.field("a", 1);
  w.end_object();
  w.begin_object();
  w.end_object();
  w.end_array();
  w.begin_array("empty");
  w.end_array();
  w.field("last", "x");
  w.end_object();

  JsonPtr o(cJSON_CreateObject());
  json_add(o.get(), "i", 0);
  json_add(o.get(), "neg", -1);
  json_add(o.get(), "ms", static_cast<int64_t>(1764669600123));
  json_add(o.get(), "u", 7u);
  json_add_bool(o.get(), "t", true);
  cJSON_AddNullToObject(o.get(), "n");
  json_add_or_null(o.get(), "e", "");
  cJSON* list = cJSON_AddArrayToObject(o.get(), "list");
  cJSON* first = cJSON_CreateObject();
  cJSON_AddItemToArray(list, first);
  json_add(first, "a", 1);
  cJSON_AddItemToArray(list, cJSON_CreateObject());
  cJSON_AddArrayToObject(o.get(), "empty");
  json_add(o.get(), "last", "x");
  EXPECT_EQ(out, json_print(o.get()));
}

TEST(JsonWriter, ResultViewParsesAndKeepsEveryField) {
  PaymentResult r;
  r.outcome = Outcome::succeeded;
  r.delivery = Delivery::delivered;
  r.order_id = "o-1";
  r.idempotency_key = "k\"1";
  r.http_status = 200;
  r.provider_payment_id = "pi_1";
  r.elapsed_ms = 12;
  AttemptRecord a;
  a.number = 1;
  a.started_unix_ms = 1764669600123;
  a.elapsed_ms = 3;
  a.verdict = "retry";
  a.reason = "http_503";
  a.delay_ms = 250;
  a.delay_source = "backoff";
  r.attempts.push_back(a);
  a.number = 2;
  a.http_status = 200;
  a.delay_ms = -1;
  a.verdict = "success";
  r.attempts.push_back(a);
  const std::string text = r.to_json();
  EXPECT_EQ(text.rfind("{\"outcome\":\"SUCCEEDED\",\"delivery\":\"delivered\",\"order_id\":\"o-1\","
                       "\"idempotency_key\":\"k\\\"1\",\"http_status\":200,\"provider_payment_id\":\"pi_1\","
                       "\"provider_status\":null,\"money_state\":\"unknown\",\"error\":null,\"elapsed_ms\":12,",
                       0),
            0u)
      << text;
  JsonPtr j(cJSON_Parse(text.c_str()));
  ASSERT_TRUE(j) << text;
  const cJSON* list = cJSON_GetObjectItem(j.get(), "attempts");
  ASSERT_EQ(cJSON_GetArraySize(list), 2);
  EXPECT_EQ(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "delay_ms")->valueint, 250);
  EXPECT_TRUE(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "http_status")));
  EXPECT_EQ(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "delay_ms"), nullptr);
  EXPECT_EQ(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "started_unix_ms")->valuedouble, 1764669600123.0);
  EXPECT_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(j.get(), "recorded")));
}

}  // namespace
}  // namespace payretry
