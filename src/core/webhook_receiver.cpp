#include "webhook_receiver.hpp"

#include <cJSON.h>
#include <strings.h>

#include <optional>

#include "error.hpp"
#include "form_encoding.hpp"
#include "hmac.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "money_reading.hpp"
#include "redact.hpp"
#include "validate.hpp"
#include "webhook_rules.hpp"

namespace payretry {
namespace {

// One alternative of a WebhookField: a JSON path, or a template whose every
// {$...} is one (all present, else the alternative yields nothing).
std::optional<std::string> read_alternative(const cJSON* doc, const std::string& alt) {
  if (alt.empty()) return std::nullopt;
  if (alt[0] == '$') return json_path_first_string(doc, alt);
  std::string out;
  size_t at = 0;
  while (at < alt.size()) {
    const size_t open = alt.find('{', at);
    if (open == std::string::npos) {
      out.append(alt, at, std::string::npos);
      break;
    }
    out.append(alt, at, open - at);
    const size_t close = alt.find('}', open);
    if (close == std::string::npos) return std::nullopt;  // the loader refuses such a template
    const std::optional<std::string> v = json_path_first_string(doc, alt.substr(open + 1, close - open - 1));
    if (!v) return std::nullopt;
    out += *v;
    at = close + 1;
  }
  return out;
}

// The first alternative of `field` that yields a value; "" when none does.
std::string read_field(const cJSON* doc, const WebhookField& field) {
  for (const std::string& alt : field)
    if (std::optional<std::string> v = read_alternative(doc, alt); v && !v->empty()) return *v;
  return {};
}

// A form body (Alipay's notification) as a JSON object of its fields, so that
// the profile's paths read it like any other; null when it is not one.
JsonPtr form_as_object(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> fields;
  if (body.empty() || !form_decode(body, fields) || fields.empty()) return nullptr;
  JsonPtr obj(cJSON_CreateObject());
  if (!obj) throw std::bad_alloc();
  for (const auto& [name, value] : fields) {
    if (cJSON_GetObjectItemCaseSensitive(obj.get(), name.c_str())) return nullptr;  // a name twice: ambiguous
    json_add(obj.get(), name.c_str(), value);
  }
  return obj;
}

const char* finding_word(const char* verdict) {
  if (std::string_view(verdict) == kEventSucceeded) return "succeeded";
  if (std::string_view(verdict) == kEventFailed) return "failed";
  return "noted";
}

const std::string& value_or_empty(const std::optional<PaymentRow>& row, std::string& tmp) {
  tmp = row ? state_name(row->state) : "";
  return tmp;
}

}  // namespace

WebhookSecrets webhook_secrets_of(const Config& config) {
  WebhookSecrets s;
  s.keys = config.webhook.secrets;
  s.api_v3_key = config.webhook.api_v3_key;
  s.public_key_pem = !config.webhook.public_key_pem.empty() ? config.webhook.public_key_pem
                                                            : config.auth.peer_public_key_pem;
  s.public_key_id = !config.webhook.public_key_id.empty() ? config.webhook.public_key_id : config.auth.platform_serial;
  s.webhook_id = config.webhook.webhook_id;
  s.notification_url = config.webhook.notification_url;
  return s;
}

std::string webhook_secrets_missing(const std::string& scheme, const WebhookSecrets& s) {
  if (scheme == "stripe" || scheme == "adyen" || scheme == "square" || scheme == "checkout_com" ||
      scheme == "mollie_signed")
    return s.keys.empty() ? "webhook.secret is required for " + scheme + " notifications (give secret, secret_env or "
                                                                         "secret_file)"
                          : "";
  if (scheme == "wechatpay_v3") {
    if (s.api_v3_key.empty()) return "webhook.api_v3_key is required for WeChat Pay notifications (their resource is "
                                     "encrypted with it)";
    if (s.public_key_pem.empty()) return "webhook.public_key (or auth.wechatpay) is required: the platform key signs "
                                         "notifications";
  }
  if (scheme == "alipay" && s.public_key_pem.empty())
    return "webhook.public_key (or auth.alipay) is required: Alipay's public key signs notifications";
  if (scheme == "paypal_offline") {
    if (s.public_key_pem.empty())
      return "webhook.public_key is required: the PayPal certificate notifications are verified against, pinned "
             "(none is fetched from the URL a notification names)";
    if (s.webhook_id.empty()) return "webhook.webhook_id is required: PayPal signs this endpoint's webhook id";
  }
  return {};
}

std::string WebhookOutcome::to_json() const {
  JsonPtr root(cJSON_CreateObject());
  if (!root) throw std::bad_alloc();
  json_add(root.get(), "verdict", verdict);
  json_add_or_null(root.get(), "why", why);
  json_add(root.get(), "scheme", scheme);
  json_add(root.get(), "status", status);
  cJSON* list = cJSON_AddArrayToObject(root.get(), "events");
  if (!list) throw std::bad_alloc();
  for (const WebhookEventResult& r : events) {
    cJSON* e = cJSON_CreateObject();
    if (!e) throw std::bad_alloc();
    cJSON_AddItemToArray(list, e);
    json_add(e, "event_id", r.event_id);
    json_add_or_null(e, "type", r.event_type);
    json_add_or_null(e, "order_id", r.order_id);
    json_add_or_null(e, "provider_payment_id", r.provider_payment_id);
    json_add_or_null(e, "provider_status", r.provider_status);
    json_add(e, "finding", r.finding);
    json_add(e, "money_state", money_state_name(r.money_state));
    json_add(e, "effect", r.effect);
    json_add_or_null(e, "state_before", r.state_before);
    json_add_or_null(e, "state_after", r.state_after);
    json_add_or_null(e, "why", r.why);
  }
  return json_print(root.get());
}

WebhookReceiver::WebhookReceiver(Ledger& ledger, const Profile& profile, const Config& config, Clock& clock,
                                 Stats& stats, AttemptLog& log, PaymentFlow& flow, Settler& settler)
    : ledger_(ledger), profile_(profile), config_(config), clock_(clock), stats_(stats), log_(log), flow_(flow),
      settler_(settler), secrets_(webhook_secrets_of(config)) {
  if (profile_.webhook.scheme.empty())
    throw Error(Errc::PAY_ECONFIG, "profile " + profile_.name + " reads no notifications (its webhook scheme is none)");
  if (std::string missing = webhook_secrets_missing(profile_.webhook.scheme, secrets_); !missing.empty())
    throw Error(Errc::PAY_ECONFIG, missing);
}

// Why an authentic event is not this client's to apply ("" when it is):
// the profile's `requires` names (an account, a kind of object).
std::string WebhookReceiver::not_ours(const cJSON* doc,
                                      const std::vector<std::pair<std::string, std::string>>& names) const {
  for (const auto& [path, want] : names) {
    std::string expect = want;
    if (want == "{merchant_id}") expect = config_.merchant_id;
    if (want == "{account_id}") expect = config_.account_id;
    if (want == "{app_id}") expect = config_.auth.app_id;
    if (expect.empty()) continue;  // the config names no account to compare with
    const std::optional<std::string> got = json_path_first_string(doc, path);
    if (!got) return "it does not name " + path;
    if (*got != expect) return "it names " + path + " " + *got + ", not " + expect;
  }
  return {};
}

std::string WebhookReceiver::payment_account(const PaymentRow& row) const {
  const std::string& name = profile_.webhook.account_header;
  const std::string* found = nullptr;
  auto last_named = [&](const Headers& hs) {
    for (const auto& [k, v] : hs)
      if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) found = &v;
  };
  // The payment's own header or the config's: submit refuses a payment
  // header the config sets too, so there is at most one.
  const std::optional<Headers> own = headers_from_json(row.submission_headers);
  last_named(config_.extra_headers);
  if (own) last_named(*own);
  return found ? *found : std::string();
}

