#include "profile_operations.hpp"

#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "amount_reading.hpp"
#include "json_path.hpp"
#include "profile_fields.hpp"
#include "profile_money.hpp"
#include "profile_parts.hpp"
#include "profile_webhook.hpp"

namespace payretry {

using namespace profile_fields;
using namespace profile_parts;

const char* amount_format_name(AmountFormat f) {
  switch (f) {
    case AmountFormat::minor: return "minor";
    case AmountFormat::decimal: return "decimal";
  }
  return "?";
}

const std::vector<std::string>& operation_names() {
  static const std::vector<std::string> names = {"capture", "refund", "cancel"};
  return names;
}

std::vector<MoneyState> operation_default_parent_states(const std::string& name) {
  if (name == "capture") return {MoneyState::authorized};
  if (name == "refund") return {MoneyState::paid, MoneyState::partly_refunded};
  if (name == "cancel") return {MoneyState::awaiting_customer, MoneyState::pending, MoneyState::authorized};
  return {};
}

namespace {

// What an operation's path, body and target may name. {key} is the
// operation's own key; {provider_id} and {order_id} are its payment's.
const std::vector<std::string>& operation_placeholders() {
  static const std::vector<std::string> names = {"{provider_id}", "{order_id}", "{key}", "{target_id}",
                                                 "{merchant_id}"};
  return names;
}

// Its lookup may also name the id the operation's own answer gave.
const std::vector<std::string>& operation_lookup_placeholders() {
  static const std::vector<std::string> names = {"{provider_id}", "{order_id}", "{key}", "{target_id}",
                                                 "{merchant_id}", "{operation_id}"};
  return names;
}

bool names(const std::string& text, const char* placeholder) { return text.find(placeholder) != std::string::npos; }

// A place the library writes into a body: members only ("$.a.b"), so that
// it can make the objects on the way.
bool writable_path(const std::string& p) {
  return concrete_json_path(p) && p.find('[') == std::string::npos;
}

std::vector<std::pair<std::string, std::string>> body_at(const cJSON* v, const std::string& path) {
  object_at(v, path);
  std::vector<std::pair<std::string, std::string>> out;
  for (const cJSON* c = v->child; c; c = c->next) {
    const std::string jp = c->string ? c->string : "";
    const std::string ep = path + "." + jp;
    if (!writable_path(jp)) fail(ep, "must be a JSON path of members, written by the library, e.g. $.payment_intent");
    for (const auto& [seen, _] : out)
      if (seen == jp) fail(ep, "given twice");
    const std::string value = string_at(c, ep);
    if (value.empty() || !visible_ascii(value))
      fail(ep, "must be a template of placeholders and visible ASCII, e.g. \"{provider_id}\"");
    check_placeholders(value, ep, operation_placeholders());
    out.emplace_back(jp, value);
  }
  if (out.empty()) fail(path, "must name at least one field (leave it out for none)");
  return out;
}

std::map<std::string, StatusTarget> status_map_at(const cJSON* v, const std::string& path) {
  object_at(v, path);
  std::map<std::string, StatusTarget> out;
  for (const cJSON* c = v->child; c; c = c->next) {
    const std::string word = c->string ? c->string : "";
    const std::string ep = path + "." + word;
    if (word.empty()) fail(ep, "a provider status must not be empty");
    if (out.count(word)) fail(ep, "given twice");
    const std::optional<StatusTarget> target = parse_status_target(string_at(c, ep));
    if (!target) fail(ep, "must be \"SUCCEEDED\", \"FAILED\" or \"PENDING\"");
    out.emplace(word, *target);
  }
  return out;
}

void apply_response(ProfileOperation& op, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"status_path", "id_path", "status_map"});
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "status_path"))
    op.status_path = json_path_at(s, member(path, "status_path"), true);
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "id_path"))
    op.id_path = json_path_at(s, member(path, "id_path"), true);
  // The child's map is the whole answer, as lookup.status_map's is.
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "status_map"))
    op.status_map = status_map_at(m, member(path, "status_map"));
}

