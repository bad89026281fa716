#include "profile_webhook.hpp"

#include "json_path.hpp"
#include "profile_fields.hpp"
#include "spelling.hpp"

namespace payretry {

using namespace profile_fields;

const std::vector<std::string>& webhook_scheme_names() {
  static const std::vector<std::string> names = {"none",           "stripe",        "adyen",  "square",
                                                 "checkout_com",   "mollie_signed", "mollie_id_only",
                                                 "wechatpay_v3",   "alipay",        "paypal_offline"};
  return names;
}

namespace {

// One alternative: a JSON path, or a template whose every {...} is one.
// A field names one place: a wildcard would take whichever member comes
// first (an order id from any metadata key). Two paths of a template are
// kept apart by text of their own, so that their values cannot run together.
void check_field_text(const std::string& s, const std::string& path) {
  if (s.empty()) fail(path, "must not be empty");
  if (s.find('*') != std::string::npos) fail(path, quoted(s) + ": a webhook field names one place, without a wildcard");
  if (s[0] == '$') {
    if (!valid_json_path(s)) fail(path, quoted(s) + " is not a JSON path ($, .name, [n]; e.g. $.data.object.id)");
    return;
  }
  if (s.find("}{") != std::string::npos) fail(path, quoted(s) + ": two paths of a template need text between them");
  bool any = false;
  for (size_t at = s.find('{'); at != std::string::npos; at = s.find('{', at + 1)) {
    const size_t end = s.find('}', at);
    if (end == std::string::npos) fail(path, quoted(s) + ": a { without its }");
    const std::string inner = s.substr(at + 1, end - at - 1);
    if (inner.empty() || inner[0] != '$' || !valid_json_path(inner))
      fail(path, quoted(s) + ": {" + inner + "} is not a JSON path (a template reads {$.a}:{$.b})");
    any = true;
  }
  if (!any) fail(path, quoted(s) + " is neither a JSON path nor a template of paths ({$.a}:{$.b})");
  if (!visible_ascii(s)) fail(path, "must hold no spaces or control characters");
}

}  // namespace

// A string, or an array of alternatives; [] clears an inherited field.
WebhookField webhook_field_at(const cJSON* v, const std::string& path) {
  WebhookField out;
  if (cJSON_IsString(v)) {
    out.push_back(string_at(v, path));
    check_field_text(out.back(), path);
    return out;
  }
  if (!cJSON_IsArray(v)) fail(path, "must be a JSON path, a template of paths, or an array of them");
  int i = 0;
  for (const cJSON* c = v->child; c; c = c->next, ++i) {
    out.push_back(string_at(c, element(path, i)));
    check_field_text(out.back(), element(path, i));
  }
  return out;
}

std::map<std::string, StatusTarget> webhook_events_at(const cJSON* e, const std::string& ep) {
  object_at(e, ep);
  std::map<std::string, StatusTarget> out;
  for (const cJSON* c = e->child; c; c = c->next) {
    const std::string type = c->string ? c->string : "";
    const std::string tp = ep + "." + type;
    if (type.empty()) fail(tp, "an event type must not be empty");
    if (out.count(type)) fail(tp, "given twice");
    const std::optional<StatusTarget> target = parse_status_target(string_at(c, tp));
    if (!target) fail(tp, "must be \"SUCCEEDED\", \"FAILED\" or \"PENDING\"");
    out.emplace(type, *target);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> webhook_requires_at(const cJSON* r, const std::string& rp) {
  object_at(r, rp);
  std::vector<std::pair<std::string, std::string>> out;
  for (const cJSON* c = r->child; c; c = c->next) {
    const std::string at = c->string ? c->string : "";
    const std::string cp = rp + "." + at;
    if (at.empty() || at[0] != '$' || !valid_json_path(at) || at.find('*') != std::string::npos)
      fail(cp, quoted(at) + " is not a JSON path naming one place (e.g. $.merchantAccountCode)");
    const std::string want = string_at(c, cp);
    if (want.empty()) fail(cp, "must name a value");
    if (want.front() == '{' && want != "{merchant_id}" && want != "{account_id}" && want != "{app_id}")
      fail(cp, "a placeholder must be {merchant_id}, {account_id} or {app_id}");
    out.emplace_back(at, want);
  }
  return out;
}

void apply_webhook(ProfileWebhook& w, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path,
                {"scheme", "tolerance_ms", "event_id", "event_type", "order_id", "provider_id", "status", "events",
                 "confirm_by_lookup", "ack", "requires", "reference_path", "idempotency_key", "account_path",
                 "account_header", "created_path"});
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "scheme")) {
    const std::string sp = member(path, "scheme");
    const std::string name = string_at(s, sp);
    bool known = false;
    for (const std::string& n : webhook_scheme_names()) known = known || n == name;
    if (!known) {
      std::string list;
      for (const std::string& n : webhook_scheme_names()) list += (list.empty() ? "" : ", ") + n;
      fail(sp, quoted(name) + " is not a webhook scheme" + did_you_mean(name, webhook_scheme_names()) + " (known: " +
                   list + ")");
    }
    w.scheme = name == "none" ? "" : name;
  }
  if (const cJSON* t = cJSON_GetObjectItemCaseSensitive(v, "tolerance_ms"))
    w.tolerance_ms = int_at(t, member(path, "tolerance_ms"), 0, 24LL * 3600 * 1000);
  const std::pair<const char*, WebhookField*> fields[] = {{"event_id", &w.event_id},     {"event_type", &w.event_type},
                                                          {"order_id", &w.order_id},     {"provider_id", &w.provider_id},
                                                          {"status", &w.status},         {"idempotency_key", &w.idempotency_key},
                                                          {"account_path", &w.account_path},
                                                          {"created_path", &w.created_path}};
  for (const auto& [name, slot] : fields)
    if (const cJSON* f = cJSON_GetObjectItemCaseSensitive(v, name)) *slot = webhook_field_at(f, member(path, name));
  // The child's map is the whole answer, as with status_map.
  if (const cJSON* e = cJSON_GetObjectItemCaseSensitive(v, "events")) w.events = webhook_events_at(e, member(path, "events"));
  // The child's list is the whole answer, as with events.
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "requires"))
    w.requires_names = webhook_requires_at(r, member(path, "requires"));
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "reference_path")) {
    const std::string rp = member(path, "reference_path");
    w.reference_path = json_path_at(r, rp, true);
    if (w.reference_path.find('*') != std::string::npos) fail(rp, "must name one place, without a wildcard");
  }
  if (const cJSON* h = cJSON_GetObjectItemCaseSensitive(v, "account_header")) {
    const std::string hp = member(path, "account_header");
    w.account_header = string_at(h, hp);
    if (w.account_header.empty() || w.account_header.find_first_of(" :\r\n\t") != std::string::npos)
      fail(hp, "must be a header name");
  }
  if (const cJSON* c = cJSON_GetObjectItemCaseSensitive(v, "confirm_by_lookup"))
    w.confirm_by_lookup = bool_at(c, member(path, "confirm_by_lookup"));
  if (const cJSON* a = cJSON_GetObjectItemCaseSensitive(v, "ack")) {
    const std::string ap = member(path, "ack");
    object_at(a, ap);
    check_members(a, ap, {"status", "content_type", "body"});
    if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(a, "status"))
      w.ack_status = static_cast<int>(int_at(s, member(ap, "status"), 200, 299));
    if (const cJSON* t = cJSON_GetObjectItemCaseSensitive(a, "content_type"))
      w.ack_content_type = string_at(t, member(ap, "content_type"));
    if (const cJSON* b = cJSON_GetObjectItemCaseSensitive(a, "body")) w.ack_body = string_at(b, member(ap, "body"));
  }
}