WebhookOutcome WebhookReceiver::apply(const WebhookRequest& request) {
  WebhookOutcome out;
  const ProfileWebhook& w = profile_.webhook;
  out.scheme = w.scheme;
  const auto refuse = [&](std::string why) {
    out.verdict = "refused";
    out.why = redact(why, config_.secrets());
    out.status = 400;
    out.content_type = "text/plain";
    out.body = "refused";
    out.events.clear();
    stats_.on_webhook_event(profile_.name, "refused", "refused");
    log_.note(kLogWarn, "webhook_refused", out.why);
    return out;
  };
  // The operator's window over the profile's, over the scheme's default.
  const int64_t tolerance = config_.webhook.tolerance_ms > 0 ? config_.webhook.tolerance_ms : w.tolerance_ms;
  const WebhookVerdict v = verify_webhook(w.scheme, request, secrets_, clock_.unix_ms(), tolerance);
  if (v.kind == WebhookVerdict::refused) return refuse(v.why);
  out.verdict = "accepted";
  try {
    if (v.kind == WebhookVerdict::hint_only) {
      for (const std::string& id : v.items) apply_hint(id, out);
    } else {
      // Every event is read before any is stored: a malformed one refuses
      // the whole notification, and nothing of it changes anything.
      std::vector<JsonPtr> docs;
      const std::vector<std::string> texts =
          v.items.empty() ? std::vector<std::string>{v.body} : v.items;
      for (const std::string& text : texts) {
        JsonPtr doc(cJSON_ParseWithLength(text.data(), text.size()));
        if (!doc) doc = form_as_object(text);
        if (!doc || !cJSON_IsObject(doc.get())) return refuse("the notification is neither a JSON object nor a form");
        if (read_field(doc.get(), w.event_id).empty())
          return refuse("an event carries no id where profile " + profile_.name + " reads it");
        docs.push_back(std::move(doc));
      }
      for (const JsonPtr& doc : docs) {
        // An operation's own event (a refund's, a capture's) lands on that
        // operation's row; it is the payment's too where the payment's
        // block reads it (Adyen's CAPTURE moves its payment's money), under
        // its own id there.
        const std::string kind = operation_event_kind(profile_, read_field(doc.get(), w.event_type));
        if (kind.empty() || not_ours(doc.get(), w.requires_names).empty()) apply_event(doc.get(), out);
        if (!kind.empty() && out.verdict != "retry") apply_operation_event(doc.get(), kind, out);
      }
    }
  } catch (const std::bad_alloc&) {
    out.verdict = "retry";
    out.why = "out of memory";
  }
  if (out.verdict == "retry") {
    // Not stored: the provider must deliver it again, so never a 2xx.
    out.status = 503;
    out.content_type = "text/plain";
    out.body = "try again";
    log_.note(kLogError, "webhook_not_stored", out.why);
    return out;
  }
  out.status = w.ack_status;
  out.content_type = w.ack_content_type;
  out.body = w.ack_body;
  return out;
}