std::vector<MoneyState> parent_states_at(const cJSON* v, const std::string& path) {
  if (!cJSON_IsArray(v)) fail(path, "must be an array of money states, e.g. [\"paid\", \"partly_refunded\"]");
  std::vector<MoneyState> out;
  int i = 0;
  for (const cJSON* c = v->child; c; c = c->next, ++i) {
    const std::string ep = element(path, i);
    const std::string s = string_at(c, ep);
    const std::optional<MoneyState> m = parse_money_state(s);
    // unknown is where a payment's money has not been read: no operation
    // can be judged safe on it.
    if (!m || *m == MoneyState::unknown)
      fail(ep, quoted(s) + " is not a money state (awaiting_customer, pending, authorized, paid, partly_refunded, "
                           "refunded or failed)");
    for (MoneyState seen : out)
      if (seen == *m) fail(ep, "given twice");
    out.push_back(*m);
  }
  if (out.empty()) fail(path, "must name at least one money state");
  return out;
}

// Member by member over what was inherited, as the webhook block is.
void apply_operation_webhook(OperationWebhook& w, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"events", "operation_id", "payment_id", "status", "idempotency_key", "requires"});
  if (const cJSON* e = cJSON_GetObjectItemCaseSensitive(v, "events")) w.events = webhook_events_at(e, member(path, "events"));
  const std::pair<const char*, WebhookField*> fields[] = {{"operation_id", &w.operation_id},
                                                          {"payment_id", &w.payment_id},
                                                          {"status", &w.status},
                                                          {"idempotency_key", &w.idempotency_key}};
  for (const auto& [name, slot] : fields)
    if (const cJSON* f = cJSON_GetObjectItemCaseSensitive(v, name)) *slot = webhook_field_at(f, member(path, name));
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "requires")) {
    w.requires_names = webhook_requires_at(r, member(path, "requires"));
    w.requires_given = true;
  }
}

void apply_operation(ProfileOperation& op, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path,
                {"method", "path", "target_id", "identity", "body", "amount", "retention_ms", "replay", "classify",
                 "response", "lookup", "money", "webhook", "parent_states", "notes"});
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "method")) {
    op.method = string_at(m, member(path, "method"));
    if (op.method != "POST" && op.method != "DELETE") fail(member(path, "method"), "must be \"POST\" or \"DELETE\"");
  }
  if (const cJSON* p = cJSON_GetObjectItemCaseSensitive(v, "path")) {
    const std::string pp = member(path, "path");
    op.path = string_at(p, pp);
    if (op.path.empty() || op.path[0] != '/' || !visible_ascii(op.path))
      fail(pp, "must start with / and hold no spaces or control characters");
    check_placeholders(op.path, pp, operation_placeholders());
  }
  if (const cJSON* t = cJSON_GetObjectItemCaseSensitive(v, "target_id")) {
    const std::string tp = member(path, "target_id");
    op.target_id = string_at(t, tp);
    // One id: a wildcard would leave the library to choose among several.
    if (!op.target_id.empty() && !concrete_json_path(op.target_id))
      fail(tp, "must be a JSON path to one value of the payment's lookup answer, without wildcards, e.g. "
               "$.purchase_units[0].payments.captures[0].id");
  }
  if (const cJSON* id = cJSON_GetObjectItemCaseSensitive(v, "identity")) {
    apply_identity(op.identity, id, member(path, "identity"));
    op.identity_given = true;
  }
  if (const cJSON* b = cJSON_GetObjectItemCaseSensitive(v, "body")) op.body = body_at(b, member(path, "body"));
  if (const cJSON* a = cJSON_GetObjectItemCaseSensitive(v, "amount")) op.amount = amount_field_at(a, member(path, "amount"));
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "retention_ms")) {
    if (cJSON_IsNull(r)) op.retention_ms.reset();
    else op.retention_ms = int_at(r, member(path, "retention_ms"), 1, int64_t(1) << 53);
    op.retention_given = true;
  }
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "replay")) {
    const std::string rp = member(path, "replay");
    const auto kind = parse_replay_kind(string_at(r, rp));
    if (!kind) fail(rp, "must be none, success_only, all_answers, current_state or reference");
    op.replay = *kind;
    op.replay_given = true;
  }
  if (const cJSON* c = cJSON_GetObjectItemCaseSensitive(v, "classify")) {
    const std::string cp = member(path, "classify");
    if (!cJSON_IsArray(c)) fail(cp, "must be an array of rules");
    // The child's rules come first, the base operation's behind them.
    std::vector<Rule> rules;
    int i = 0;
    for (const cJSON* r = c->child; r; r = r->next, ++i) rules.push_back(rule_at(r, element(cp, i)));
    rules.insert(rules.end(), op.classify.begin(), op.classify.end());
    op.classify = std::move(rules);
  }
  if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, "response")) apply_response(op, r, member(path, "response"));
  if (const cJSON* l = cJSON_GetObjectItemCaseSensitive(v, "lookup"))
    apply_lookup(op.lookup, l, member(path, "lookup"), operation_lookup_placeholders());
  if (const cJSON* m = cJSON_GetObjectItemCaseSensitive(v, "money")) apply_money(op.money, m, member(path, "money"));
  if (const cJSON* w = cJSON_GetObjectItemCaseSensitive(v, "webhook"))
    apply_operation_webhook(op.webhook, w, member(path, "webhook"));
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "parent_states")) {
    op.parent_states = parent_states_at(s, member(path, "parent_states"));
    op.parent_states_given = true;
  }
  if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(v, "notes")) {
    auto more = strings_at(n, member(path, "notes"), true);
    op.notes.insert(op.notes.end(), more.begin(), more.end());
  }
}

