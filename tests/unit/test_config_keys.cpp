// The config's key table (src/model/config_keys.cpp) against the parser, the
// reference in docs/config.md and docs/config.schema.json: one source, so that
// none of them can say what the others do not; and the safer config it brings:
// "did you mean" for a typo, secrets from *_env variables and *_file files.
#include <cJSON.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client.hpp"
#include "config.hpp"
#include "config_keys.hpp"
#include "config_reference.hpp"
#include "json_util.hpp"
#include "profile.hpp"
#include "spelling.hpp"

namespace payretry {
namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

std::string parent_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}
std::string leaf_of(const std::string& path) { return path.substr(path.rfind('.') + 1); }

// A folder of files for one test, removed with it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/payretry-config-keys-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const std::string& f : files_) {
      chmod(f.c_str(), 0600);
      unlink(f.c_str());
    }
    rmdir(path_.c_str());
  }
  std::string write(const std::string& name, const std::string& content) {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
    files_.push_back(p);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Sets an environment variable for one test's scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) { setenv(name_.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_.c_str()); }

 private:
  std::string name_;
};

// The variables the table's object examples name (auth.basic's password_env, ...).
struct ExampleEnv {
  ScopedEnv shop{"SHOP_PASSWORD", "hunter2-long"};
  ScopedEnv paypal{"PAYPAL_CLIENT_SECRET", "EL1-secret"};
  ScopedEnv wechat{"WECHATPAY_KEY", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----"};
  ScopedEnv wechat_platform{"WECHATPAY_PLATFORM_KEY", "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----"};
  ScopedEnv alipay{"ALIPAY_KEY", "-----BEGIN PRIVATE KEY-----\ny\n-----END PRIVATE KEY-----"};
  ScopedEnv alipay_pub{"ALIPAY_PUBLIC_KEY", "-----BEGIN PUBLIC KEY-----\ny\n-----END PUBLIC KEY-----"};
};

std::string parse_error(const std::string& json) {
  try {
    (void)parse_config(json);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The form of `k` to fill a required slot with: its example inline, or (a PEM
// key, never inline) a file holding some text.
void add_required(cJSON* obj, const ConfigKey& k, TempDir& dir) {
  const std::string name = leaf_of(std::string(k.path));
  if (cJSON_GetObjectItemCaseSensitive(obj, name.c_str()) ||
      cJSON_GetObjectItemCaseSensitive(obj, (name + "_env").c_str()) ||
      cJSON_GetObjectItemCaseSensitive(obj, (name + "_file").c_str()))
    return;
  if (k.has(kKeyNoInline)) {
    cJSON_AddStringToObject(obj, (name + "_file").c_str(), dir.write(name + ".pem", "-----BEGIN KEY-----\n").c_str());
  } else {
    cJSON_AddItemToObject(obj, name.c_str(), cJSON_Parse(std::string(k.example).c_str()));
  }
}

// A config with `member` (any of a key's forms) set to `value` in the object
// at `parent`, and around it whatever the table says must be there: base_url
// and ledger, and the required keys of every object on the way (auth.header
// and auth.value go together).
std::string config_with(const std::string& parent, const std::string& member, cJSON* value, TempDir& dir) {
  JsonPtr root(cJSON_CreateObject());
  cJSON_AddStringToObject(root.get(), "base_url", "https://api.example.com");
  cJSON* level = root.get();
  std::string path;
  for (size_t start = 0; !parent.empty() && start <= parent.size();) {
    const size_t dot = parent.find('.', start);
    const std::string name = parent.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    path += (path.empty() ? "" : ".") + name;
    cJSON* next = cJSON_GetObjectItemCaseSensitive(level, name.c_str());
    if (!cJSON_IsObject(next)) {
      cJSON_DeleteItemFromObjectCaseSensitive(level, name.c_str());
      next = cJSON_AddObjectToObject(level, name.c_str());
    }
    level = next;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  cJSON_DeleteItemFromObjectCaseSensitive(level, member.c_str());
  cJSON_AddItemToObject(level, member.c_str(), value);
  const std::string full = parent.empty() ? member : parent + "." + member;
  if (full == "auth.header") cJSON_AddStringToObject(level, "value", "v");
  if (full == "auth.value" || full == "auth.value_env" || full == "auth.value_file")
    cJSON_AddStringToObject(level, "header", "X-Api-Key");
  // Required keys, from the innermost level out (the top's ledger last: it
  // may be the object just made).
  for (std::string at = parent;; at = parent_of(at)) {
    cJSON* obj = root.get();
    for (size_t start = 0; !at.empty() && start <= at.size();) {
      const size_t dot = at.find('.', start);
      obj = cJSON_GetObjectItemCaseSensitive(obj, at.substr(start, dot - start).c_str());
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    for (const ConfigKey& k : config_keys())
      if (parent_of(std::string(k.path)) == at && k.has(kKeyRequired)) {
        if (k.path == "ledger" && !cJSON_GetObjectItemCaseSensitive(obj, "ledger"))
          cJSON_AddStringToObject(obj, "ledger", "memory:");
        else add_required(obj, k, dir);
      }
    if (at.empty()) break;
  }
  return json_print(root.get());
}

std::string source_file(const std::string& rel) {
  const auto text = config_reference::read(std::string(PAYRETRY_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(text) << "cannot read " << rel;
  return text.value_or("");
}

TEST(ConfigKeys, EveryExampleParsesAndEveryParentIsAnObjectBeforeItsChildren) {
  std::set<std::string> seen;
  for (const ConfigKey& k : config_keys()) {
    JsonPtr example(cJSON_Parse(std::string(k.example).c_str()));
    EXPECT_TRUE(example) << k.path << ": example " << k.example << " is not JSON";
    EXPECT_FALSE(k.doc.empty()) << k.path;
    const std::string parent = parent_of(std::string(k.path));
    if (!parent.empty()) {
      EXPECT_TRUE(seen.count(parent)) << k.path << " comes before its parent " << parent;
      const ConfigKeyType t = config_key(parent).type;
      EXPECT_TRUE(t == ConfigKeyType::object || t == ConfigKeyType::string_or_object) << parent;
    }
    EXPECT_TRUE(seen.insert(std::string(k.path)).second) << k.path << " is in the table twice";
  }
}

TEST(ConfigKeys, EveryKeyAtItsExampleIsAcceptedByTheParser) {
  ExampleEnv env;
  TempDir dir;
  for (const ConfigKey& k : config_keys()) {
    const std::string path(k.path);
    std::string member = leaf_of(path);
    cJSON* value = cJSON_Parse(std::string(k.example).c_str());
    if (k.has(kKeyNoInline)) {  // the example is a path: give a file that is there
      member += "_file";
      cJSON_Delete(value);
      value = cJSON_CreateString(dir.write(member, "-----BEGIN KEY-----\n").c_str());
    }
    const std::string json = config_with(parent_of(path), member, value, dir);
    EXPECT_EQ(parse_error(json), "") << path << " at its example: " << json;
  }
}

TEST(ConfigKeys, EveryIntegerRangeIsTheParsersAtBothEnds) {
  TempDir dir;
  int checked = 0;
  for (const ConfigKey& k : config_keys()) {
    if (k.type != ConfigKeyType::integer) continue;
    const std::string path(k.path);
    // Numbers as raw text: cJSON prints a double with 15 digits, which would
    // move 2^53 - 1 + 1 back inside the range.
    for (const int64_t outside : {k.min - 1, k.max + 1}) {
      const std::string err =
          parse_error(config_with(parent_of(path), leaf_of(path), cJSON_CreateRaw(std::to_string(outside).c_str()), dir));
      EXPECT_TRUE(has(err, path + ": must be between " + std::to_string(k.min) + " and " + std::to_string(k.max)))
          << path << " = " << outside << ": " << err;
    }
    for (const int64_t inside : {k.min, k.max}) {
      // An end may still clash with another key (retry.deadline_ms below
      // retry.min_attempt_ms); such a message names the other key, never the range.
      const std::string err =
          parse_error(config_with(parent_of(path), leaf_of(path), cJSON_CreateRaw(std::to_string(inside).c_str()), dir));
      EXPECT_FALSE(has(err, "must be between")) << path << " = " << inside << ": " << err;
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// How to read each key's parsed value, for the defaults the table states.
const std::map<std::string, std::function<std::string(const Config&)>>& readers() {
  static const std::map<std::string, std::function<std::string(const Config&)>> r = {
      {"retry.max_attempts", [](const Config& c) { return std::to_string(c.retry.max_attempts); }},
      {"retry.connect_timeout_ms", [](const Config& c) { return std::to_string(c.retry.connect_timeout_ms); }},
      {"retry.attempt_timeout_ms", [](const Config& c) { return std::to_string(c.retry.attempt_timeout_ms); }},
      {"retry.deadline_ms", [](const Config& c) { return std::to_string(c.retry.deadline_ms); }},
      {"retry.backoff_base_ms", [](const Config& c) { return std::to_string(c.retry.backoff_base_ms); }},
      {"retry.backoff_cap_ms", [](const Config& c) { return std::to_string(c.retry.backoff_cap_ms); }},
      {"retry.retry_after_max_ms", [](const Config& c) { return std::to_string(c.retry.retry_after_max_ms); }},
      {"retry.min_attempt_ms", [](const Config& c) { return std::to_string(c.retry.min_attempt_ms); }},
      {"budget.tokens", [](const Config& c) { return std::to_string(c.budget.tokens); }},
      {"budget.retry_cost", [](const Config& c) { return std::to_string(c.budget.retry_cost); }},
      {"budget.success_refund", [](const Config& c) { return std::to_string(c.budget.success_refund); }},
      {"tls.verify", [](const Config& c) { return std::string(c.tls_verify ? "true" : "false"); }},
      {"adopt_unscoped_rows", [](const Config& c) { return std::string(c.adopt_unscoped_rows ? "true" : "false"); }},
      {"log.level",
       [](const Config& c) {
         return std::string(c.log_level == 10 ? "\"debug\"" : c.log_level == 20 ? "\"info\"" : c.log_level == 30 ? "\"warn\"" : "\"error\"");
       }},
      {"max_body_bytes", [](const Config& c) { return std::to_string(c.max_body_bytes); }},
      {"ledger.lease_margin_ms", [](const Config& c) { return std::to_string(c.lease_margin_ms); }},
      {"ledger.timeout_ms", [](const Config& c) { return std::to_string(c.ledger_timeout_ms); }},
      {"in_progress_wait_ms", [](const Config& c) { return std::to_string(c.in_progress_wait_ms); }},
      {"not_found_grace_ms", [](const Config& c) { return std::to_string(c.not_found_grace_ms); }},
      {"max_connections", [](const Config& c) { return std::to_string(c.max_connections); }},
      {"max_opening_connections", [](const Config& c) { return std::to_string(c.max_opening_connections); }},
      {"engine_threads", [](const Config& c) { return std::to_string(c.engine_threads); }},
      {"provider", [](const Config& c) { return "\"" + c.provider + "\""; }},
  };
  return r;
}

TEST(ConfigKeys, EveryStatedDefaultIsWhatTheParserGivesAnAbsentKey) {
  const Config c = parse_config(R"({"base_url":"https://api.example.com","ledger":"memory:"})");
  for (const ConfigKey& k : config_keys()) {
    // A default a program can compare: a number, true/false or a quoted word
    // ("the profile's", "none" are prose, checked by their own tests).
    JsonPtr d(cJSON_Parse(std::string(k.default_text).c_str()));
    if (!d) continue;
    const auto reader = readers().find(std::string(k.path));
    ASSERT_NE(reader, readers().end()) << k.path << " states default " << k.default_text
                                       << ": add how to read it to readers()";
    EXPECT_EQ(reader->second(c), std::string(k.default_text)) << k.path;
  }
}

TEST(ConfigKeys, EveryLevelRefusesAKeyItDoesNotKnow) {
  TempDir dir;
  for (const ConfigKey& k : config_keys()) {
    if (k.type != ConfigKeyType::object && k.path != "ledger") continue;
    const std::string err = parse_error(config_with(std::string(k.path), "not_a_key", cJSON_CreateNumber(1), dir));
    EXPECT_TRUE(has(err, std::string(k.path) + ".not_a_key: unknown key")) << k.path << ": " << err;
  }
  EXPECT_TRUE(has(parse_error(config_with("", "not_a_key", cJSON_CreateNumber(1), dir)), "not_a_key: unknown key"));
}

// ---- docs/config.md and docs/config.schema.json ----

TEST(ConfigReference, DocsConfigMdGeneratedSectionIsTheTables) {
  const std::string doc = source_file("docs/config.md");
  const auto current = config_reference::with_generated_section(doc);
  ASSERT_TRUE(current) << "docs/config.md lost its GENERATED markers";
  EXPECT_TRUE(*current == doc) << "docs/config.md is stale: run build/tests/unit/config_reference_tool --write .";
}

TEST(ConfigReference, DocsConfigMdNamesEveryKeyWithTypeDefaultAndExample) {
  const std::string doc = source_file("docs/config.md");
  for (const ConfigKey& k : config_keys()) {
    const std::string leaf = leaf_of(std::string(k.path));
    EXPECT_TRUE(has(doc, k.has(kKeyNoInline) ? "`" + leaf + "_file`" : "`" + leaf + "`")) << k.path;
    EXPECT_TRUE(has(doc, "`" + std::string(k.example) + "`")) << k.path;
  }
}

TEST(ConfigReference, PythonTypedDictsAreGeneratedFromTheTable) {
  const std::string py = source_file("python/payretry/_config.py");
  EXPECT_TRUE(py == config_python_types())
      << "python/payretry/_config.py is stale: run build/tests/unit/config_reference_tool --write .";
  // Every form of every key is a field of its level's TypedDict.
  for (const ConfigKey& k : config_keys()) {
    const std::string leaf = leaf_of(std::string(k.path));
    const std::string form = k.has(kKeyNoInline) ? leaf + "_file" : leaf;
    EXPECT_TRUE(has(py, "        \"" + form + "\": ")) << k.path;
  }
}

// The schema and docs/config.md list the built-in profiles from the key table (the model
// layer cannot ask the profiles layer): it must name exactly the built-ins there are.
TEST(ConfigReference, TheProviderChoicesAreTheBuiltInProfiles) {
  std::set<std::string> choices;
  std::string_view rest = config_key("provider").choices;
  while (!rest.empty()) {
    const size_t bar = rest.find('|');
    choices.emplace(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  const std::vector<std::string> builtins = builtin_profile_names();
  EXPECT_EQ(choices, std::set<std::string>(builtins.begin(), builtins.end()));
}

TEST(ConfigReference, SchemaFileIsGeneratedFromTheTable) {
  EXPECT_TRUE(source_file("docs/config.schema.json") == config_json_schema())
      << "docs/config.schema.json is stale: run build/tests/unit/config_reference_tool --write .";
}

// Walks the schema file: at every level, its property names are the ones the
// parser accepts there, and each property at its first example (an
// environment variable or a file for *_env / *_file) parses.
void walk_schema(const cJSON* schema, const std::string& level, TempDir& dir, int& properties) {
  const cJSON* props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
  ASSERT_TRUE(cJSON_IsObject(props)) << level;
  std::set<std::string> in_schema;
  for (const cJSON* p = props->child; p; p = p->next) in_schema.insert(p->string);
  const std::vector<std::string> parser = config_names_at(level);
  EXPECT_EQ(in_schema, std::set<std::string>(parser.begin(), parser.end())) << "level '" << level << "'";
  EXPECT_TRUE(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties"))) << level;
  for (const cJSON* p = props->child; p; p = p->next) {
    const std::string name = p->string;
    const std::string full = level.empty() ? name : level + "." + name;
    cJSON* value = nullptr;
    std::unique_ptr<ScopedEnv> env;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "_env") == 0) {
      env = std::make_unique<ScopedEnv>("PAYRETRY_SCHEMA_TEST", "a-long-enough-value-" + name);
      value = cJSON_CreateString("PAYRETRY_SCHEMA_TEST");
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, "_file") == 0) {
      value = cJSON_CreateString(dir.write(name, "a-long-enough-value-" + name + "\n").c_str());
    } else {
      const cJSON* examples = cJSON_GetObjectItemCaseSensitive(p, "examples");
      ASSERT_TRUE(cJSON_IsArray(examples) && examples->child) << full << " has no example";
      value = cJSON_Duplicate(examples->child, true);
    }
    if (full == "ledger.url_env" || full == "ledger.url_file") {  // a URL the parser can read
      cJSON_Delete(value);
      env.reset();
      if (full == "ledger.url_env") {
        env = std::make_unique<ScopedEnv>("PAYRETRY_SCHEMA_TEST", "memory:");
        value = cJSON_CreateString("PAYRETRY_SCHEMA_TEST");
      } else {
        value = cJSON_CreateString(dir.write("ledger_url", "memory:\n").c_str());
      }
    }
    if (full == "webhook.api_v3_key_env" || full == "webhook.api_v3_key_file") {  // 32 bytes, as WeChat Pay's
      cJSON_Delete(value);
      env.reset();
      const std::string key = "0123456789abcdef0123456789abcdef";
      if (full == "webhook.api_v3_key_env") {
        env = std::make_unique<ScopedEnv>("PAYRETRY_SCHEMA_TEST", key);
        value = cJSON_CreateString("PAYRETRY_SCHEMA_TEST");
      } else {
        value = cJSON_CreateString(dir.write("api_v3_key", key + "\n").c_str());
      }
    }
    if (full == "proxy_env" || full == "proxy_file") {
      cJSON_Delete(value);
      env.reset();
      if (full == "proxy_env") {
        env = std::make_unique<ScopedEnv>("PAYRETRY_SCHEMA_TEST", "http://proxy.internal:3128");
        value = cJSON_CreateString("PAYRETRY_SCHEMA_TEST");
      } else {
        value = cJSON_CreateString(dir.write("proxy_url", "http://proxy.internal:3128\n").c_str());
      }
    }
    const std::string json = config_with(level, name, value, dir);
    EXPECT_EQ(parse_error(json), "") << full << ": " << json;
    ++properties;
    // Nested levels: an object, or the object branch of a oneOf.
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(p, "type");
    if (cJSON_IsString(type) && std::string(type->valuestring) == "object" &&
        cJSON_GetObjectItemCaseSensitive(p, "properties"))
      walk_schema(p, full, dir, properties);
    const cJSON* one_of = cJSON_GetObjectItemCaseSensitive(p, "oneOf");
    for (const cJSON* alt = one_of ? one_of->child : nullptr; alt; alt = alt->next)
      if (cJSON_GetObjectItemCaseSensitive(alt, "properties")) walk_schema(alt, full, dir, properties);
  }
}

TEST(ConfigReference, EverySchemaPropertyIsAcceptedAndEveryAcceptedKeyIsInTheSchema) {
  ExampleEnv examples;
  TempDir dir;
  JsonPtr schema(cJSON_Parse(source_file("docs/config.schema.json").c_str()));
  ASSERT_TRUE(schema) << "docs/config.schema.json is not JSON";
  int properties = 0;
  walk_schema(schema.get(), "", dir, properties);
  size_t forms = 0;
  for (const ConfigKey& k : config_keys())
    forms += (k.has(kKeyNoInline) ? 0 : 1) + (k.has(kKeyIndirect) ? 2 : 0);
  EXPECT_EQ(static_cast<size_t>(properties), forms) << "every form of every key, once";
}

// ---- did you mean ----

TEST(DidYouMean, NamesTheClosestKeyAtThatLevel) {
  const std::string base = R"({"base_url":"https://api.example.com","ledger":"memory:",)";
  EXPECT_TRUE(has(parse_error(base + R"("retry":{"max_attemps":3}})"),
                  R"(retry.max_attemps: unknown key; did you mean "max_attempts"?)"));
  EXPECT_TRUE(has(parse_error(base + R"("retyr":{}})"), R"(retyr: unknown key; did you mean "retry"?)"));
  EXPECT_TRUE(has(parse_error(base + R"("Create_Path":"/x"})"), R"(did you mean "create_path"?)"));
  EXPECT_TRUE(has(parse_error(base + R"("auth":{"bearer_evn":"X"}})"), R"(did you mean "bearer_env"?)"));
  EXPECT_TRUE(has(parse_error(base + R"("ledger_url":"memory:"})"), "ledger_url: unknown key"));
  // Only keys of that level: "timeout_ms" is a ledger key, not a retry one.
  const std::string err = parse_error(base + R"("retry":{"timeout_ms":5}})");
  EXPECT_TRUE(has(err, "retry.timeout_ms: unknown key")) << err;
  EXPECT_FALSE(has(err, "did you mean")) << "nothing at retry is that close: " << err;
  EXPECT_FALSE(has(parse_error(base + R"("zzz":1})"), "did you mean"));
}

// The provider's name is resolved by bind_profile (what pay_client_new and `payretry check`
// run): a near miss is named with the built-in meant, a far one only with the list.
TEST(DidYouMean, AProviderNameIsAnsweredWithTheBuiltInItMostLikelyMeant) {
  auto refusal = [](const std::string& provider) {
    Config c = parse_config(R"({"base_url":"https://api.example.com","ledger":"memory:","provider":")" + provider +
                            R"("})");
    try {
      (void)bind_profile(c, false);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const auto& [given, meant] : std::vector<std::pair<std::string, std::string>>{
           {"stripee", "stripe"}, {"Stripe", "stripe"}, {"paypall", "paypal"}, {"checkout.com", "checkout_com"},
           {"adyn", "adyen"}, {"wechatpay_v2", "wechatpay_v3"}}) {
    const std::string err = refusal(given);
    EXPECT_TRUE(has(err, "provider: unknown provider \"" + given + "\"; did you mean \"" + meant + "\"?")) << err;
    EXPECT_TRUE(has(err, "(built-in: ")) << err;
  }
  for (const std::string far : {"visa", "braintree", "wechat"}) {
    const std::string err = refusal(far);
    EXPECT_TRUE(has(err, "provider: unknown provider \"" + far + "\" (built-in: ")) << err;
    EXPECT_FALSE(has(err, "did you mean")) << err;
  }
  EXPECT_EQ(refusal("stripe"), "accepted");
}

TEST(DidYouMean, ProfilesSuggestTooAndStillListTheKnownKeys) {
  try {
    (void)parse_profile(R"({"extends":"stripe","create_paht":"/v1/x"})");
    FAIL() << "a misspelt profile key was accepted";
  } catch (const ProfileError& e) {
    EXPECT_TRUE(has(e.what(), R"(profile.create_paht: unknown key; did you mean "create_path"?)")) << e.what();
    EXPECT_TRUE(has(e.what(), "known here:")) << e.what();
  }
}

TEST(DidYouMean, DistanceCountsASwapAsOneEditAndIgnoresCase) {
  EXPECT_EQ(edit_distance("retyr", "retry"), 1u);
  EXPECT_EQ(edit_distance("BASE_URL", "base_url"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(closest_name("tls", {"url", "log"}), "") << "three letters, all different: no guess";
  EXPECT_EQ(closest_name("deadline", {"deadline_ms", "min_attempt_ms"}), "") << "3 edits is too far";
  EXPECT_EQ(closest_name("deadlin_ms", {"deadline_ms", "min_attempt_ms"}), "deadline_ms");
}

// ---- secrets from *_env and *_file ----

// Where each indirect key's value lands in the parsed config.
const std::map<std::string, std::function<std::string(const Config&)>>& secret_readers() {
  static const std::map<std::string, std::function<std::string(const Config&)>> r = {
      {"auth.bearer", [](const Config& c) { return c.auth_headers.at(0).second.substr(7); }},
      {"auth.value", [](const Config& c) { return c.auth_headers.at(0).second; }},
      {"auth.api_key", [](const Config& c) { return c.auth.api_key; }},
      {"auth.basic.password", [](const Config& c) { return c.auth.client_secret; }},
      {"auth.oauth2.client_secret", [](const Config& c) { return c.auth.client_secret; }},
      {"auth.wechatpay.private_key", [](const Config& c) { return c.auth.private_key_pem; }},
      {"auth.wechatpay.platform_public_key", [](const Config& c) { return c.auth.peer_public_key_pem; }},
      {"auth.alipay.private_key", [](const Config& c) { return c.auth.private_key_pem; }},
      {"auth.alipay.alipay_public_key", [](const Config& c) { return c.auth.peer_public_key_pem; }},
      {"ledger.url", [](const Config& c) { return c.ledger_url; }},
      {"ledger.secret", [](const Config& c) { return c.ledger_secret; }},
      {"proxy", [](const Config& c) { return c.proxy; }},
      {"webhook.secret", [](const Config& c) { return c.webhook.secrets.at(0); }},
      {"webhook.previous_secret", [](const Config& c) { return c.webhook.secrets.at(0); }},
      {"webhook.api_v3_key", [](const Config& c) { return c.webhook.api_v3_key; }},
      {"webhook.public_key", [](const Config& c) { return c.webhook.public_key_pem; }},
  };
  return r;
}

// A value each key accepts (a URL where a URL is wanted).
std::string secret_value(const std::string& path) {
  if (path == "ledger.url") return "postgresql://payretry:pw-0f9d8c7b@db.internal/payments";
  if (path == "proxy") return "http://user:pw-0f9d8c7b@proxy.internal:3128";
  if (path == "webhook.api_v3_key") return "s3cret-0f9d8c7b-value-32-bytes!!";  // WeChat Pay's: 32 bytes
  return "s3cret-0f9d8c7b-value";
}

class IndirectSecret : public ::testing::TestWithParam<std::string> {};

TEST_P(IndirectSecret, ComesFromAnEnvironmentVariable) {
  const std::string path = GetParam();
  TempDir dir;
  ScopedEnv env("PAYRETRY_TEST_SECRET", secret_value(path));
  const std::string json =
      config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString("PAYRETRY_TEST_SECRET"), dir);
  const Config c = parse_config(json);
  EXPECT_EQ(secret_readers().at(path)(c), secret_value(path));
}

TEST_P(IndirectSecret, ComesFromAFileWithOneTrailingNewlineDroppedButAPemAsItIs) {
  const std::string path = GetParam();
  TempDir dir;
  auto read_back = [&](const std::string& content) {
    const std::string file = dir.write("secret", content);
    return secret_readers().at(path)(
        parse_config(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(file.c_str()), dir)));
  };
  if (config_key(path).has(kKeyNoInline)) {
    const std::string pem = "-----BEGIN KEY-----\nabc\n-----END KEY-----\n";
    EXPECT_EQ(read_back(pem), pem) << "a PEM's final newline is part of it";
    return;
  }
  for (const std::string& ending : {std::string("\n"), std::string("\r\n"), std::string()})
    EXPECT_EQ(read_back(secret_value(path) + ending), secret_value(path)) << "ending " << ending.size() << " bytes";
  // Only one: a second newline stays, and a value that travels in a header or
  // a URL refuses it rather than sending it.
  const std::string err = [&] {
    const std::string file = dir.write("two", secret_value(path) + "\n\n");
    return parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(file.c_str()), dir));
  }();
  if (path == "ledger.secret") return;  // any bytes: a secret other than the ledger's is refused when it opens
  const std::string why = path == "ledger.url" ? ": contains a control character"
                          : path == "proxy"    ? ": contains a space, control or non-ASCII byte"
                                               : ": must be printable with no CR/LF";
  EXPECT_TRUE(has(err, path + why)) << err;
  EXPECT_FALSE(has(err, secret_value(path))) << err;
}

TEST_P(IndirectSecret, TwoFormsAreRefusedNamingTheKey) {
  const std::string path = GetParam();
  TempDir dir;
  ScopedEnv env("PAYRETRY_TEST_SECRET", secret_value(path));
  const std::string file = dir.write("secret", secret_value(path));
  std::string json = config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString("PAYRETRY_TEST_SECRET"), dir);
  // Add the _file form beside the _env one.
  JsonPtr doc(cJSON_Parse(json.c_str()));
  cJSON* obj = doc.get();
  for (std::string rest = parent_of(path); !rest.empty();) {
    const size_t dot = rest.find('.');
    obj = cJSON_GetObjectItemCaseSensitive(obj, rest.substr(0, dot).c_str());
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
  }
  cJSON_AddStringToObject(obj, (leaf_of(path) + "_file").c_str(), file.c_str());
  const std::string err = parse_error(json_print(doc.get()));
  EXPECT_TRUE(has(err, path + ": give only one of")) << err;
  EXPECT_FALSE(has(err, secret_value(path))) << err;
}

TEST_P(IndirectSecret, AMissingOrEmptyVariableIsRefusedNamingKeyAndVariable) {
  const std::string path = GetParam();
  TempDir dir;
  unsetenv("PAYRETRY_TEST_UNSET");
  std::string err = parse_error(
      config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString("PAYRETRY_TEST_UNSET"), dir));
  EXPECT_TRUE(has(err, path + "_env: the environment variable PAYRETRY_TEST_UNSET is not set")) << err;
  ScopedEnv empty("PAYRETRY_TEST_EMPTY", "");
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString("PAYRETRY_TEST_EMPTY"), dir));
  EXPECT_TRUE(has(err, path + "_env: the environment variable PAYRETRY_TEST_EMPTY is empty")) << err;
  // A secret pasted where the variable's name belongs is refused, not echoed.
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString(secret_value(path).c_str()), dir));
  EXPECT_TRUE(has(err, path + "_env: must name an environment variable")) << err;
  EXPECT_FALSE(has(err, secret_value(path))) << err;
}

TEST_P(IndirectSecret, AnUnreadableFileIsRefusedNamingKeyAndPathNeverTheContent) {
  const std::string path = GetParam();
  TempDir dir;
  const std::string missing = dir.path() + "/no-such-file";
  std::string err =
      parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(missing.c_str()), dir));
  EXPECT_TRUE(has(err, path + "_file: cannot read " + missing + ": No such file or directory")) << err;
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(dir.path().c_str()), dir));
  EXPECT_TRUE(has(err, path + "_file: cannot read " + dir.path() + ": it is a directory")) << err;
  const std::string empty = dir.write("empty", "\n");
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(empty.c_str()), dir));
  EXPECT_TRUE(has(err, path + "_file: " + empty + " is empty")) << err;
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString("/dev/zero"), dir));
  EXPECT_TRUE(has(err, path + "_file: cannot read /dev/zero: not a regular file")) << err;
  const std::string huge = dir.write("huge", std::string((1 << 20) + 1, 'x'));
  err = parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(huge.c_str()), dir));
  EXPECT_TRUE(has(err, path + "_file: " + huge + " is larger than 1048576 bytes")) << err;
  if (geteuid() != 0) {  // root reads anything
    const std::string locked = dir.write("locked", secret_value(path));
    chmod(locked.c_str(), 0);
    err = parse_error(config_with(parent_of(path), leaf_of(path) + "_file", cJSON_CreateString(locked.c_str()), dir));
    EXPECT_TRUE(has(err, path + "_file: cannot read " + locked + ": Permission denied")) << err;
    EXPECT_FALSE(has(err, secret_value(path))) << err;
  }
}