void WebhookReceiver::apply_event(const cJSON* doc, WebhookOutcome& out) {
  const ProfileWebhook& w = profile_.webhook;
  WebhookEventResult r;
  const std::string raw_id = read_field(doc, w.event_id);
  r.event_id = stored_event_id(raw_id);
  r.event_type = read_field(doc, w.event_type);
  r.order_id = read_field(doc, w.order_id);
  r.provider_payment_id = read_field(doc, w.provider_id);
  r.idempotency_key = read_field(doc, w.idempotency_key);
  r.account = read_field(doc, w.account_path);
  if (const std::string c = read_field(doc, w.created_path); !c.empty() && c.size() <= 12 &&
                                                             c.find_first_not_of("0123456789") == std::string::npos)
    r.object_created_s = std::stoll(c);
  const std::string status = read_field(doc, w.status);
  r.provider_status = !status.empty() ? status : r.event_type;
  const char* finding = event_finding(profile_, r.event_type, status);
  r.finding = finding_word(finding);
  r.money_state = money_in_event(profile_.money, r.event_type, doc);
  if (std::string_view(finding) == kEventFailed) r.money_state = money_of_refusal(r.money_state);
  // A name no payment of this client's can carry names none of them.
  if (!check_order_id(r.order_id).empty()) r.order_id.clear();
  if (!check_order_id(r.provider_payment_id).empty() ||
      redact_identifier_if_needed(r.provider_payment_id, config_.secrets()))
    r.provider_payment_id.clear();
  if (std::string why = not_ours(doc, profile_.webhook.requires_names); !why.empty()) {
    r.effect = "ignored";
    r.why = "not this client's: " + why;
  } else if (r.order_id.empty() && r.provider_payment_id.empty()) {
    r.effect = "ignored";
    r.why = "it names no payment this client could have made";
  }
  if (!r.effect.empty()) {
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    out.events.push_back(std::move(r));
    return;
  }
  LedgerEvent e;
  e.scheme = w.scheme;
  e.event_id = r.event_id;
  e.entry.verdict = finding;
  record(std::move(e), std::move(r), out);
}