void check_operation_identity(const Identity& id, const std::string& path) {
  const std::string np = member(path, "name");
  switch (id.mode) {
    case IdentityMode::header:
      if (!header_token(id.name) || id.name[0] == '$')
        fail(np, "identity mode \"header\" needs an HTTP header name, not " + quoted(id.name));
      break;
    case IdentityMode::body:
      // Written by the library before the first send, and kept: nested
      // members allowed (Alipay's $.biz_content.out_request_no).
      if (!writable_path(id.name))
        fail(np, "identity mode \"body\" needs a JSON path of members the library writes, such as $.out_refund_no, "
                 "not " + quoted(id.name));
      break;
    case IdentityMode::reference:
      // The payment's reference names the payment, not this operation: two
      // refunds under it would be one to the provider, or a refusal.
      fail(member(path, "mode"),
           "an operation's key is its own: \"header\", \"body\" or \"none\", never the payment's \"reference\"");
    case IdentityMode::none:
      break;
  }
  if (id.min_length > id.max_length)
    fail(member(path, "min_length"), "is " + std::to_string(id.min_length) + ", above max_length " +
                                         std::to_string(id.max_length));
}

void check_operation(const std::string& name, ProfileOperation& op, const Profile& p, const std::string& path) {
  if (op.path.empty()) fail(member(path, "path"), "missing: where the " + name + " is sent");
  if (!op.identity_given) {
    if (p.identity.mode == IdentityMode::reference)
      fail(member(path, "identity"),
           "missing: the profile's identity is the payment's reference, which cannot name a " + name +
               "; give the operation its own (header, body or none)");
    op.identity = p.identity;
  }
  check_operation_identity(op.identity, member(path, "identity"));
  if (!op.retention_given) op.retention_ms = p.retention_ms;
  if (!op.replay_given) op.replay = p.replay;
  if (!op.parent_states_given) op.parent_states = operation_default_parent_states(name);

  // {target_id} and its reader go together.
  bool uses_target = names(op.path, "{target_id}") || names(op.lookup.path, "{target_id}") ||
                     names(op.lookup.body, "{target_id}");
  for (const auto& [_, value] : op.body) uses_target = uses_target || names(value, "{target_id}");
  if (uses_target && op.target_id.empty())
    fail(member(path, "target_id"), "missing: the operation names {target_id}; say where the payment's lookup "
                                    "answer carries it");
  if (!uses_target && !op.target_id.empty())
    fail(member(path, "target_id"), "is given, but neither the path, the body nor the lookup names {target_id}");
  if (!op.target_id.empty() && p.lookup.by == LookupBy::none)
    fail(member(path, "target_id"), "is read from the payment's lookup answer, and the profile has no lookup");

  // The key must reach the provider where the identity says.
  for (const auto& [jp, _] : op.body) {
    if (op.identity.mode == IdentityMode::body && jp == op.identity.name)
      fail(member(member(path, "body"), jp.c_str()), "is where the identity writes the key");
    if (!op.amount.path.empty() && jp == op.amount.path)
      fail(member(member(path, "body"), jp.c_str()), "is where the caller gives the amount");
  }
  if (op.method == "DELETE" && op.identity.mode == IdentityMode::body)
    fail(member(path, "identity"), "a DELETE has no body to carry the key in");

  // Its answer and lookup.
  const std::string lp = member(path, "lookup");
  const Lookup& lk = op.lookup;
  const bool by_answer = names(lk.path, "{operation_id}") || names(lk.body, "{operation_id}");
  switch (lk.by) {
    case LookupBy::none:
    case LookupBy::replay:
      break;
    case LookupBy::provider_id:
      // Asked by the id its answer gave: in the path, or as the listed
      // item the lookup picks (items) from its payment's actions.
      if (!names(lk.path, "{operation_id}") && lk.items.empty())
        fail(member(lp, "path"), "a " + name + "'s lookup by provider_id needs {operation_id} in its path (or items, "
                                 "picking the id its answer gave), the id its answer gave");
      if (op.id_path.empty())
        fail(member(member(path, "response"), "id_path"), "is empty, and the lookup asks by the id the answer gives");
      break;
    case LookupBy::order_id:
      // By what is known before the first send, so that a lost answer can
      // still be looked up.
      if (by_answer)
        fail(member(lp, "by"), "\"order_id\" asks by what is known before the send; {operation_id} needs "
                               "\"provider_id\"");
      if (!names(lk.path + lk.body, "{key}") && !names(lk.path + lk.body, "{provider_id}") &&
          !names(lk.path + lk.body, "{order_id}") && !names(lk.path + lk.body, "{target_id}"))
        fail(member(lp, "path"), "a lookup by order_id names the operation's {key} or its payment's {provider_id}, "
                                 "{order_id} or {target_id}");
      break;
  }
  if (lk.by != LookupBy::none && lk.by != LookupBy::replay && lk.path.empty())
    fail(member(lp, "path"), std::string("lookup by ") + lookup_by_name(lk.by) + " needs a path");
  if (lk.by == LookupBy::replay && !resend_always_safe(op.replay))
    fail(member(lp, "by"), std::string("\"replay\" is a same-key re-send, which replay \"") + replay_kind_name(op.replay) +
                               "\" does not make safe");
  if (!lk.reference_path.empty()) fail(member(lp, "reference_path"), "an operation's lookup searches by no reference");
  if (!lk.items.empty() && (lk.by != LookupBy::provider_id || lk.id_path.empty()))
    fail(member(lp, "items"), "picks the listed item naming the operation's own id: it needs by \"provider_id\" and "
                              "an id_path");
  if (!lk.item_key_path.empty() && lk.items.empty())
    fail(member(lp, "item_key_path"), "reads each listed item: it needs items");
  if (!lk.item_key_path.empty()) {
    // A row whose answer was lost is looked up by its key: the request must
    // have carried it where the items show it, and the lookup's path must
    // not need the id the row lacks.
    bool writes_key = op.identity.mode == IdentityMode::body;
    for (const auto& [at, text] : op.body) writes_key = writes_key || text == "{key}";
    if (!writes_key)
      fail(member(lp, "item_key_path"), "finds the item by the operation's key: the body must carry it (a \"body\" "
                                        "member \"{key}\", or a body identity)");
    if (names(lk.path + lk.body, "{operation_id}"))
      fail(member(lp, "item_key_path"), "finds a row that knows no id yet: the lookup's path must not need "
                                        "{operation_id}");
  }
  check_money(op.money, member(path, "money"));

  // Its notifications: each must name the payment it is of (whose row must
  // hold that id) and the operation itself, by its id or its key: an event
  // that named only its payment could be any of the payment's refunds.
  const std::string wp = member(path, "webhook");
  const OperationWebhook& w = op.webhook;
  if (!w.events.empty()) {
    if (w.payment_id.empty())
      fail(member(wp, "payment_id"), "missing: where an event names the payment the " + name + " is of");
    if (w.operation_id.empty() && w.idempotency_key.empty())
      fail(member(wp, "operation_id"), "missing: where an event names the " + name +
                                           " itself (operation_id, or the idempotency_key of the request that made it)");
    if (!w.operation_id.empty() && op.id_path.empty())
      fail(member(wp, "operation_id"), "an event names the " + name + " by the id its answer gives, and the answer's "
                                       "id_path is empty");
  } else if (!w.operation_id.empty() || !w.payment_id.empty() || !w.status.empty() || !w.idempotency_key.empty()) {
    fail(member(wp, "events"), "missing: which event types are the " + name + "'s");
  }
}

}  // namespace

