#include "operation_flow.hpp"

#include <cJSON.h>

#include <cinttypes>
#include <cstdio>
#include <limits>

#include "error.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "path_template.hpp"
#include "redact.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

// A merchant reference (never here) or a window the profile leaves open.
constexpr int64_t kForever = int64_t(1) << 62;

// The members of a "$.a.b.c" path, or empty for any other path: the places
// payretry writes into an operation's body are plain members (a profile's
// operation body, amount and key paths), nested objects made as needed.
std::vector<std::string> members_of(const std::string& path) {
  std::vector<std::string> out;
  if (path.rfind("$.", 0) != 0) return {};
  size_t at = 2;
  while (at <= path.size()) {
    const size_t dot = path.find('.', at);
    const std::string name = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (name.empty() || name.find_first_of("[]*") != std::string::npos) return {};
    out.push_back(name);
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return out;
}

// Writes `value` at `path` in `doc`; refuses a path that is not plain
// members, or one the caller's fields already hold (payretry's value is
// what the ledger's fingerprint and guard stand for, never the caller's).
void write_at(cJSON* doc, const std::string& path, cJSON* value, const std::string& why) {
  JsonPtr owned(value);
  const std::vector<std::string> names = members_of(path);
  if (names.empty()) throw Error(Errc::PAY_ECONFIG, "operation body path " + path + " is not a plain member path");
  cJSON* at = doc;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    cJSON* next = cJSON_GetObjectItemCaseSensitive(at, names[i].c_str());
    if (next && cJSON_IsString(next) && next->valuestring) {
      // Alipay's biz_content may come as its JSON text: read it as the object it holds.
      JsonPtr parsed(cJSON_Parse(next->valuestring));
      if (parsed && cJSON_IsObject(parsed.get())) {
        cJSON* obj = parsed.release();
        cJSON_ReplaceItemInObjectCaseSensitive(at, names[i].c_str(), obj);
        next = obj;
      }
    }
    if (!next) {
      next = cJSON_CreateObject();
      cJSON_AddItemToObject(at, names[i].c_str(), next);
    }
    if (!cJSON_IsObject(next)) throw Error(Errc::PAY_EINVALID, "body member " + names[i] + " must be an object");
    at = next;
  }
  if (cJSON_GetObjectItemCaseSensitive(at, names.back().c_str()))
    throw Error(Errc::PAY_EINVALID, "body must not set " + path + ": payretry writes it (" + why + ")");
  cJSON_AddItemToObject(at, names.back().c_str(), owned.release());
}

cJSON* amount_value(const AmountField& f, int64_t amount) {
  if (f.format == AmountFormat::minor) return cJSON_CreateNumber(static_cast<double>(amount));
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%02" PRId64, amount / 100, amount % 100);
  return cJSON_CreateString(buf);
}

std::string amount_text(int64_t a) { return a < 0 ? "the rest" : std::to_string(a); }

std::optional<int64_t> operation_window(const ProfileOperation& op, const Config& config) {
  if (!op.retention_ms) return config.key_retention_ms;
  if (!config.key_retention_ms) return op.retention_ms;
  return std::min(*op.retention_ms, *config.key_retention_ms);
}

// A rule for the 2xx answers whose status word the operation's map sends
// to `target`: none when the map names no such word.
void add_status_rule(std::vector<Rule>& rules, const ProfileOperation& op, StatusTarget target, Verdict verdict,
                     bool processed, const char* reason) {
  Rule r;
  r.when.status = {{200, 299}};
  r.when.code_path = op.status_path;
  for (const auto& [word, to] : op.status_map)
    if (to == target) r.when.codes.push_back(word);
  if (r.when.codes.empty()) return;
  r.verdict = verdict;
  r.processed = processed;
  r.reason = reason;
  rules.push_back(std::move(r));
}

}  // namespace