void WebhookReceiver::apply_operation_event(const cJSON* doc, const std::string& kind_name, WebhookOutcome& out) {
  const ProfileOperation& op = profile_.operations.at(kind_name);
  const OperationWebhook& ow = op.webhook;
  // The loader allows only capture, refund and cancel as operation names.
  const std::optional<OperationKind> parsed = parse_operation_kind(kind_name);
  if (!parsed) return;
  const OperationKind kind = *parsed;
  WebhookEventResult r;
  // Its own id in the ledger: the payment's block may have stored the same
  // notification under the provider's id already.
  r.event_id = stored_event_id(read_field(doc, profile_.webhook.event_id) + ":" + kind_name);
  r.event_type = read_field(doc, profile_.webhook.event_type);
  const std::string operation_id = read_field(doc, ow.operation_id);
  const std::string payment_id = read_field(doc, ow.payment_id);
  const std::string key = read_field(doc, ow.idempotency_key);
  const std::string status = read_field(doc, ow.status);
  r.provider_payment_id = operation_id;
  r.provider_status = !status.empty() ? status : r.event_type;
  const char* finding = operation_event_finding(op, r.event_type, status);
  r.finding = finding_word(finding);
  r.money_state = money_in_event(op.money, r.event_type, doc);
  if (std::string_view(finding) == kEventFailed) r.money_state = money_of_refusal(r.money_state);
  const auto done = [&](const char* effect, std::string why) {
    r.effect = effect;
    r.why = std::move(why);
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    out.events.push_back(std::move(r));
  };
  const bool odd_id = !check_order_id(operation_id).empty() || redact_identifier_if_needed(r.provider_payment_id, config_.secrets());
  if (!operation_id.empty() && odd_id) r.provider_payment_id.clear();
  if (std::string why = not_ours(doc, ow.requires_given ? ow.requires_names : profile_.webhook.requires_names);
      !why.empty())
    return done("ignored", "not this client's: " + why);
  if (payment_id.empty() || !check_order_id(payment_id).empty())
    return done("ignored", "it names no payment this client could have made");
  try {
    // Its payment, by the id the event names: an operation is made only on
    // a payment whose row holds its provider id.
    const std::optional<PaymentRow> payment = ledger_.find_by_provider_id(flow_.scope(), payment_id);
    if (!payment || payment->operation != OperationKind::create)
      return done("ignored", "no payment of this client's has provider id " + payment_id);
    if (!profile_.webhook.account_header.empty()) {
      const std::string made_in = payment_account(*payment);
      if (!event_in_payment_account(profile_, made_in, read_field(doc, profile_.webhook.account_path)))
        return done("ignored", "its payment was made in another account than the order's");
    }
    const std::vector<PaymentRow> rows = ledger_.operations_of(payment->order_id);
    const int at = operation_event_row(rows, kind, r.provider_payment_id, key);
    LedgerEvent e;
    e.scope = flow_.scope();
    e.scheme = profile_.webhook.scheme;
    e.event_id = r.event_id;
    e.received_at = clock_.unix_ms();
    e.entry.kind = "webhook";
    e.entry.verdict = finding;
    e.entry.started_at = e.received_at;
    e.entry.ended_at = e.received_at;
    e.entry.reason = redact(r.provider_status, config_.secrets());
    e.entry.money_state = r.money_state;
    e.entry.provider_request_id = e.event_id;
    e.entry.processed = false;
    std::optional<PaymentRow> before;
    if (at >= 0) {
      before = rows[static_cast<size_t>(at)];
      e.order_id = before->order_id;
      e.provider_payment_id = !r.provider_payment_id.empty() ? r.provider_payment_id : before->provider_payment_id;
      r.order_id = before->order_id;
      r.state_before = state_name(before->state);
    } else {
      // No row of the payment provably its (the answer that would have
      // named it was lost, or has not come yet): kept under its own id
      // alone, to land on the row that comes to know that id. Never a
      // failure on a row it is not proven to be (event_finding_on).
      if (r.provider_payment_id.empty())
        return done("ignored", "it names no " + kind_name + " of payment " + payment->order_id +
                                   " this client knows by its id or key");
      // An id some row holds that the rule did not pick (two rows of the
      // kind hold it, or another row does): landed by that id alone, it
      // would settle a row it is not proven to be.
      if (const std::optional<PaymentRow> holder = ledger_.find_by_provider_id(flow_.scope(), r.provider_payment_id))
        return done("ignored", "its id " + r.provider_payment_id + " is held by " + holder->order_id +
                                   ", which is not provably this " + kind_name);
      e.provider_payment_id = r.provider_payment_id;
    }
    const EventRecording rec = ledger_.record_event(e);
    std::optional<PaymentRow> after;
    if (before) after = ledger_.get(before->order_id);
    std::string tmp;
    r.state_after = value_or_empty(after, tmp);
    switch (rec) {
      case EventRecording::duplicate: r.effect = "duplicate"; break;
      case EventRecording::kept_for_later:
        r.effect = "kept";
        r.why = before ? "its " + kind_name + " is being sent: it settles when that run ends (query or reconcile)"
                       : "no " + kind_name + " of payment " + payment->order_id + " knows this id yet";
        break;
      case EventRecording::recorded:
        r.effect = recorded_event_effect(before ? &*before : nullptr, after ? &*after : nullptr, r.finding,
                                         event_settled_detail(e.entry));
        if (r.effect == "conflict") {
          const PaymentRow& held = after ? *after : *before;
          r.why = "the " + kind_name + " is " + std::string(state_name(held.state)) +
                  " in the ledger and the provider now says " + r.provider_status;
          log_.note(kLogError, "webhook_conflict", held.order_id + ": " + r.why);
        }
        break;
    }
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    const bool moved = after && after->state == PaymentState::succeeded && r.effect == "settled";
    out.events.push_back(std::move(r));
    // Its payment's money moves after the event's own commit (the move is
    // one event per operation row: asked again, it moves nothing).
    if (moved && operation_settled_) operation_settled_(*after);
  } catch (const LedgerError& le) {
    r.why = redact(le.what(), config_.secrets());
    out.verdict = "retry";
    out.why = r.why;
    done("error", r.why);
  }
}

