// Where a config or profile stops being JSON, said so a person can fix it,
// and never with a credential's value in the excerpt.
#include <cJSON.h>
#include <gtest/gtest.h>

#include <string>

#include "json_error.hpp"

namespace payretry {
namespace {

std::string where(const std::string& text) {
  cJSON* doc = cJSON_ParseWithLength(text.data(), text.size());
  EXPECT_EQ(doc, nullptr) << text;
  cJSON_Delete(doc);
  return json_error_where(text, cJSON_GetErrorPtr());
}

TEST(JsonError, NamesTheLineAndColumnAndShowsTheNamesAroundTheError) {
  const std::string w = where("{\"provider\": \"stripe\",\n  \"retry\": {max_attempts: 3}}");
  EXPECT_NE(w.find("at line 2, column "), std::string::npos) << w;
  EXPECT_NE(w.find("\"retry\": {m"), std::string::npos) << w;
  EXPECT_NE(w.find(">>"), std::string::npos) << w;
}

TEST(JsonError, NeverShowsAStringValueOnlyMemberNames) {
  for (const std::string& text : {std::string("{\"auth\": {\"bearer\": \"sk_live_supersecret\"}, oops}"),
                                 std::string("{\"auth\": {\"bearer\": \"sk_live_supersecret}}"),
                                 std::string("{\"auth\": {\"bearer\": \"sk_live_supersecret\" \"x\": 1}}")}) {
    const std::string w = where(text);
    EXPECT_EQ(w.find("supersecret"), std::string::npos) << w;
    EXPECT_NE(w.find("\"bearer\""), std::string::npos) << w;
  }
}

TEST(JsonError, AnErrorOutsideTheTextSaysNothingAndALongLineIsCut) {
  EXPECT_EQ(json_error_where("{}", nullptr), "");
  std::string long_line = "{\"a\": [";
  for (int i = 0; i < 200; ++i) long_line += "1, ";
  long_line += "x]}";
  const std::string w = where(long_line);
  EXPECT_LT(w.size(), 120u) << w;
  EXPECT_NE(w.find("..."), std::string::npos) << w;
}

}  // namespace
}  // namespace payretry
