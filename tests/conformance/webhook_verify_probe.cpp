// The webhook verifiers (src/auth/webhook_scheme.hpp) for sdk/webhooks_sdk.py:
// one case a line on stdin, one verdict a line on stdout.
//   in:  {"scheme":"stripe","method":"POST","url":"...","headers":[["name","value"],...],
//         "body_b64":"...","secrets":{"keys":[...],"api_v3_key":"...","public_key_pem":"...",
//         "public_key_id":"...","webhook_id":"...","notification_url":"..."},
//         "now_unix_ms":1765000000000,"tolerance_ms":0}
//   out: {"kind":"verified"|"hint_only"|"refused","why":"...","body_b64":"...","items":["...",...]}
// A line that is not such a case answers {"error":"..."}; the probe never decides anything itself.
#include <cJSON.h>

#include <iostream>
#include <memory>
#include <string>

#include "base64.hpp"
#include "webhook_scheme.hpp"

namespace {

using payretry::WebhookVerdict;

struct JsonFree {
  void operator()(cJSON* j) const { cJSON_Delete(j); }
};
using JsonPtr = std::unique_ptr<cJSON, JsonFree>;

std::string text(const cJSON* object, const char* name) {
  const cJSON* m = cJSON_GetObjectItemCaseSensitive(object, name);
  return cJSON_IsString(m) ? m->valuestring : "";
}

std::string print(cJSON* j) {
  std::unique_ptr<char, void (*)(void*)> s(cJSON_PrintUnformatted(j), cJSON_free);
  return s ? s.get() : "{\"error\":\"out of memory\"}";
}

std::string error(const std::string& why) {
  JsonPtr out(cJSON_CreateObject());
  cJSON_AddStringToObject(out.get(), "error", why.c_str());
  return print(out.get());
}

std::string run(const std::string& line) {
  JsonPtr in(cJSON_Parse(line.c_str()));
  if (!cJSON_IsObject(in.get())) return error("not a JSON object");
  payretry::WebhookRequest request;
  request.method = text(in.get(), "method");
  request.url = text(in.get(), "url");
  if (!payretry::base64_decode(text(in.get(), "body_b64"), request.body) && !text(in.get(), "body_b64").empty())
    return error("body_b64 is not base64");
  const cJSON* headers = cJSON_GetObjectItemCaseSensitive(in.get(), "headers");
  for (const cJSON* h = cJSON_IsArray(headers) ? headers->child : nullptr; h; h = h->next) {
    const cJSON* name = cJSON_GetArrayItem(h, 0);
    const cJSON* value = cJSON_GetArrayItem(h, 1);
    if (!cJSON_IsString(name) || !cJSON_IsString(value)) return error("a header is not [name, value]");
    request.headers.emplace_back(name->valuestring, value->valuestring);
  }
  payretry::WebhookSecrets secrets;
  const cJSON* s = cJSON_GetObjectItemCaseSensitive(in.get(), "secrets");
  const cJSON* keys = cJSON_GetObjectItemCaseSensitive(s, "keys");
  for (const cJSON* k = cJSON_IsArray(keys) ? keys->child : nullptr; k; k = k->next)
    if (cJSON_IsString(k)) secrets.keys.emplace_back(k->valuestring);
  secrets.api_v3_key = text(s, "api_v3_key");
  secrets.public_key_pem = text(s, "public_key_pem");
  secrets.public_key_id = text(s, "public_key_id");
  secrets.webhook_id = text(s, "webhook_id");
  secrets.notification_url = text(s, "notification_url");
  const cJSON* now = cJSON_GetObjectItemCaseSensitive(in.get(), "now_unix_ms");
  const cJSON* tolerance = cJSON_GetObjectItemCaseSensitive(in.get(), "tolerance_ms");
  if (!cJSON_IsNumber(now)) return error("now_unix_ms is not a number");

  const WebhookVerdict v =
      payretry::verify_webhook(text(in.get(), "scheme"), request, secrets, static_cast<int64_t>(now->valuedouble),
                               cJSON_IsNumber(tolerance) ? static_cast<int64_t>(tolerance->valuedouble) : 0);
  JsonPtr out(cJSON_CreateObject());
  cJSON_AddStringToObject(out.get(), "kind",
                          v.kind == WebhookVerdict::verified    ? "verified"
                          : v.kind == WebhookVerdict::hint_only ? "hint_only"
                                                                : "refused");
  cJSON_AddStringToObject(out.get(), "why", v.why.c_str());
  cJSON_AddStringToObject(out.get(), "body_b64", payretry::base64_encode(v.body).c_str());
  cJSON* items = cJSON_AddArrayToObject(out.get(), "items");
  for (const std::string& item : v.items) cJSON_AddItemToArray(items, cJSON_CreateString(item.c_str()));
  return print(out.get());
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::cout << run(line) << '\n' << std::flush;
  }
  return 0;
}