// Mollie's classic webhook: an id and nothing else, which anyone can send.
// The provider's own lookup says what it is; only that is recorded.
void WebhookReceiver::apply_hint(const std::string& provider_id, WebhookOutcome& out) {
  WebhookEventResult r;
  r.provider_payment_id = provider_id;
  if (!check_order_id(provider_id).empty()) {
    r.event_id = stored_event_id(provider_id);
    r.finding = "noted";
    r.effect = "ignored";
    r.why = "the id it names is not one a payment can have";
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    out.events.push_back(std::move(r));
    return;
  }
  const Settler::Finding f = settler_.look_up_provider_payment(provider_id);
  if (f.kind != Settler::Finding::found) {
    r.event_id = "lookup:" + provider_id;
    r.finding = "noted";
    if (f.kind == Settler::Finding::not_found) {
      r.effect = "ignored";
      r.why = "the provider knows no payment " + provider_id;
    } else {
      r.effect = "error";
      r.why = redact("the confirming lookup failed: " + f.why, config_.secrets());
      out.verdict = "retry";
      out.why = r.why;
    }
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    out.events.push_back(std::move(r));
    return;
  }
  JsonPtr doc(cJSON_ParseWithLength(f.body.data(), f.body.size()));
  r.provider_payment_id = f.provider_id;
  r.provider_status = f.provider_status;
  r.order_id = doc ? read_field(doc.get(), profile_.webhook.order_id) : "";
  if (!check_order_id(r.order_id).empty()) r.order_id.clear();
  // Its status is the event: the same status read twice is one event.
  r.event_id = lookup_event_id(f.provider_id, f.provider_status);
  const char* finding = event_finding(profile_, "", f.provider_status);
  r.finding = finding_word(finding);
  r.money_state = std::string_view(finding) == kEventFailed ? money_of_refusal(f.money_state) : f.money_state;
  if (std::string why = doc ? not_ours(doc.get(), profile_.webhook.requires_names) : std::string(); !why.empty()) {
    r.effect = "ignored";
    r.why = "not this client's: " + why;
    stats_.on_webhook_event(profile_.name, r.finding, r.effect);
    out.events.push_back(std::move(r));
    return;
  }
  LedgerEvent e;
  e.scheme = profile_.webhook.scheme;
  e.event_id = r.event_id;
  e.entry.verdict = finding;
  e.entry.http_status = f.http_status;
  record(std::move(e), std::move(r), out);
}