Profile operation_profile(const Profile& payment, const ProfileOperation& op) {
  Profile p = payment;
  p.identity = op.identity;
  p.create_path = op.path;
  p.retention_ms = op.retention_ms;
  p.replay = op.replay;
  // The operation's rules first, then the payment's (with the generic
  // fallback behind them). A 2xx whose status the operation's map calls
  // FAILED (a Stripe refund answered "failed") did not take effect: it is
  // a final refusal, as a create's 2xx "Declined" is.
  // One its map calls PENDING (a Stripe refund "pending") took effect as
  // a request, but whether money moves is still the provider's to decide:
  // UNKNOWN, never SUCCEEDED, until its lookup or webhook says (and the
  // guard counts it as spent meanwhile).
  std::vector<Rule> rules;
  if (!op.status_path.empty()) {
    add_status_rule(rules, op, StatusTarget::failed, Verdict::fail, false, "operation_failed");
    add_status_rule(rules, op, StatusTarget::pending, Verdict::query, true, "operation_pending");
  }
  rules.insert(rules.end(), op.classify.begin(), op.classify.end());
  rules.insert(rules.end(), payment.classify.begin(), payment.classify.end());
  p.classify = std::move(rules);
  p.status_path = op.status_path;
  p.id_path = op.id_path;
  // An answer that decided nothing still names the operation where it
  // names it at all (a Stripe refund pending, Checkout.com's 202 with its
  // action_id): kept on the row for the operation's lookup by that id. The
  // create's error_id_path names a payment, never an operation.
  p.error_id_path = op.id_path;
  p.success_requires_id = false;
  // What a create's answer must name, and the reference a create carries
  // for its lookup, are the create's: an operation's answer names its
  // payment in its own words (its lookup checks them, lookup.names_request).
  p.names_request.clear();
  p.lookup = op.lookup;
  // So its "not found" never proves it absent (read_not_found: an
  // operation's identity is never the payment's reference either).
  p.lookup.reference_path.clear();
  p.money = op.money;
  p.webhook = ProfileWebhook{};
  p.operations.clear();
  return p;
}

OperationFlow::OperationFlow(const Config& config, const Profile& profile, Ledger& ledger, PaymentFlow& payments,
                             Deps deps)
    : config_(config), profile_(profile), ledger_(ledger), payments_(payments), d_(std::move(deps)),
      fingerprint_(ledger.secret()) {}

OperationFlow::Sender& OperationFlow::sender_for(const std::string& kind, const ProfileOperation& op) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Sender>& s = senders_[kind];
  if (s) return *s;
  auto made = std::make_unique<Sender>();
  made->config = config_;
  // The operation's own window, or the config's when that is shorter (a
  // config's key_retention_ms says how long this account's keys are kept:
  // where sources disagree, the shorter window wins). Its key is never
  // re-sent after it.
  made->config.key_retention_ms = operation_window(op, config_);
  made->profile = operation_profile(profile_, op);
  made->engine = std::make_unique<Engine>(
      made->config, made->profile,
      EngineDeps{d_.transport, d_.clock, d_.sleeper, d_.jitter, d_.keys, d_.log, d_.budget, d_.stats}, d_.hook, d_.auth);
  // Its own owner name: every claim's fencing token must be new, and the
  // payment flow numbers its claims from one too ("worker#1" twice would let
  // a stale run of one pass the other's fence).
  made->flow = std::make_unique<PaymentFlow>(*made->engine, ledger_, made->config, d_.clock, d_.sleeper, d_.keys,
                                             d_.stats, d_.log, payments_.owner() + "/" + kind, payments_.scope());
  made->settler = std::make_unique<Settler>(ledger_, d_.transport, made->profile, made->config, d_.clock, d_.sleeper,
                                            d_.jitter, d_.budget, d_.log, d_.stats, *made->flow, d_.hook, d_.auth);
  s = std::move(made);
  return *s;
}

// The operation's bytes: the caller's fields, then what payretry writes
// (the profile's template fields, the amount the guard decided, the key
// where the provider takes it in the body). A function of the caller's
// fields and of the row, so every attempt and every later process sends the
// same bytes.
std::string OperationFlow::body_for(const OperationRequest& r, const ProfileOperation& op, const PaymentRow& payment,
                                    const PaymentRow& row) const {
  JsonPtr doc(r.body.empty() ? cJSON_CreateObject() : cJSON_ParseWithLength(r.body.data(), r.body.size()));
  if (!doc || !cJSON_IsObject(doc.get())) throw Error(Errc::PAY_EINVALID, "the operation's body must be a JSON object");
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"provider_id", payment.provider_payment_id}, {"order_id", payment.order_id}, {"key", row.idempotency_key},
      {"target_id", r.target_id}, {"merchant_id", config_.merchant_id}};
  for (const auto& [path, text] : op.body)
    write_at(doc.get(), path, cJSON_CreateString(fill_template(text, vars, false).c_str()), "the profile's");
  if (!op.amount.path.empty() && row.amount >= 0 && r.kind != OperationKind::cancel)
    write_at(doc.get(), op.amount.path, amount_value(op.amount, row.amount), "give the amount");
  if (op.identity.mode == IdentityMode::body)
    write_at(doc.get(), op.identity.name, cJSON_CreateString(row.idempotency_key.c_str()), "the operation's key");
  // Nothing to say, in JSON: no body at all, as the provider defines an
  // operation that takes none (PayPal's void has no request body in its spec,
  // and its SDK sends none); "{}" might be refused as one it did not ask for.
  if (!doc->child && profile_.encoding == Encoding::json) return {};
  return json_print(doc.get());
}

