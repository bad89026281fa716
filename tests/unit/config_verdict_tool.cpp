// config_verdict_tool FILE: what the library makes of each config in FILE (a JSON array of
// configs, each an object or a string holding a config's text), short of opening anything:
// parse_config, then bind_profile, the checks pay_client_new makes before it opens the
// ledger, the log and the transport. Prints a JSON array of {"ok": true} or
// {"ok": false, "error": "..."}, one per config, in order. config_schema_agreement.py holds
// these verdicts against docs/config.schema.json's.
#include <cJSON.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "client.hpp"
#include "config.hpp"

namespace {

struct JsonDelete {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using Json = std::unique_ptr<cJSON, JsonDelete>;

std::string text_of(const cJSON* item) {
  if (cJSON_IsString(item)) return item->valuestring;
  std::unique_ptr<char, void (*)(void*)> printed(cJSON_PrintUnformatted(item), cJSON_free);
  return printed ? printed.get() : "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: config_verdict_tool FILE (a JSON array of configs)\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json configs(cJSON_Parse(input.c_str()));
  if (!cJSON_IsArray(configs.get())) {
    std::fprintf(stderr, "config_verdict_tool: %s is not a JSON array\n", argv[1]);
    return 2;
  }
  Json verdicts(cJSON_CreateArray());
  for (const cJSON* item = configs->child; item; item = item->next) {
    cJSON* verdict = cJSON_CreateObject();
    try {
      payretry::Config config = payretry::parse_config(text_of(item));
      (void)payretry::bind_profile(config, false);
      cJSON_AddTrueToObject(verdict, "ok");
    } catch (const payretry::ConfigError& e) {
      cJSON_AddFalseToObject(verdict, "ok");
      cJSON_AddStringToObject(verdict, "error", e.what());
    } catch (const std::exception& e) {
      // Not a refusal: a config must never make the parser throw anything else.
      cJSON_AddFalseToObject(verdict, "ok");
      cJSON_AddStringToObject(verdict, "error", (std::string("not a ConfigError: ") + e.what()).c_str());
      cJSON_AddTrueToObject(verdict, "unexpected");
    }
    cJSON_AddItemToArray(verdicts.get(), verdict);
  }
  std::unique_ptr<char, void (*)(void*)> out(cJSON_Print(verdicts.get()), cJSON_free);
  std::puts(out.get());
  return 0;
}