std::vector<std::string> indirect_keys() {
  std::vector<std::string> out;
  for (const ConfigKey& k : config_keys())
    if (k.has(kKeyIndirect)) out.emplace_back(k.path);
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryIndirectKey, IndirectSecret, ::testing::ValuesIn(indirect_keys()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (ch == '.') ch = '_';
                           return name;
                         });

TEST(IndirectSecrets, EveryIndirectKeyHasAReaderAndEverySecretReachesRedaction) {
  TempDir dir;
  for (const std::string& path : indirect_keys()) {
    ASSERT_TRUE(secret_readers().count(path)) << path << ": add where its value lands to secret_readers()";
    if (!config_key(path).has(kKeySecret)) continue;
    ScopedEnv env("PAYRETRY_TEST_SECRET", secret_value(path));
    const Config c = parse_config(
        config_with(parent_of(path), leaf_of(path) + "_env", cJSON_CreateString("PAYRETRY_TEST_SECRET"), dir));
    // The secret itself (for a URL: its password) is among what the log redacts.
    const std::vector<std::string> secrets = c.secrets();
    const std::string expected = path == "ledger.url" || path == "proxy" ? "pw-0f9d8c7b" : secret_value(path);
    EXPECT_NE(std::find(secrets.begin(), secrets.end(), expected), secrets.end()) << path;
  }
}

}  // namespace
}  // namespace payretry