PaymentResult OperationFlow::submit(const OperationRequest& r) {
  if (r.kind == OperationKind::create) throw Error(Errc::PAY_EINVALID, "a create is submitted with pay_submit");
  if (std::string e = check_operation_ids(r.order_id, r.kind, r.ref); !e.empty()) throw Error(Errc::PAY_EINVALID, e);
  const std::string kind = operation_kind_name(r.kind);
  const auto found = profile_.operations.find(kind);
  if (found == profile_.operations.end())
    throw Error(Errc::PAY_EINVALID, "provider " + profile_.name + " has no " + kind + " operation in its profile");
  const ProfileOperation& op = found->second;
  // Not sent by this version: a key the engine cannot carry, or a method
  // other than POST (Mollie's DELETE). Refused before anything is written.
  if (op.method != "POST")
    throw Error(Errc::PAY_EINVALID, "provider " + profile_.name + "'s " + kind + " is a " + op.method +
                                        ", which this version does not send");
  if (op.identity.mode != IdentityMode::header && op.identity.mode != IdentityMode::body)
    throw Error(Errc::PAY_EINVALID, "provider " + profile_.name + "'s " + kind +
                                        " takes no idempotency key, which this version does not send");
  if (r.amount < -1 || r.amount == 0) throw Error(Errc::PAY_EINVALID, "amount must be positive, or -1 for the rest");
  if (r.kind != OperationKind::cancel && r.amount >= 0 && op.amount.path.empty())
    throw Error(Errc::PAY_EINVALID, "provider " + profile_.name + "'s " + kind + " takes no amount: ask for the rest (-1)");
  if (op.path.find("{target_id}") != std::string::npos && r.target_id.empty())
    throw Error(Errc::PAY_EINVALID, "provider " + profile_.name + "'s " + kind +
                                        " names a target id (" + op.target_id + "): give target_id");
  if (!r.body.empty()) {
    JsonPtr doc(cJSON_ParseWithLength(r.body.data(), r.body.size()));
    if (!doc || !cJSON_IsObject(doc.get())) throw Error(Errc::PAY_EINVALID, "the operation's body must be a JSON object");
  }

  const std::optional<PaymentRow> payment = ledger_.get(r.order_id);
  if (!payment) throw Error(Errc::PAY_ENOTFOUND, "no payment for order " + r.order_id + " in the ledger");
  payments_.check_scope(*payment);  // another client's payment: nothing written, nothing sent
  if (payment->operation != OperationKind::create)
    throw Error(Errc::PAY_EINVALID, "order " + r.order_id + " is an operation, not a payment");
  if (payment->provider_payment_id.empty())
    throw Error(Errc::PAY_EINVALID, "payment " + r.order_id +
                                        " has no provider payment id yet: query it until the provider names it");

  Sender& s = sender_for(kind, op);
  const std::string path = fill_template(op.path, {{"provider_id", payment->provider_payment_id},
                                                   {"order_id", payment->order_id},
                                                   {"target_id", r.target_id},
                                                   {"merchant_id", config_.merchant_id}},
                                         false);
  if (std::string e = check_path(path); !e.empty()) throw Error(Errc::PAY_EINVALID, e);

  const RetryPolicy& policy = s.config.retry;
  const int64_t deadline_ms = r.deadline_ms > 0 ? std::min(r.deadline_ms, policy.deadline_ms) : policy.deadline_ms;
  PaymentFlow::Admission adm;
  adm.lease_ms = deadline_ms + s.config.lease_margin_ms;
  adm.fence = s.flow->new_fence(true);
  const int64_t now = d_.clock.unix_ms();
  PaymentRow& proposed = adm.proposed;
  proposed.order_id = operation_row_id(r.order_id, r.kind, r.ref);
  proposed.operation = r.kind;
  proposed.parent_order_id = r.order_id;
  proposed.operation_ref = r.ref;
  proposed.amount = r.kind == OperationKind::cancel ? 0 : r.amount;
  proposed.idempotency_key = d_.keys.new_key();
  s.engine->check_key(proposed.idempotency_key);
  // The same operation asked again must be asked the same way: its kind,
  // ref, amount as asked (the rest is decided once, by the guard), target
  // and the caller's fields, under the payment's own headers and path.
  proposed.fingerprint = fingerprint_("OPERATION " + kind,
                                      path + "\n" + r.ref + "\n" + amount_text(r.amount) + "\n" + r.target_id,
                                      r.body);
  proposed.scope = payments_.scope();
  proposed.submission_headers = payment->submission_headers;  // the payment's store
  proposed.submission_path = path;
  const int64_t retention = s.config.key_retention_ms.value_or(kForever);
  proposed.key_expires_at =
      retention >= kForever ? kForever : now + retention - std::min<int64_t>(3600000, retention / 10);

  // The bytes are checked before anything is written: a body payretry
  // cannot build (a field it writes already given, one too large) must
  // leave no row, or that row would hold its amount against every later
  // operation of the payment. Built here with this key and the amount as
  // asked (the guard never changes an amount given, it only refuses it), or
  // for "the rest" with the widest amount the row can get.
  PaymentRow trial_row = proposed;
  if (r.kind != OperationKind::cancel && r.amount == -1) trial_row.amount = std::numeric_limits<int64_t>::max() / 100;
  std::string trial = body_for(r, op, *payment, trial_row);
  if (trial.size() > s.config.max_body_bytes)
    throw Error(Errc::PAY_ETOOBIG, "the operation's body is " + std::to_string(trial.size()) +
                                       " bytes; max_body_bytes is " + std::to_string(s.config.max_body_bytes));

  Ledger::OperationOutcome made = ledger_.create_operation_and_claim(proposed, adm.fence, now, now + adm.lease_ms);
  if (!made.refused.empty())
    throw Error(Errc::PAY_EINVALID, kind + " " + r.ref + " of order " + r.order_id + " refused, nothing sent: " +
                                        made.refused);
  if (made.key_taken)
    throw Error(Errc::PAY_EMISMATCH, "idempotency key " + proposed.idempotency_key + " already belongs to another row");
  const PaymentRow& row = made.row;

  // The bytes come from the row as the ledger holds it: its key and the
  // amount the guard decided the first time (a retry's row has the key
  // stored then; "the rest" has the amount decided then). The trial's bytes
  // are those bytes when the row holds the trial's key and amount. A row
  // made here that still cannot be sent is settled FAILED, not sent, so that
  // it holds no amount.
  std::string body;
  try {
    if (row.idempotency_key == trial_row.idempotency_key && row.amount == trial_row.amount) {
      body = std::move(trial);
    } else {
      body = body_for(r, op, *payment, row);
      if (body.size() > s.config.max_body_bytes)
        throw Error(Errc::PAY_ETOOBIG, "the operation's body is " + std::to_string(body.size()) + " bytes");
    }
  } catch (const Error& e) {
    if (made.created) {
      Settlement never;
      never.state = PaymentState::failed;
      never.delivery = "not_sent";
      never.detail = redact(std::string("not sent: ") + e.what(), config_.secrets());
      ledger_.settle(row.order_id, adm.fence, nullptr, never, d_.clock.unix_ms());
    }
    throw;
  }
  SubmitRequest req;
  req.order_id = row.order_id;
  req.body = body;
  req.idempotency_key = row.idempotency_key;
  req.path = row.submission_path;
  req.deadline_ms = deadline_ms;
  if (!row.submission_headers.empty()) {
    std::optional<Headers> h = headers_from_json(row.submission_headers);
    if (!h) throw LedgerError("ledger: payment " + r.order_id + "'s stored submission headers are not readable");
    req.headers = std::move(*h);
  }
  adm.own_key = row.idempotency_key;
  if (!made.created) adm.proposed.idempotency_key = row.idempotency_key;  // the retry's: the stored one
  PaymentResult result = s.flow->go_on(req, adm, row, made.created);
  if (result.outcome == Outcome::unknown && result.ledger_error.empty()) {
    // Its own notification may have come while it was being sent (kept
    // until the run ended): the provider's word, at no request's cost.
    try {
      if (const std::optional<PaymentRow> now = ledger_.get(row.order_id)) {
        const PaymentRow landed = s.settler->apply_kept_events(*now);
        if (landed.state == PaymentState::succeeded || landed.state == PaymentState::failed) {
          // This call's own sends stand (attempts, delivery, body); the
          // outcome is the notification's.
          result.outcome = landed.state == PaymentState::succeeded ? Outcome::succeeded : Outcome::failed;
          result.provider_payment_id = landed.provider_payment_id;
          result.provider_status = landed.provider_status;
          result.money_state = landed.money_state;
          result.error = landed.state == PaymentState::failed ? landed.detail : std::string();
        }
      }
    } catch (const LedgerError& err) {
      d_.log.note(kLogWarn, "ledger_failed", row.order_id + ": its kept notifications could not be read: " + err.what());
    }
  }
  move_payment_money(*payment, row, result);
  return result;
}

