#include "admin.hpp"

#include <cjson/cJSON.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "http_conn.hpp"

namespace payretry_sim {

namespace {

struct CJsonDeleter {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};
using CJsonPtr = std::unique_ptr<cJSON, CJsonDeleter>;

void error_reply(Reply& out, int status, std::string_view code, std::string_view message) {
  out.status = status;
  out.body.assign(R"({"error":{"type":"invalid_request_error","code":)");
  append_json_string(out.body, code);
  out.body.append(R"(,"message":)");
  append_json_string(out.body, message);
  out.body.append("}}");
}

bool get_int(const cJSON* item, long long lo, long long hi, long long* out) {
  if (!cJSON_IsNumber(item)) return false;
  const double v = item->valuedouble;
  if (std::floor(v) != v || v < static_cast<double>(lo) || v > static_cast<double>(hi)) return false;
  *out = static_cast<long long>(v);
  return true;
}

bool get_u64(const cJSON* item, uint64_t* out) {
  if (cJSON_IsString(item) && item->valuestring && *item->valuestring) {
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(item->valuestring, &end, 10);
    if (errno || *end || item->valuestring[0] == '-') return false;
    *out = v;
    return true;
  }
  if (!cJSON_IsNumber(item)) return false;
  const double v = item->valuedouble;
  if (std::floor(v) != v || v < 0 || v >= 18446744073709551616.0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

void append_join(std::string& s, const std::string& name) {
  if (!s.empty()) s += ", ";
  s += name;
}

}  // namespace

std::string config_json(const Config& cfg) {
  std::string out = R"({"seed":)";
  append_int(out, static_cast<unsigned long long>(cfg.seed));
  out += R"(,"faults":{)";
  bool first = true;
  for (const auto& [name, p] : cfg.mix.to_map()) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, name);
    char buf[32];
    std::snprintf(buf, sizeof buf, ":%.17g", p);
    out += buf;
  }
  out += R"(},"slow_ms":)";
  append_int(out, cfg.slow_ms);
  out += R"(,"retry_after_s":)";
  append_int(out, cfg.retry_after_s);
  out += R"(,"refuse_ms":)";
  append_int(out, cfg.refuse_ms);
  out += R"(,"latency_ms":)";
  append_int(out, cfg.latency_ms);
  out += R"(,"key_header":)";
  append_json_string(out, cfg.effective_key_header());
  out += R"(,"auth":)";
  out += cfg.api_key.empty() ? "false" : "true";
  out += R"(,"keys":)";
  out += cfg.keys ? "true" : "false";
  out += R"(,"oauth2_client_id":)";  // never the secret
  append_json_string(out, cfg.oauth2.id);
  out += R"(,"oauth2_ttl_s":)";
  append_int(out, cfg.oauth2.ttl_s);
  out += R"(,"profile":)";
  append_json_string(out, cfg.profile->name);
  out += "}";
  return out;
}

bool apply_config_patch(const Config& base, std::string_view json, Config* out, std::string* error) {
  CJsonPtr root(cJSON_ParseWithLength(json.data(), json.size()));
  if (!root || !cJSON_IsObject(root.get())) {
    *error = "body must be a JSON object";
    return false;
  }
  Config cfg = base;
  std::string unknown;
  std::string bad;
  std::string fault_error;
  for (const cJSON* item = root->child; item; item = item->next) {
    const std::string name = item->string ? item->string : "";
    long long v = 0;
    if (name == "seed") {
      if (!get_u64(item, &cfg.seed)) append_join(bad, name);
    } else if (name == "slow_ms") {
      if (get_int(item, 0, 3600 * 1000, &v)) cfg.slow_ms = static_cast<int>(v);
      else append_join(bad, name);
    } else if (name == "retry_after_s") {
      if (get_int(item, 0, 86400, &v)) cfg.retry_after_s = static_cast<int>(v);
      else append_join(bad, name);
    } else if (name == "refuse_ms") {
      if (get_int(item, 0, 3600 * 1000, &v)) cfg.refuse_ms = static_cast<int>(v);
      else append_join(bad, name);
    } else if (name == "latency_ms") {
      if (get_int(item, 0, 3600 * 1000, &v)) cfg.latency_ms = static_cast<int>(v);
      else append_join(bad, name);
    } else if (name == "profile") {
      const Profile* p = cJSON_IsString(item) ? find_profile(item->valuestring) : nullptr;
      if (p) cfg.profile = p;
      else append_join(bad, name);
    } else if (name == "faults") {
      if (!cJSON_IsObject(item)) {
        append_join(bad, name);
        continue;
      }
      std::map<std::string, double> m;
      std::string bad_faults;
      for (const cJSON* f = item->child; f; f = f->next) {
        const std::string fname = f->string ? f->string : "";
        if (!cJSON_IsNumber(f)) append_join(bad_faults, "faults." + fname);
        else m[fname] = f->valuedouble;
      }
      if (!bad_faults.empty()) {
        append_join(bad, bad_faults);
        continue;
      }
      std::string why;
      auto mix = FaultMix::from_map(m, &why);
      if (!mix) append_join(fault_error, why);
      else cfg.mix = *mix;
    } else {
      append_join(unknown, name);
    }
  }
  std::string msg;
  if (!unknown.empty()) msg = "unknown config key(s): " + unknown;
  if (!bad.empty()) msg += (msg.empty() ? "" : "; ") + ("invalid value for: " + bad);
  if (!fault_error.empty()) msg += (msg.empty() ? "" : "; ") + fault_error;
  if (!msg.empty()) {
    *error = msg;
    return false;
  }
  *out = std::move(cfg);
  return true;
}

std::string truth_json(const State& state) {
  std::string out = R"({"charges":)";
  append_int(out, state.total_charges());
  out += R"(,"orders":)";
  append_int(out, state.orders());
  out += R"(,"duplicates":)";
  append_int(out, state.duplicate_orders());
  out += R"(,"by_order":{)";
  bool first = true;
  for (const auto& [order, n] : state.charges_by_order()) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, order);
    out.push_back(':');
    append_int(out, n);
  }
  out += R"(},"requests":)";
  append_int(out, state.requests());
  out += "}";
  return out;
}