AmountField amount_field_at(const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"path", "format"});
  AmountField f;
  const cJSON* p = cJSON_GetObjectItemCaseSensitive(v, "path");
  if (!p) fail(member(path, "path"), "missing");
  f.path = string_at(p, member(path, "path"));
  // One amount: a wildcard would read several.
  if (!concrete_json_path(f.path))
    fail(member(path, "path"), quoted(f.path) + " is not a JSON path to one value ($.amount, $.amount.value, "
                                                "$.purchase_units[0].amount.value)");
  const cJSON* fm = cJSON_GetObjectItemCaseSensitive(v, "format");
  if (!fm) fail(member(path, "format"), "missing: \"minor\" (an integer of minor units) or \"decimal\" (\"10.00\")");
  const std::string s = string_at(fm, member(path, "format"));
  if (s == "minor") f.format = AmountFormat::minor;
  else if (s == "decimal") f.format = AmountFormat::decimal;
  else fail(member(path, "format"), quoted(s) + " is not an amount format (minor, decimal)");
  return f;
}

void apply_operations(std::map<std::string, ProfileOperation>& ops, const cJSON* v, const std::string& path) {
  object_at(v, path);
  std::set<std::string> seen;
  for (const cJSON* c = v->child; c; c = c->next) {
    const std::string name = c->string ? c->string : "";
    const std::string op_path = path + "." + name;
    bool known = false;
    for (const std::string& n : operation_names()) known = known || n == name;
    if (!known) fail(op_path, "unknown operation (known: capture, refund, cancel)");
    if (!seen.insert(name).second) fail(op_path, "given twice");
    // Member by member over the base's operation of the same name.
    apply_operation(ops[name], c, op_path);
  }
}

void check_operations(Profile& p, const std::string& path) {
  for (auto& [name, op] : p.operations) check_operation(name, op, p, member(path, name.c_str()));
  // An event type says which operation it is about: one type, one kind.
  std::map<std::string, std::string> kind_of_type;
  for (const auto& [name, op] : p.operations)
    for (const auto& [type, _] : op.webhook.events)
      if (const auto [at, fresh] = kind_of_type.emplace(type, name); !fresh)
        fail(member(member(member(path, name.c_str()), "webhook"), "events") + "." + type,
             "is the " + at->second + "'s event type too: an event must say which operation it is about");
}

}  // namespace payretry
