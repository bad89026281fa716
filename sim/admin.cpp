#include "admin.hpp"

#include <cjson/cJSON.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "http_conn.hpp"
#include "webhook_sender.hpp"

namespace payretry_sim {

namespace {

struct CJsonDeleter {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};
using CJsonPtr = std::unique_ptr<cJSON, CJsonDeleter>;

// cJSON answers NULL when it cannot allocate; the admin answers then fail as a std::string
// append would, with std::bad_alloc, instead of going out with members missing.
cJSON* made(cJSON* item) {
  if (!item) throw std::bad_alloc();
  return item;
}

CJsonPtr new_object() { return CJsonPtr(made(cJSON_CreateObject())); }

// Adds `item` (owned from here on) to `object` under `name`; returns it for filling in.
cJSON* add(cJSON* object, const char* name, cJSON* item) {
  made(item);
  if (!cJSON_AddItemToObject(object, name, item)) {
    cJSON_Delete(item);
    throw std::bad_alloc();
  }
  return item;
}

void add_number(cJSON* object, const char* name, double value) {
  add(object, name, cJSON_CreateNumber(value));
}

void add_string(cJSON* object, const char* name, std::string_view value) {
  add(object, name, cJSON_CreateString(std::string(value).c_str()));
}

void add_bool(cJSON* object, const char* name, bool value) {
  add(object, name, cJSON_CreateBool(value));
}

std::string print(const cJSON* doc) {
  char* text = cJSON_PrintUnformatted(doc);
  if (!text) throw std::bad_alloc();
  std::string out(text);
  cJSON_free(text);
  return out;
}

// {"ok":true}, with one number when there is one to report.
std::string ok_json(const char* name = nullptr, double value = 0) {
  CJsonPtr doc = new_object();
  add_bool(doc.get(), "ok", true);
  if (name) add_number(doc.get(), name, value);
  return print(doc.get());
}

void error_reply(Reply& out, int status, std::string_view code, std::string_view message) {
  CJsonPtr doc = new_object();
  cJSON* error = add(doc.get(), "error", cJSON_CreateObject());
  add_string(error, "type", "invalid_request_error");
  add_string(error, "code", code);
  add_string(error, "message", message);
  out.status = status;
  out.body = print(doc.get());
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
  CJsonPtr doc = new_object();
  // Raw digits: a seed is a uint64_t, and a JSON number made from a double would round the
  // ones above 2^53.
  add(doc.get(), "seed", cJSON_CreateRaw(std::to_string(cfg.seed).c_str()));
  cJSON* faults = add(doc.get(), "faults", cJSON_CreateObject());
  for (const auto& [name, p] : cfg.mix.to_map()) add_number(faults, name.c_str(), p);
  add_number(doc.get(), "slow_ms", cfg.slow_ms);
  add_number(doc.get(), "retry_after_s", cfg.retry_after_s);
  add_number(doc.get(), "refuse_ms", cfg.refuse_ms);
  add_number(doc.get(), "latency_ms", cfg.latency_ms);
  add_string(doc.get(), "key_header", cfg.effective_key_header());
  add_bool(doc.get(), "auth", !cfg.api_keys.empty());
  add_number(doc.get(), "accounts", cfg.api_keys.size() > 1 ? static_cast<double>(cfg.api_keys.size()) : 1);
  add_string(doc.get(), "scope_header", cfg.scope_header);
  add_bool(doc.get(), "keys", cfg.keys != nullptr);
  add_string(doc.get(), "oauth2_client_id", cfg.oauth2.id);  // never the secret
  add_number(doc.get(), "oauth2_ttl_s", cfg.oauth2.ttl_s);
  add_number(doc.get(), "oauth2_delay_ms", cfg.oauth2_delay_ms);
  cJSON* flows = add(doc.get(), "flows", cJSON_CreateObject());
  add_number(flows, "wait", cfg.flows.wait);
  add_number(flows, "hold", cfg.flows.hold);
  add_number(flows, "after_ms", cfg.flows.after_ms);
  add_number(flows, "pays", cfg.flows.pays);
  add_string(doc.get(), "profile", cfg.profile->name);
  return print(doc.get());
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
    } else if (name == "oauth2_delay_ms") {
      if (get_int(item, -1, 3600 * 1000, &v)) cfg.oauth2_delay_ms = static_cast<int>(v);
      else append_join(bad, name);
    } else if (name == "flows") {
      if (!cJSON_IsObject(item)) {
        append_join(bad, name);
        continue;
      }
      Flows f = cfg.flows;
      long long ms = 0;
      for (const cJSON* x = item->child; x; x = x->next) {
        const std::string fname = x->string ? x->string : "";
        const bool number = cJSON_IsNumber(x) && std::isfinite(x->valuedouble);
        const double v = number ? x->valuedouble : -1;
        if (fname == "wait" && v >= 0 && v <= 1) f.wait = v;
        else if (fname == "hold" && v >= 0 && v <= 1) f.hold = v;
        else if (fname == "pays" && v >= 0 && v <= 1) f.pays = v;
        else if (fname == "after_ms" && get_int(x, 0, 3600 * 1000, &ms)) f.after_ms = static_cast<int>(ms);
        else if (fname == "wait" || fname == "hold" || fname == "pays" || fname == "after_ms") append_join(bad, "flows." + fname);
        else append_join(unknown, "flows." + fname);
      }
      if (f.wait + f.hold > 1.0 + 1e-9) append_join(bad, "flows (wait + hold is more than 1)");
      cfg.flows = f;
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
  CJsonPtr doc = new_object();
  add_number(doc.get(), "charges", state.total_charges());
  add_number(doc.get(), "orders", state.orders());
  add_number(doc.get(), "duplicates", state.duplicate_orders());
  cJSON* by_order = add(doc.get(), "by_order", cJSON_CreateObject());
  for (const auto& [order, n] : state.charges_by_order()) add_number(by_order, order.c_str(), n);
  add_number(doc.get(), "requests", state.requests());
  // "charges" counts every payment the provider made, whatever became of its money; "money"
  // says where the money of each is: only "paid" moved it, "authorized" is held.
  cJSON* money = add(doc.get(), "money", cJSON_CreateObject());
  const std::array<long, kMoneyCount> counts = state.money_counts();
  for (std::size_t i = 0; i < kMoneyCount; ++i) {
    add_number(money, std::string(money_name(static_cast<Money>(i))).c_str(), static_cast<double>(counts[i]));
  }
  // Captures, refunds and cancels (operations.hpp): "money_movements" those that moved money,
  // "duplicate_movements" the operation keys that moved money more than once, which must stay
  // 0 as "duplicates" must.
  const State::OperationTotals ops = state.operation_totals();
  cJSON* o = add(doc.get(), "operations", cJSON_CreateObject());
  add_number(o, "operations", ops.operations);
  add_number(o, "captures", ops.captures);
  add_number(o, "refunds", ops.refunds);
  add_number(o, "cancels", ops.cancels);
  add_number(o, "money_movements", ops.money_movements);
  add_number(o, "duplicate_movements", ops.duplicate_movements);
  add_number(o, "captured", static_cast<double>(ops.captured));
  add_number(o, "refunded", static_cast<double>(ops.refunded));
  return print(doc.get());
}

namespace {

// {"id":..,"money_state":..}: one payment of the truth, in the running profile's id shape.
cJSON* payment_json(const IdShape& shape, const State::PaymentCopy& c) {
  CJsonPtr item = new_object();
  add_string(item.get(), "id", format_id(shape, c.number));
  add_string(item.get(), "money_state", money_name(c.money));
  return item.release();
}

void add_to_array(cJSON* list, cJSON* item) {
  if (!cJSON_AddItemToArray(list, item)) {
    cJSON_Delete(item);
    throw std::bad_alloc();
  }
}

// A payment's operations in the truth (only a payment that had any): what was captured and refunded, each operation the
// simulator executed (its kind, amount, key, provider id, Unix ms, and whether it moved money),
// and the money movements per operation key ("" for requests without one).
void add_operations(cJSON* item, const Profile& prof, const State::PaymentCopy& c, const PaymentOps& ops) {
  // A payment without operations keeps the two fields it always had.
  if (ops.ops.empty()) return;
  // Paid at once (or captured by POST /__admin/customer) without an operation: all captured.
  const int64_t captured = ops.captures == 0 && c.money == Money::paid ? c.amount : ops.captured;
  add_number(item, "amount", static_cast<double>(c.amount));
  add_number(item, "captured", static_cast<double>(captured));
  add_number(item, "refunded", static_cast<double>(ops.refunded));
  cJSON* list = add(item, "operations", cJSON_CreateArray());
  for (const OperationRecord& r : ops.ops) {
    CJsonPtr op = new_object();
    add_string(op.get(), "kind", op_kind_name(r.kind));
    add_number(op.get(), "amount", static_cast<double>(r.amount));
    add_string(op.get(), "key", r.key);
    add_string(op.get(), "id", operation_truth_id(prof, r, c.number));
    add_number(op.get(), "at_ms", static_cast<double>(r.at_ms));
    add_bool(op.get(), "moved", r.moved);
    add_to_array(list, op.release());
  }
  cJSON* moves = add(item, "movements_by_key", cJSON_CreateObject());
  for (const auto& [key, n] : ops.moves_by_key) add_number(moves, key.c_str(), n);
}

std::optional<CustomerAction> action_from_name(std::string_view name) {
  if (name == "pay") return CustomerAction::pay;
  if (name == "fail") return CustomerAction::fail;
  if (name == "capture") return CustomerAction::capture;
  return std::nullopt;
}

// POST /__admin/customer {"id":"<payment id>"|"order_id":"...","action":"pay"|"fail"|"capture"}:
// the customer acts on the payment (every payment of the order it applies to), as the provider's
// test mode lets a tester approve, authenticate or abandon; "capture" is the merchant's.
void customer_action(State& state, std::string_view body, Reply& out) {
  CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
  const cJSON* id = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "id") : nullptr;
  const cJSON* order = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "order_id") : nullptr;
  const cJSON* action = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "action") : nullptr;
  const auto act = cJSON_IsString(action) ? action_from_name(action->valuestring) : std::nullopt;
  if (!root || !cJSON_IsObject(root.get()) || cJSON_IsString(id) == cJSON_IsString(order) || !act) {
    error_reply(out, 400, "parameter_invalid",
                R"(expected {"id":"..."|"order_id":"...","action":"pay"|"fail"|"capture"})");
    return;
  }
  const IdShape shape = state.config().profile->payment_id;
  std::vector<uint64_t> numbers;
  if (cJSON_IsString(id)) {
    // Any scope's payment: the customer is not the merchant's account.
    uint64_t n = 0;
    if (parse_id(shape, id->valuestring, &n)) numbers.push_back(n);
  } else {
    for (const auto& c : state.payments_of_order(order->valuestring)) numbers.push_back(c.number);
  }
  CJsonPtr doc = new_object();
  cJSON* moved = add(doc.get(), "moved", cJSON_CreateArray());
  bool any_payment = false;
  for (uint64_t n : numbers) {
    State::PaymentCopy c;
    if (state.customer_acts(n, *act, &c)) {
      add_to_array(moved, payment_json(shape, c));
    }
    if (c.number) any_payment = true;
  }
  if (!any_payment) {
    error_reply(out, 404, "resource_missing", "no such payment");
    return;
  }
  if (cJSON_GetArraySize(moved) == 0) {
    error_reply(out, 409, "payment_not_movable",
                std::string("no payment there can ") + action->valuestring + " (paid and failed are final; only an authorized one is captured)");
    return;
  }
  add_bool(doc.get(), "ok", true);
  out.body = print(doc.get());
}

}  // namespace