PaymentResult OperationFlow::settle(const PaymentRow& row) {
  const std::string kind = operation_kind_name(row.operation);
  const auto found = profile_.operations.find(kind);
  if (row.operation == OperationKind::create || found == profile_.operations.end())
    throw Error(Errc::PAY_EINVALID, row.order_id + ": provider " + profile_.name + " has no " + kind + " operation");
  PaymentResult result = sender_for(kind, found->second).settler->settle_operation(row);
  if (result.outcome == Outcome::succeeded) {
    // Again after a crash between the settle and the move: the event is
    // one per operation row, so the money moves once.
    if (const std::optional<PaymentRow> payment = ledger_.get(row.parent_order_id))
      move_payment_money(*payment, row, result);
  }
  return result;
}

void OperationFlow::settled_by_event(const PaymentRow& row) {
  if (row.operation == OperationKind::create || row.state != PaymentState::succeeded) return;
  try {
    const std::optional<PaymentRow> payment = ledger_.get(row.parent_order_id);
    if (!payment) return;
    PaymentResult r;
    r.outcome = Outcome::succeeded;
    r.money_state = row.money_state;
    r.provider_status = row.provider_status;
    move_payment_money(*payment, row, r);
  } catch (const LedgerError& err) {
    // Moved again by the operation's next query.
    d_.log.note(kLogError, "ledger_failed", "operation " + row.order_id + ": its payment could not be read: " + err.what());
  }
}