std::string truth_json(const State& state, std::string_view order_id) {
  const std::vector<std::string> ids = state.charge_ids_for(order_id);
  std::string out = R"({"order_id":)";
  append_json_string(out, order_id);
  out += R"(,"charges":)";
  append_int(out, ids.size());
  out += R"(,"ids":[)";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out.push_back(',');
    append_json_string(out, ids[i]);
  }
  out += "]}";
  return out;
}

std::string stats_json(const State& state) {
  const Stats s = state.stats();
  std::string out = R"({"requests":)";
  append_int(out, s.requests);
  out += R"(,"faults":{)";
  for (std::size_t i = 0; i < kFaultCount; ++i) {
    if (i) out.push_back(',');
    append_json_string(out, fault_name(static_cast<Fault>(i)));
    out.push_back(':');
    append_int(out, s.faults[i]);
  }
  out += R"(},"replays":)";
  append_int(out, s.replays);
  out += R"(,"in_use_409":)";
  append_int(out, s.in_use_409);
  out += R"(,"key_reused_422":)";
  append_int(out, s.key_reused_422);
  out += R"(,"declines":)";
  append_int(out, s.declines);
  out += R"(,"charges":)";
  append_int(out, s.charges);
  out += R"(,"auth_refused":)";
  append_int(out, s.auth_refused);
  out += R"(,"oauth2_tokens_issued":)";
  append_int(out, s.oauth2_tokens_issued);
  out += R"(,"oauth2_tokens_refused":)";
  append_int(out, s.oauth2_tokens_refused);
  out += "}";
  return out;
}

void handle_admin(State& state, AdminHooks& hooks, std::string_view method, std::string_view path,
                  std::string_view query, std::string_view body, Reply& out) {
  out.clear();
  const bool get = method == "GET";
  const bool post = method == "POST";
  std::string_view what = path.substr(std::string_view("/__admin/").size());

  if (what == "health") {
    out.body.assign(R"({"ok":true})");
  } else if (what == "truth" && get) {
    std::string order;
    if (query_param(query, "order_id", &order)) out.body = truth_json(state, order);
    else out.body = truth_json(state);
  } else if (what == "stats" && get) {
    out.body = stats_json(state);
  } else if (what == "config" && get) {
    out.body = config_json(state.config());
  } else if (what == "config" && post) {
    Config cfg;
    std::string error;
    if (!apply_config_patch(state.config(), body, &cfg, &error)) {
      error_reply(out, 400, "parameter_invalid", error);
      return;
    }
    state.set_config(cfg);
    out.body = config_json(cfg);
  } else if (what == "reset" && post) {
    state.reset();
    out.body.assign(R"({"ok":true})");
  } else if (what == "script" && post) {
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    const cJSON* order = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "order_id") : nullptr;
    const cJSON* key = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "key") : nullptr;
    const cJSON* faults = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "faults") : nullptr;
    if (!root || !cJSON_IsObject(root.get()) || !cJSON_IsArray(faults) ||
        (cJSON_IsString(order) == cJSON_IsString(key))) {
      error_reply(out, 400, "parameter_invalid",
                  R"(expected {"order_id":"..."|"key":"...","faults":["name",...]})");
      return;
    }
    std::string unknown;
    std::vector<Fault> list;
    for (const cJSON* f = faults->child; f; f = f->next) {
      auto fault = cJSON_IsString(f) ? fault_from_name(f->valuestring) : std::nullopt;
      if (!fault) append_join(unknown, cJSON_IsString(f) ? f->valuestring : "(not a string)");
      else list.push_back(*fault);
    }
    if (!unknown.empty()) {
      error_reply(out, 400, "parameter_invalid", "unknown fault name(s): " + unknown);
      return;
    }
    const std::size_t count = list.size();
    if (cJSON_IsString(order)) state.script_order(order->valuestring, std::move(list));
    else state.script_key(key->valuestring, std::move(list));
    out.body.assign(R"({"ok":true,"queued":)");
    append_int(out.body, count);
    out.body.push_back('}');
  } else if (what == "outage" && post) {
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    long long ms = 0;
    if (!root || !get_int(cJSON_GetObjectItemCaseSensitive(root.get(), "ms"), 1, 3600 * 1000, &ms)) {
      error_reply(out, 400, "parameter_invalid", R"(expected {"ms":<positive integer>})");
      return;
    }
    hooks.outage(static_cast<int>(ms));
    out.body.assign(R"({"ok":true,"ms":)");
    append_int(out.body, ms);
    out.body.push_back('}');
  } else if (what == "oauth2/revoke" && post) {
    // Every PayPal token issued so far stops working: the client's next call gets 401 and it
    // must fetch a new token.
    state.tokens().revoke_all();
    out.body.assign(R"({"ok":true})");
  } else if (what == "truth" || what == "stats" || what == "config" || what == "reset" ||
             what == "script" || what == "outage" || what == "oauth2/revoke") {
    error_reply(out, 405, "method_not_allowed", "method not allowed");
  } else {
    error_reply(out, 404, "resource_missing", "no such admin endpoint");
  }
}

}  // namespace payretry_sim