std::string truth_json(const State& state, std::string_view order_id) {
  const std::vector<std::string> ids = state.charge_ids_for(order_id);
  CJsonPtr doc = new_object();
  add_string(doc.get(), "order_id", order_id);
  add_number(doc.get(), "charges", static_cast<double>(ids.size()));
  cJSON* list = add(doc.get(), "ids", cJSON_CreateArray());
  for (const std::string& id : ids) {
    cJSON* item = made(cJSON_CreateString(id.c_str()));
    if (!cJSON_AddItemToArray(list, item)) {
      cJSON_Delete(item);
      throw std::bad_alloc();
    }
  }
  const IdShape shape = state.config().profile->payment_id;
  cJSON* payments = add(doc.get(), "payments", cJSON_CreateArray());
  const Profile& prof = *state.config().profile;
  for (const auto& c : state.payments_of_order(order_id)) {
    cJSON* item = payment_json(shape, c);
    if (!cJSON_AddItemToArray(payments, item)) {
      cJSON_Delete(item);
      throw std::bad_alloc();
    }
    add_operations(item, prof, c, state.operations_of(c.number));
  }
  return print(doc.get());
}

std::string stats_json(const State& state) {
  const Stats s = state.stats();
  CJsonPtr doc = new_object();
  add_number(doc.get(), "requests", s.requests);
  cJSON* faults = add(doc.get(), "faults", cJSON_CreateObject());
  for (std::size_t i = 0; i < kFaultCount; ++i) {
    add_number(faults, std::string(fault_name(static_cast<Fault>(i))).c_str(), s.faults[i]);
  }
  add_number(doc.get(), "replays", s.replays);
  add_number(doc.get(), "repeat_creates", s.repeat_creates);
  add_number(doc.get(), "in_use_409", s.in_use_409);
  add_number(doc.get(), "key_reused_422", s.key_reused_422);
  add_number(doc.get(), "declines", s.declines);
  add_number(doc.get(), "charges", s.charges);
  add_number(doc.get(), "auth_refused", s.auth_refused);
  add_number(doc.get(), "signed_requests", s.signed_requests);
  add_number(doc.get(), "bad_signatures", s.bad_signatures);
  add_number(doc.get(), "oauth2_tokens_issued", s.oauth2_tokens_issued);
  add_number(doc.get(), "oauth2_tokens_refused", s.oauth2_tokens_refused);
  add_number(doc.get(), "oauth2_token_requests_held", s.oauth2_token_requests_held);
  return print(doc.get());
}