// A capture that succeeded made its payment paid; a refund, partly
// refunded, or wholly when the refunds that succeeded add up to all that
// was captured (wholly_refunded; the provider's own lookup or webhook may
// say so too); a cancel, failed (nothing had moved:
// the guard allows a cancel only then). Recorded as the provider's word
// about the payment, naming it by its id, so the ledger moves its money
// only forward (event_moves_money, money_moves) and only once.
void OperationFlow::move_payment_money(const PaymentRow& payment, const PaymentRow& row, const PaymentResult& result) {
  if (result.outcome != Outcome::succeeded || result.ledger_error.size() || payment.provider_payment_id.empty()) return;
  MoneyState moved = MoneyState::unknown;
  switch (row.operation) {
    case OperationKind::capture: moved = result.money_state == MoneyState::paid ? MoneyState::paid : MoneyState::unknown; break;
    case OperationKind::refund:
      if (result.money_state != MoneyState::refunded) break;
      moved = MoneyState::partly_refunded;
      try {
        // Wholly, once the refunds that succeeded give back all that was
        // captured (this one is settled in the ledger by now).
        std::vector<OperationSibling> family;
        for (const PaymentRow& r : ledger_.operations_of(payment.order_id)) family.push_back(operation_sibling(r));
        if (wholly_refunded(operation_parent(payment), family)) moved = MoneyState::refunded;
      } catch (const LedgerError& err) {
        d_.log.note(kLogWarn, "ledger_failed", "payment " + payment.order_id + ": its refunds could not be read: " +
                                                   err.what());
      }
      break;
    case OperationKind::cancel: moved = result.money_state == MoneyState::failed ? MoneyState::failed : MoneyState::unknown; break;
    case OperationKind::create: break;
  }
  if (moved == MoneyState::unknown) return;
  LedgerEvent e;
  e.scope = payment.scope;
  e.scheme = "operation";
  std::string id = "operation:" + row.order_id;  // the row id's spaces made colons: one visible word
  for (char& c : id)
    if (c == ' ') c = ':';
  e.event_id = id;
  e.order_id = payment.order_id;
  e.provider_payment_id = payment.provider_payment_id;
  e.received_at = d_.clock.unix_ms();
  e.entry.kind = "webhook";
  e.entry.verdict = kEventNoted;  // the payment's outcome is not the operation's to change
  e.entry.reason = std::string(operation_kind_name(row.operation)) + " " + row.operation_ref + " " + result.provider_status;
  e.entry.money_state = moved;
  e.entry.started_at = e.received_at;
  e.entry.ended_at = e.received_at;
  e.entry.provider_request_id = e.event_id;
  e.entry.processed = false;
  try {
    ledger_.record_event(e);
  } catch (const LedgerError& err) {
    // The operation's own row holds its outcome; the payment's money is
    // moved again by its next lookup or webhook.
    d_.log.note(kLogError, "ledger_failed", "payment " + payment.order_id + ": its money could not be moved after " +
                                                row.order_id + ": " + err.what());
  }
}

}  // namespace payretry