void check_webhook(const ProfileWebhook& w, const Lookup& lookup, const std::string& path) {
  if (w.scheme.empty()) return;
  // An unsigned notification that names an id is a hint, never an event:
  // recorded, it would swallow the provider's later calls for the same id.
  if (w.scheme == "mollie_id_only" && !w.confirm_by_lookup)
    fail(member(path, "confirm_by_lookup"), "scheme mollie_id_only carries no signature: it must be true");
  if (w.event_id.empty() && !w.confirm_by_lookup)
    fail(member(path, "event_id"), "a scheme that settles needs the event's id (a path or a template of paths)");
  if (w.order_id.empty() && w.provider_id.empty())
    fail(member(path, "order_id"), "a webhook must name the payment: order_id, provider_id or both");
  if (w.confirm_by_lookup && (lookup.by != LookupBy::provider_id || w.provider_id.empty()) &&
      (lookup.by != LookupBy::order_id || w.order_id.empty()))
    fail(member(path, "confirm_by_lookup"),
         "a webhook confirmed by lookup needs the lookup's key: provider_id with a lookup by provider_id, or order_id "
         "with a lookup by order_id");
  if (!w.ack_body.empty() && w.ack_content_type.empty())
    fail(member(member(path, "ack"), "content_type"), "an ack with a body needs its content type");
  // Half of the pair would compare an account with nothing: every event of
  // a connected account would land on the platform's rows, or none would.
  if (w.account_path.empty() != w.account_header.empty())
    fail(member(path, w.account_path.empty() ? "account_path" : "account_header"),
         "account_path and account_header go together");
}

}  // namespace payretry