void handle_admin(State& state, AdminHooks& hooks, std::string_view method, std::string_view path,
                  std::string_view query, std::string_view body, Reply& out) {
  out.clear();
  const bool get = method == "GET";
  const bool post = method == "POST";
  std::string_view what = path.substr(std::string_view("/__admin/").size());

  if (what == "health") {
    out.body = ok_json();
  } else if (what == "truth" && get) {
    std::string order;
    if (!query_param(query, "order_id", &order)) {
      out.body = truth_json(state);
    } else if (order.find('\0') != std::string::npos) {
      // No order id holds one (creates refuse them), and a JSON string from cJSON cannot.
      error_reply(out, 400, "parameter_invalid", "order_id must not contain NUL");
    } else {
      out.body = truth_json(state, order);
    }
  } else if (what == "stats" && get) {
    out.body = stats_json(state);
  } else if (what == "config" && get) {
    out.body = config_json(state.config());
  } else if (what == "webhooks" && get) {
    out.body = state.webhooks() ? state.webhooks()->log_json() : R"({"url":"","notifications":[]})";
  } else if (what == "config" && post) {
    // "webhook_faults" (the --webhook-faults text) is the sender's, not the Config's: taken out
    // here, applied only when the rest of the patch is.
    std::string rest(body);
    std::optional<WebhookFaults> webhook_faults;
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    if (cJSON* wf = root && cJSON_IsObject(root.get()) ? cJSON_DetachItemFromObjectCaseSensitive(root.get(), "webhook_faults")
                                                       : nullptr) {
      CJsonPtr owned(wf);
      std::string error;
      WebhookFaults f = state.webhooks() ? state.webhooks()->faults() : WebhookFaults{};
      if (!state.webhooks()) error = "webhook_faults needs --webhook-url";
      else if (!cJSON_IsString(wf) || !parse_webhook_faults(wf->valuestring, &f, &error)) {
        if (error.empty()) error = "invalid value for: webhook_faults";
      }
      if (!error.empty()) {
        error_reply(out, 400, "parameter_invalid", error);
        return;
      }
      webhook_faults = f;
      rest = print(root.get());
    }
    Config cfg;
    std::string error;
    if (!apply_config_patch(state.config(), rest, &cfg, &error)) {
      error_reply(out, 400, "parameter_invalid", error);
      return;
    }
    state.set_config(cfg);
    if (webhook_faults) state.webhooks()->set_faults(*webhook_faults);
    out.body = config_json(cfg);
  } else if (what == "reset" && post) {
    state.reset();
    out.body = ok_json();
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
    out.body = ok_json("queued", static_cast<double>(count));
  } else if (what == "outage" && post) {
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    long long ms = 0;
    if (!root || !get_int(cJSON_GetObjectItemCaseSensitive(root.get(), "ms"), 1, 3600 * 1000, &ms)) {
      error_reply(out, 400, "parameter_invalid", R"(expected {"ms":<positive integer>})");
      return;
    }
    hooks.outage(static_cast<int>(ms));
    out.body = ok_json("ms", static_cast<double>(ms));
  } else if (what == "clock" && post) {
    // {"advance_s": N}: the operation key windows (Mollie's 1 hour, Stripe's 24 hours, ...) see
    // the clock N seconds later, so a test can outlive a window without waiting for it.
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    long long s = 0;
    if (!root || !get_int(cJSON_GetObjectItemCaseSensitive(root.get(), "advance_s"), 1, 400LL * 24 * 3600, &s)) {
      error_reply(out, 400, "parameter_invalid", R"(expected {"advance_s":<positive integer>})");
      return;
    }
    state.advance_clock(s);
    out.body = ok_json("now_ms", static_cast<double>(state.sim_now_ms()));
  } else if (what == "customer" && post) {
    customer_action(state, body, out);
  } else if (what == "oauth2/revoke" && post) {
    // Every PayPal token issued so far stops working: the client's next call gets 401 and it
    // must fetch a new token.
    state.tokens().revoke_all();
    out.body = ok_json();
  } else if (what == "truth" || what == "stats" || what == "config" || what == "reset" || what == "webhooks" ||
             what == "script" || what == "outage" || what == "oauth2/revoke" || what == "customer" || what == "clock") {
    error_reply(out, 405, "method_not_allowed", "method not allowed");
  } else {
    error_reply(out, 404, "resource_missing", "no such admin endpoint");
  }
}

}  // namespace payretry_sim