void WebhookReceiver::record(LedgerEvent e, WebhookEventResult r, WebhookOutcome& out) {
  const int64_t now = clock_.unix_ms();
  e.scope = flow_.scope();
  e.order_id = r.order_id;
  e.provider_payment_id = r.provider_payment_id;
  e.received_at = now;
  e.entry.kind = "webhook";
  e.entry.started_at = now;
  e.entry.ended_at = now;
  e.entry.reason = redact(r.provider_status, config_.secrets());
  e.entry.money_state = r.money_state;
  e.entry.provider_request_id = e.event_id;
  e.entry.processed = false;
  std::string tmp;
  try {
    std::optional<PaymentRow> before;
    if (!r.order_id.empty()) {
      before = ledger_.get(r.order_id);
      if (!before) {
        // No row for the order it names: another payment's under the same
        // order id (event_without_row says why, and what becomes of it).
        switch (event_without_row(e.provider_payment_id)) {
          case EventWithoutRow::ignored:
            r.effect = "ignored";
            r.why = "no payment of this client's has this order id, and its own events come after its row is made";
            stats_.on_webhook_event(profile_.name, r.finding, r.effect);
            out.events.push_back(std::move(r));
            return;
          case EventWithoutRow::kept_by_id: e.order_id.clear(); break;
          case EventWithoutRow::kept_by_order: break;
        }
      }
      // Another client's row, or another payment's (the order named, the
      // provider's id another): not the row this event lands on.
      if (before && (before->scope != e.scope || (!e.provider_payment_id.empty() &&
                                                  !before->provider_payment_id.empty() &&
                                                  before->provider_payment_id != e.provider_payment_id)))
        before.reset();
    }
    if (before && !profile_.webhook.account_header.empty()) {
      const std::string made_in = payment_account(*before);
      if (!event_in_payment_account(profile_, made_in, r.account)) {
        // Another account's payment under this order id: never this row's.
        r.effect = "ignored";
        r.why = "its payment was made in account " + (r.account.empty() ? std::string("(the platform's own)") : r.account) +
                ", the order's in " + (made_in.empty() ? std::string("(the platform's own)") : made_in);
        stats_.on_webhook_event(profile_.name, r.finding, r.effect);
        out.events.push_back(std::move(r));
        return;
      }
    }
    r.state_before = value_or_empty(before, tmp);
    // Where the merchant reference is the payment's identity at the provider
    // (WeChat Pay's and Alipay's out_trade_no: permanent, and a second
    // payment under it is refused, never made), an event naming the order
    // names the row's payment, whatever id the row knows it by (WeChat Pay
    // answers a create with a prepay_id and notifies a transaction_id).
    if (before && e.provider_payment_id.empty() && !before->provider_payment_id.empty() &&
        profile_.identity.mode == IdentityMode::reference)
      e.provider_payment_id = before->provider_payment_id;
    if (const char* by_money = event_finding_by_money(e.entry.verdict.c_str(), r.money_state, before ? &*before : nullptr,
                                                      e.provider_payment_id);
        e.entry.verdict != by_money) {
      e.entry.verdict = by_money;
      r.why = "a success whose words say no money moved, naming this order but not the payment its row knows: "
              "recorded, not settled (a lookup, a later event or a person settles it)";
    }
    const char* lands_as = event_finding_on(e.entry.verdict.c_str(), before ? &*before : nullptr, e.provider_payment_id,
                         before ? key_as_proof(*before, r.idempotency_key, r.object_created_s, profile_.retention_ms)
                                : std::string());
    if (e.entry.verdict != lands_as) {
      e.entry.verdict = lands_as;
      r.why = "a failure that names this order but not the payment its row knows: recorded, not settled (a lookup, a "
              "later event or a person settles it)";
    }
    const EventRecording rec = ledger_.record_event(e);
    std::optional<PaymentRow> after;
    if (before) after = ledger_.get(r.order_id);
    r.state_after = value_or_empty(after, tmp);
    switch (rec) {
      case EventRecording::duplicate:
        r.effect = "duplicate";
        break;
      case EventRecording::kept_for_later:
        r.effect = "kept";
        r.why = before ? "its payment is being sent: it settles when that run ends (query or reconcile)"
                       : "no payment of this client's has these names yet";
        break;
      case EventRecording::recorded:
        r.effect = recorded_event_effect(before ? &*before : nullptr, after ? &*after : nullptr, r.finding,
                                         event_settled_detail(e.entry));
        if (r.effect == "conflict") {
          // Never moved back: the caller was told the other outcome, and
          // only a person can say what to do now.
          const PaymentRow& held = after && (after->state == PaymentState::succeeded || after->state == PaymentState::failed)
                                       ? *after
                                       : *before;
          r.why = "the payment is " + std::string(state_name(held.state)) + " in the ledger and the provider now says " +
                  r.provider_status;
          log_.note(kLogError, "webhook_conflict", "order " + r.order_id + ": " + r.why);
        }
        break;
    }
  } catch (const LedgerError& le) {
    r.effect = "error";
    r.why = redact(le.what(), config_.secrets());
    out.verdict = "retry";
    out.why = r.why;
  }
  stats_.on_webhook_event(profile_.name, r.finding, r.effect);
  out.events.push_back(std::move(r));
}

}  // namespace payretry
