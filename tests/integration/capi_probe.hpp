// What the integration tests of the C ABI share: a request hook and a log
// callback that record every attempt and line (and let a test act at a
// chosen moment), a small JSON reader, and the calls that hand back a
// result or a buffer, checked.
#pragma once
#include <cJSON.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "payretry/payretry.h"
#include "sim_fixture.hpp"

namespace payretry_test {

// ---- what the request hook and the log callback saw --------------------------------------------

struct Seen {
  std::string method, url, order_id, key, body;
  unsigned attempt = 0;
};

// A request hook and a log callback that record everything and let a test
// act at a chosen moment (block a run, take a lock), outside their lock.
struct Probe {
  std::mutex mu;
  std::vector<Seen> sent;
  std::vector<std::string> logs;
  std::function<void(const Seen&)> on_attempt;
  std::function<void(const std::string&)> on_log;

  static int hook(pay_headers*, const pay_attempt_info* info, void* self) {
    auto* p = static_cast<Probe*>(self);
    Seen s;
    s.method = info->method ? info->method : "";
    s.url = info->url ? info->url : "";
    s.order_id = info->order_id ? info->order_id : "";
    s.key = info->idempotency_key ? info->idempotency_key : "";
    s.body.assign(static_cast<const char*>(info->body), info->body_len);
    s.attempt = info->attempt;
    {
      std::lock_guard<std::mutex> l(p->mu);
      p->sent.push_back(s);
    }
    if (p->on_attempt) p->on_attempt(s);
    return 0;
  }
  static void log(int, const char* line, void* self) {
    auto* p = static_cast<Probe*>(self);
    {
      std::lock_guard<std::mutex> l(p->mu);
      p->logs.emplace_back(line);
    }
    if (p->on_log) p->on_log(line);
  }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> l(mu);
    return sent;
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> l(mu);
    return logs;
  }
  std::string all_logs() {
    std::string out;
    for (const auto& s : lines()) out += s + "\n";
    return out;
  }
};

// ---- JSON ---------------------------------------------------------------------------------------

struct Json {
  cJSON* j;
  explicit Json(const std::string& s) : j(cJSON_Parse(s.c_str())) {}
  ~Json() { cJSON_Delete(j); }
  Json(const Json&) = delete;
  Json& operator=(const Json&) = delete;
};

inline const cJSON* at(const cJSON* o, const char* name) {
  return o ? cJSON_GetObjectItemCaseSensitive(o, name) : nullptr;
}
inline std::string str(const cJSON* o, const char* name) {
  const cJSON* v = at(o, name);
  return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}
inline long num(const cJSON* o, const char* name) {
  const cJSON* v = at(o, name);
  return cJSON_IsNumber(v) ? static_cast<long>(v->valuedouble) : -1;
}

// ---- calls, checked ---------------------------------------------------------------------------

// A client with the probe as its request hook and log callback.
inline ClientPtr probed_client(const std::string& config, Probe& probe) {
  pay_client_options o;
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  o.request_hook = &Probe::hook;
  o.hook_payload = &probe;
  o.log_cb = &Probe::log;
  o.log_payload = &probe;
  pay_client* out = nullptr;
  EXPECT_EQ(pay_client_new(&out, config.c_str(), &o), PAY_OK) << pay_error_last()->message << "\n" << config;
  return ClientPtr(out);
}

inline ResultPtr query_ok(pay_client* c, const std::string& order) {
  pay_result* r = nullptr;
  EXPECT_EQ(pay_query(&r, c, order.c_str()), PAY_OK) << pay_error_last()->message;
  return ResultPtr(r);
}

// The text a call wrote into a buffer (checked to succeed), the buffer freed.
template <class Call>
std::string buffer_of(Call&& call) {
  pay_buf b = {nullptr, 0};
  EXPECT_EQ(call(&b), PAY_OK) << pay_error_last()->message;
  std::string s = b.ptr ? b.ptr : "";
  pay_buf_dispose(&b);
  return s;
}
inline std::string ledger_get(pay_client* c, const std::string& order) {
  return buffer_of([&](pay_buf* b) { return pay_ledger_get(b, c, order.c_str()); });
}
inline std::string client_stats(pay_client* c) {
  return buffer_of([&](pay_buf* b) { return pay_client_stats(b, c); });
}
// A reconcile pass whose re-sends get their bodies from `bodies`.
inline std::string reconcile_with(pay_client* c, pay_body_cb bodies) {
  pay_reconcile_options o = PAY_RECONCILE_OPTIONS_INIT;
  o.body_for = bodies;
  return buffer_of([&](pay_buf* b) { return pay_reconcile(b, c, &o); });
}

}  // namespace payretry_test
