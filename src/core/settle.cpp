#include "settle.hpp"

#include <cJSON.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "answer_names.hpp"
#include "classify.hpp"
#include "error.hpp"
#include "form_encoding.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "lookup_rules.hpp"
#include "money_reading.hpp"
#include "webhook_rules.hpp"
#include "path_template.hpp"
#include "redact.hpp"
#include "retry_decision.hpp"

namespace payretry {
namespace {

// The values a lookup's templates name: {order_id}, {provider_id}, {key},
// {merchant_id}, and for an operation's lookup {operation_id} (the id its
// own answer gave). An operation's {order_id} and {provider_id} are its
// payment's; its {key} is its own.
using TemplateVars = std::vector<std::pair<std::string, std::string>>;

// A lookup body template is a JSON document; it travels in the profile's
// encoding, like a create's.
std::string encode_lookup_body(const std::string& json, Encoding encoding) {
  if (encoding == Encoding::json) return json;
  JsonPtr j(cJSON_ParseWithLength(json.data(), json.size()));
  if (!j || !cJSON_IsObject(j.get())) return json;  // the profile loader checked it is one
  return encoding == Encoding::form ? form_encode_json(j.get()) : form_encode_flat(json);
}

}  // namespace

Headers submission_headers_of(const PaymentRow& row) {
  std::optional<Headers> h = headers_from_json(row.submission_headers);
  if (!h) throw LedgerError("ledger: the submission headers of order " + row.order_id + " are not readable");
  return std::move(*h);
}

struct Settler::Answer {
  enum Kind { found, not_found, failed } kind = failed;
  std::string provider_status;
  std::string provider_id;
  MoneyState money_state = MoneyState::unknown;  // a found answer's, read through money.lookup
  int http_status = 0;
  std::string why;
  // Unix ms the answering request was sent: the provider read its store no
  // earlier than this, so a "not found" speaks for this moment, not for
  // when the answer arrived.
  int64_t asked_at = 0;
  std::string body;  // a found answer's
};

Settler::Settler(Ledger& ledger, Transport& transport, const Profile& profile, const Config& config, Clock& clock,
                 Sleeper& sleeper, Random& jitter, RetryBudget& budget, AttemptLog& log, Stats& stats,
                 PaymentFlow& flow, RequestHook hook, Authenticator* auth)
    : ledger_(ledger), transport_(transport), profile_(profile), config_(config), clock_(clock), sleeper_(sleeper),
      jitter_(jitter), budget_(budget), log_(log), stats_(stats), flow_(flow), hook_(std::move(hook)), auth_(auth) {}

bool Settler::can_look_up(const PaymentRow& row) const {
  const Lookup& lk = profile_.lookup;
  // An operation's target (PayPal's authorization) is not kept on its row:
  // a lookup that names it cannot be asked again later.
  if (row.operation != OperationKind::create &&
      (lk.path + lk.body).find("{target_id}") != std::string::npos)
    return false;
  if (lk.by == LookupBy::order_id) return true;
  if (lk.by != LookupBy::provider_id) return false;
  // An operation whose answer was lost is found among its payment's actions
  // by the key its body carried (Checkout.com's action reference).
  return !row.provider_payment_id.empty() || (row.operation != OperationKind::create && !lk.item_key_path.empty());
}

// What one lookup sends on every attempt, before the hook and the signer.
struct Settler::LookupTarget {
  std::string path;  // with its query, as the signer signs it
  std::string url;
  std::string body;
  Headers headers;
  std::string key_header;  // the identity header's name, for the request hook
  // Whom the lookup asks about: the row's payment (an operation's, its
  // parent's order and id), what a found answer must name.
  std::string order_id;
  std::string provider_id;
};

Settler::LookupTarget Settler::lookup_target(const PaymentRow& row) const {
  const Lookup& lk = profile_.lookup;
  LookupTarget t;
  t.order_id = row.order_id;
  t.provider_id = row.provider_payment_id;
  std::string operation_id;
  if (row.operation != OperationKind::create) {
    const std::optional<PaymentRow> parent = ledger_.get(row.parent_order_id);
    if (!parent) throw LedgerError("ledger: the payment " + row.parent_order_id + " of " + row.order_id + " is gone");
    t.order_id = parent->order_id;
    t.provider_id = parent->provider_payment_id;
    operation_id = row.provider_payment_id;
  }
  const TemplateVars vars = {{"order_id", t.order_id},
                             {"provider_id", t.provider_id},
                             {"key", row.idempotency_key},
                             {"merchant_id", config_.merchant_id},
                             {"operation_id", operation_id}};
  t.path = fill_template(lk.path, vars, false);
  t.url = config_.base_url + t.path;
  if (!lk.body.empty()) t.body = encode_lookup_body(fill_template(lk.body, vars, true), profile_.encoding);
  t.headers = {{"Accept", "application/json"}, {"User-Agent", "payretry/" PAYRETRY_VERSION_STRING}};
  if (!t.body.empty()) t.headers.emplace_back("Content-Type", content_type_of(profile_.encoding));
  t.headers.insert(t.headers.end(), config_.auth_headers.begin(), config_.auth_headers.end());
  t.headers.insert(t.headers.end(), config_.extra_headers.begin(), config_.extra_headers.end());
  // The payment's own headers (a Stripe-Account, a tenant header) scope the
  // provider's store: a lookup without them searches another store, where
  // "not found" would be read as proof that no payment exists.
  const Headers own = submission_headers_of(row);
  t.headers.insert(t.headers.end(), own.begin(), own.end());
  t.key_header = profile_.identity.mode == IdentityMode::header ? profile_.identity.name : "";
  return t;
}

// Attempt n of a lookup, through the request hook and the authenticator like
// a create: why it cannot be sent, or "" with `h` ready. No byte of it leaves
// after the deadline or the claim's lease (the send gate).
std::string Settler::prepare_lookup(const PaymentRow& row, const LookupTarget& target, unsigned n, int64_t deadline,
                                    HttpRequest& h) {
  const Lookup& lk = profile_.lookup;
  const RetryPolicy& policy = config_.retry;
  h.method = lk.method;
  h.url = target.url;
  h.headers = target.headers;
  h.body = target.body;
  h.claim = row.lease_owner;
  if (hook_) {
    Headers extra;
    const AttemptView view{target.url, target.path, row.order_id, row.idempotency_key, target.key_header,
                           target.body, n, clock_.unix_ms(), lk.method.c_str()};
    const std::string refused = hook_(view, extra);
    if (!refused.empty()) return "request hook: " + refused;
    h.headers.insert(h.headers.end(), extra.begin(), extra.end());
  }
  if (auth_) {
    OutgoingRequest out{lk.method, config_.base_url, target.path, target.body, {}};
    const std::string refused = authorize_or_why(*auth_, out, clock_.unix_ms(), deadline - clock_.now_ms());
    if (!refused.empty()) return "lookup not sent: " + refused;
    h.url = out.url();
    h.headers.insert(h.headers.end(), out.headers.begin(), out.headers.end());
  }
  h.timeout_ms = std::min(policy.attempt_timeout_ms, deadline - clock_.now_ms());
  h.connect_timeout_ms = std::min(policy.connect_timeout_ms, h.timeout_ms);
  h.wait_limit_ms = deadline - clock_.now_ms();
  h.send_margin_ms = policy.min_attempt_ms;
  const int64_t lease_until = row.lease_until;
  h.may_start = [this, deadline, lease_until]() -> std::string {
    if (clock_.now_ms() >= deadline) return "the lookup's deadline passed";
    if (lease_until > 0 && clock_.unix_ms() >= lease_until) return "the lookup's lease ended";
    return {};
  };
  return {};
}

// Reads one lookup answer into `a`. True when it ends the lookup (a status,
// "not found", or an answer that can settle nothing), with the verdict and
// reason to log; false when the read failed and classify() decides whether
// to ask again. A provider that signs its answers: a status from an answer
// whose signature fails, or that carries none, settles nothing. (An
// unsigned "not found" may stand: the providers that sign keep their
// merchant reference forever, so a re-send after it can never charge twice.)
bool Settler::read_lookup_answer(const PaymentRow& row, const LookupTarget& target, const TransportResult& t,
                                 Answer& a, std::string& verdict, std::string& reason) {
  const std::string& path = target.path;
  const Lookup& lk = profile_.lookup;
  AnswerTrust trust = AnswerTrust::verified;
  std::string untrusted;
  if (t.failure == TransportFailure::none && auth_ && auth_->signs_answers())
    trust = auth_->check_answer(t.response, path, clock_.unix_ms(), untrusted);
  verdict = kLookupFailed;
  if (t.failure != TransportFailure::none) {
    a.why = std::string("lookup failed: ") + transport_failure_name(t.failure);
    return false;
  }
  a.http_status = t.response.status;
  if (trust == AnswerTrust::forged) {
    a.why = "the lookup answer could not be verified: " + untrusted;
    log_.note(kLogError, "answer_not_verified", "lookup of " + row.order_id + ": " + untrusted);
    reason = "answer_not_verified";
    return true;
  }
  // "Not found" only from the profile's own signal: a bare 404 (a wrong
  // path, a proxy) or an answer without a status proves nothing.
  if (!lk.not_found.empty() && rule_matches(lk.not_found, t)) {
    a.kind = Answer::not_found;
    verdict = kLookupNotFound;
    reason = "not_found";
    return true;
  }
  const int s = t.response.status;
  JsonPtr parsed(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
  if (s < 200 || s >= 300 || !parsed) {
    a.why = "lookup answered HTTP " + std::to_string(s);
    return false;
  }
  // An answer listing the payment's actions: the one naming this row's own
  // id is the answer, or, for a row that knows no id yet, the one carrying
  // its key (item_key_path). Not listed yet (Checkout.com lists a refund
  // once it is processed) or listed twice settles nothing.
  const cJSON* answer = parsed.get();
  const bool by_key = !lk.items.empty() && row.provider_payment_id.empty() && !lk.item_key_path.empty();
  if (!lk.items.empty()) {
    const cJSON* mine = nullptr;
    size_t listed = 0;
    const std::string& want = by_key ? row.idempotency_key : row.provider_payment_id;
    const std::string& at = by_key ? lk.item_key_path : lk.id_path;
    for (const cJSON* item : json_path_nodes(parsed.get(), lk.items))
      if (!want.empty() && json_path_first_string(item, at) == want) {
        mine = item;
        ++listed;
      }
    const std::string what = by_key ? "an action under key " + want : want;
    if (listed != 1) {
      a.why = listed == 0 ? "the lookup does not list " + what + " yet"
                          : "the lookup lists " + what + " " + std::to_string(listed) + " times";
      reason = listed == 0 ? "not_listed" : "lookup_ambiguous";
      return true;
    }
    // Under the row's own id the id decides, whatever reference the item
    // shows: a row sent before its profile wrote the key carried the
    // caller's own reference (or none).
    answer = mine;
  }
  std::optional<std::string> status = json_path_first_string(answer, lk.status_path);
  if (!status) {
    a.why = "the lookup answer holds no status";
    reason = "no_status";
    return true;
  }
  if (trust != AnswerTrust::verified) {
    a.why = "the lookup answer is not signed: " + untrusted;
    reason = "answer_not_signed";
    return true;
  }
  // A search that lists more than one payment under this reference cannot
  // say which is this one: the first listed (Checkout.com's data[0], newest
  // first) may be another payment of the same order, declined while this
  // one was charged. It settles nothing; the row stays as it is for a
  // webhook or the operator.
  if (!lk.found_ids.empty()) {
    const size_t listed = json_path_strings(answer, lk.found_ids).size();
    if (listed != 1) {
      a.why = "the lookup lists " + std::to_string(listed) +
              " payments under this reference; which one is this payment cannot be told";
      log_.note(kLogError, "lookup_ambiguous", "lookup of " + row.order_id + ": " + a.why);
      reason = "lookup_ambiguous";
      return true;
    }
  }
  // Whose payment the answer describes: a signed answer to another order
  // (a proxy replaying it), or another payment than the id asked for,
  // settles nothing.
  std::optional<std::string> id = json_path_first_string(answer, lk.id_path);
  const std::string amount = row.amount >= 0 ? std::to_string(row.amount) : std::string();
  std::string other = answer_names_other(
      lk.names_request, answer,
      RequestNames{target.order_id, config_.merchant_id, target.provider_id, row.idempotency_key, amount}, true);
  if (other.empty() && lk.by == LookupBy::provider_id && !by_key && id && *id != row.provider_payment_id)
    other = "the answer describes payment " + *id + ", not " + row.provider_payment_id;
  if (!other.empty()) {
    a.why = "the lookup answer is not this payment's: " + other;
    log_.note(kLogError, "answer_not_verified", "lookup of " + row.order_id + ": " + other);
    reason = "answer_not_verified";
    return true;
  }
  a.kind = Answer::found;
  a.body = t.response.body;
  a.provider_status = std::move(*status);  // valid UTF-8 as read (json_path.hpp)
  if (id) a.provider_id = std::move(*id);
  a.money_state = money_in_answer(profile_.money, profile_.money.lookup, answer);
  verdict = kLookupFound;
  reason = a.provider_status;
  return true;
}

// Every lookup attempt goes to the attempt log, as a payment's does.
void Settler::log_lookup(const PaymentRow& row, unsigned n, int64_t asked_at, const TransportResult& t,
                         const std::string& verdict, const std::string& reason, const RetryDecision& next) {
  AttemptRecord rec;
  rec.number = n;
  rec.started_unix_ms = asked_at;
  rec.elapsed_ms = t.elapsed_ms;
  rec.http_status = t.failure == TransportFailure::none ? t.response.status : 0;
  if (t.failure != TransportFailure::none) rec.transport_error = transport_failure_name(t.failure);
  rec.verdict = verdict;
  rec.reason = reason;
  if (next.retry) {
    rec.delay_ms = next.delay_ms;
    rec.delay_source = next.delay_source;
  }
  log_.lookup(row.order_id, row.idempotency_key, rec);
}

// A lookup is a read: asking again is always safe, but it gets the same
// bounds and the same decisions as a payment's attempts.
Settler::Answer Settler::look_up(const PaymentRow& row) {
  const RetryPolicy& policy = config_.retry;
  const LookupTarget target = lookup_target(row);
  const int64_t deadline = clock_.now_ms() + policy.deadline_ms;
  Answer a;
  bool renewed = false;
  for (unsigned n = 1;; ++n) {
    if (deadline - clock_.now_ms() < policy.min_attempt_ms) break;
    HttpRequest h;
    const std::string refused = prepare_lookup(row, target, n, deadline, h);
    if (!refused.empty()) {
      a.kind = Answer::failed;
      a.why = refused;
      return a;
    }
    if (h.timeout_ms < policy.min_attempt_ms) break;
    a.asked_at = clock_.unix_ms();
    const TransportResult t = transport_.post(h);
    stats_.on_lookup_attempt();
    stats_.on_connections(t.connections_opened);
    if (t.failure == TransportFailure::none && t.response.status == 401 && auth_ && !renewed &&
        auth_->renew_after_unauthorized()) {
      // An expired token: asked again at once with a fresh one. A read acts
      // on nothing, but every request that left is in the log.
      renewed = true;
      RetryDecision again;
      again.retry = true;
      again.delay_source = "credential_renewed";
      log_lookup(row, n, a.asked_at, t, "unauthorized", "credential_renewed", again);
      continue;
    }
    std::string verdict, reason;
    if (read_lookup_answer(row, target, t, a, verdict, reason)) {
      // A found status refills the budget as a payment's success does.
      if (a.kind == Answer::found) budget_.on_success(n > 1);
      log_lookup(row, n, a.asked_at, t, verdict, reason, RetryDecision{});
      return a;
    }
    // Whether to ask again is the payments' own decision: classify() reads
    // the answer as it would a create's, and only a final answer (a 4xx the
    // profile calls final, a mismatch) stops; an answer that would leave a
    // create "maybe processed" only means the read failed, and a read acts
    // on nothing. decide_retry() then bounds the lookup as it bounds a
    // payment: attempts, deadline, Retry-After and the client's budget.
    const Classification c = classify(profile_, t);
    const bool final_answer =
        c.verdict == Verdict::fail || c.verdict == Verdict::mismatch || c.verdict == Verdict::success;
    RetryDecision next;
    if (!final_answer)
      next = decide_retry(policy, n, t, clock_.now_ms(), clock_.unix_ms(), deadline, jitter_, budget_);
    log_lookup(row, n, a.asked_at, t, verdict_name(c.verdict), c.reason, next);
    if (!next.retry) {
      if (next.stop == "retry_budget_exhausted") stats_.on_budget_exhausted();
      if (!next.stop.empty()) a.why += " (" + next.stop + ")";
      return a;
    }
    sleeper_.sleep_ms(next.delay_ms);
  }
  return a;
}

PaymentResult Settler::unchanged(const PaymentRow& row, const std::string& why) {
  return flow_.stored_result(row, redact(why, config_.secrets()));
}

// A row that stays UNKNOWN with why. One a dead run left IN_FLIGHT is taken
// over (which records its possible last send) and settled UNKNOWN, so that
// it no longer reads as held by anyone.
PaymentResult Settler::settle_unknown(const PaymentRow& row, const std::string& why) {
  if (row.state != PaymentState::in_flight) return unchanged(row, why);
  const std::optional<PaymentRow> claimed =
      flow_.claim(row, config_.retry.deadline_ms + config_.lease_margin_ms, false);
  if (!claimed) return flow_.stored_result(row, "another worker holds this payment");
  Settlement s = settlement_of(*claimed);
  s.state = PaymentState::unknown;
  s.delivery = "maybe_processed";
  s.detail = redact(why, config_.secrets());
  ledger_.settle(row.order_id, claimed->lease_owner, nullptr, s, clock_.unix_ms());
  PaymentRow after = with_settlement(*claimed, s);
  after.lease_owner.clear();
  after.lease_until = 0;
  return flow_.stored_result(after, s.detail);
}

AttemptEntry Settler::lookup_entry(const PaymentRow& claimed, const Answer& a, const HistoryReading& h,
                                   int64_t now) const {
  AttemptEntry e;
  e.number = claimed.attempts + 1;
  e.kind = "lookup";
  e.started_at = a.asked_at ? a.asked_at : now;
  e.ended_at = now;
  e.http_status = a.http_status;
  e.processed = false;  // a read acts on nothing
  switch (a.kind) {
    case Answer::found:
      e.verdict = kLookupFound;
      e.reason = a.provider_status;
      e.money_state = a.money_state;
      break;
    case Answer::not_found: {
      // A row written before rows kept their scope and headers, or a payment
      // POSTed to a path of its own (which may name an account the
      // profile's lookup path does not): the lookup may not have searched
      // the store the payment was made in.
      const bool in_scope = !claimed.scope.empty() && claimed.submission_path.empty();
      // An operation's never proves it absent: its profile searches by no
      // reference (operation_profile), the one ground read_not_found has.
      const NotFoundReading nf = read_not_found(profile_, h, e.started_at, config_.not_found_grace_ms, in_scope);
      e.verdict = nf.proves_absence ? kLookupAbsent : kLookupNotFound;
      e.reason = nf.why;
      break;
    }
    case Answer::failed:
      e.verdict = kLookupFailed;
      e.reason = a.why;
      break;
  }
  e.reason = redact(e.reason, config_.secrets());
  return e;
}

PaymentResult Settler::settle_from(const PaymentRow& claimed, const Answer& a) {
  const int64_t now = clock_.unix_ms();
  const HistoryReading before = read_history(profile_, ledger_.attempts(claimed.order_id));
  const AttemptEntry entry = lookup_entry(claimed, a, before, now);
  const std::string maybe = before.may_have_processed ? "maybe_processed" : "not_sent";
  Settlement s = settlement_of(claimed);
  s.state = PaymentState::unknown;
  s.delivery = maybe;
  switch (a.kind) {
    case Answer::found: {
      s.provider_status = a.provider_status;
      // An operation's lookup by order_id reads its payment (Stripe's
      // PaymentIntent for a capture): that id is the payment's, not the
      // operation's own.
      if (!a.provider_id.empty() && (claimed.operation == OperationKind::create || profile_.lookup.by == LookupBy::provider_id))
        s.provider_payment_id = a.provider_id;
      s.http_status = a.http_status;
      s.money_state = a.money_state;
      if (const std::optional<PaymentState> settled = lookup_status_settles(profile_, a.provider_status)) {
        s.state = *settled;
        // A payment the provider reports failed in words the money block
        // does not map moved no money, as a refused create did not.
        if (s.state == PaymentState::failed) s.money_state = money_of_refusal(s.money_state);
        s.delivery = "delivered";
        s.detail = "settled by query: the provider reports " + a.provider_status;
      } else {
        s.delivery = "maybe_processed";  // the provider has it
        s.detail = "the provider reports " + a.provider_status + "; query again later";
      }
      break;
    }
    case Answer::not_found:
      if (entry.verdict == kLookupAbsent) {
        s.delivery = "not_sent";
        s.detail = "the provider has no such payment: a same-key re-send is safe";
      } else {
        s.detail = "not found, which proves nothing yet: " + entry.reason;
      }
      break;
    case Answer::failed:
      s.detail = "query failed: " + a.why;
      break;
  }
  s.detail = redact(s.detail, config_.secrets());
  s.provider_status = redact(s.provider_status, config_.secrets());
  if (std::optional<std::string> hidden = redact_identifier_if_needed(s.provider_payment_id, config_.secrets()))
    s.provider_payment_id = std::move(*hidden);
  std::string ledger_error;
  try {
    if (!ledger_.settle(claimed.order_id, claimed.lease_owner, &entry, s, now))
      log_.note(kLogWarn, "lease_lost", "payment " + claimed.order_id + " was taken over before the lookup was recorded");
  } catch (const LedgerError& e) {
    ledger_error = e.what();
  }
  PaymentRow after = with_settlement(claimed, s);
  after.lease_owner.clear();
  after.lease_until = 0;
  PaymentResult r = flow_.stored_result(after, s.detail);
  r.from_ledger = false;
  r.queried = true;
  stats_.on_settlement(r.outcome);
  if (!ledger_error.empty()) flow_.mark_unrecorded(r, ledger_error);
  return r;
}

Settler::Finding Settler::look_up_provider_payment(const std::string& provider_id) {
  Finding f;
  if (profile_.lookup.by != LookupBy::provider_id || provider_id.empty()) {
    f.why = "provider " + profile_.name + " does not look payments up by their id";
    return f;
  }
  // A row of nothing but the id: no order, key or headers of its own (the
  // notification names none), no claim (nothing is written).
  PaymentRow row;
  row.provider_payment_id = provider_id;
  row.scope = flow_.scope();
  const Answer a = look_up(row);
  f.kind = a.kind == Answer::found ? Finding::found : a.kind == Answer::not_found ? Finding::not_found : Finding::failed;
  f.provider_status = a.provider_status;
  f.provider_id = a.provider_id.empty() ? provider_id : a.provider_id;
  f.money_state = a.money_state;
  f.body = a.body;
  f.http_status = a.http_status;
  f.why = a.why;
  return f;
}

PaymentRow Settler::apply_kept_events(const PaymentRow& row) {
  if (row.state == PaymentState::in_flight) return row;  // its run settles first
  bool landed = false;
  for (const LedgerEvent& e : ledger_.kept_events(row.scope, row.order_id, row.provider_payment_id))
    if (kept_event_applies(row, e)) landed = ledger_.apply_kept_event(e) || landed;
  if (!landed) return row;
  std::optional<PaymentRow> now = ledger_.get(row.order_id);
  return now ? *now : row;
}

// Only a row that names its provider payment can have its money moved by
// what a lookup says (event_moves_money: the lookup is recorded as an event
// naming that id), and only a money state below `paid` (or unread) moves
// on a read: paid and beyond move by refunds, failed and refunded never.
PaymentResult Settler::refresh_money(const PaymentRow& row) {
  const MoneyState m = row.money_state;
  const bool may_move = m == MoneyState::unknown || m == MoneyState::awaiting_customer || m == MoneyState::pending ||
                        m == MoneyState::authorized;
  const LookupBy by = profile_.lookup.by;
  if (!may_move || row.provider_payment_id.empty() || (by != LookupBy::order_id && by != LookupBy::provider_id))
    return flow_.stored_result(row, {});
  const Answer a = look_up(row);
  if (a.kind != Answer::found) {
    log_.note(kLogInfo, "money_not_refreshed", "payment " + row.order_id + ": " + redact(a.why, config_.secrets()));
    return flow_.stored_result(row, {});
  }
  // The answer must be about the row's own payment: a lookup by reference
  // names it (names_request, found_ids), and its id, when it gives one, is
  // the row's. Where the merchant reference is the payment's identity
  // (WeChat Pay, Alipay: one payment per out_trade_no, ever), the order
  // names it, whatever id each answer knows it by (WeChat Pay's create
  // answers a prepay_id, its lookup a transaction_id).
  if (!a.provider_id.empty() && a.provider_id != row.provider_payment_id &&
      profile_.identity.mode != IdentityMode::reference) {
    log_.note(kLogWarn, "money_not_refreshed",
              "payment " + row.order_id + ": the lookup answered about another payment of the order");
    return flow_.stored_result(row, {});
  }
  // A status the profile reads as failed moved no money, whatever word the
  // money block has for it (as settle_from reads it for an open row).
  MoneyState read = a.money_state;
  if (lookup_status_settles(profile_, a.provider_status) == PaymentState::failed) read = money_of_refusal(read);
  if (!money_moves(m, read)) return flow_.stored_result(row, {});
  // Recorded as the provider's word about this payment, like a webhook's:
  // the ledger moves the money only forward and only for the row whose id
  // the event names, and the same word read again is one event.
  LedgerEvent e;
  e.scope = row.scope;
  // The scheme a Mollie hint's lookup is recorded under too: the same
  // status read by either path is one event.
  e.scheme = profile_.webhook.scheme.empty() ? std::string("lookup") : profile_.webhook.scheme;
  e.event_id = lookup_event_id(row.provider_payment_id, a.provider_status);
  e.order_id = row.order_id;
  e.provider_payment_id = row.provider_payment_id;
  e.received_at = clock_.unix_ms();
  e.entry.kind = "webhook";
  e.entry.verdict = kEventNoted;  // a settled row's outcome never changes
  e.entry.reason = redact(a.provider_status, config_.secrets());
  e.entry.money_state = read;
  e.entry.http_status = a.http_status;
  e.entry.started_at = a.asked_at ? a.asked_at : e.received_at;
  e.entry.ended_at = e.received_at;
  e.entry.provider_request_id = e.event_id;
  e.entry.processed = false;
  try {
    ledger_.record_event(e);
  } catch (const LedgerError& err) {
    // The row as stored stays true; the next query asks again.
    log_.note(kLogError, "ledger_failed", "payment " + row.order_id + ": its money could not be moved: " + err.what());
    return flow_.stored_result(row, {});
  }
  const std::optional<PaymentRow> after = ledger_.get(row.order_id);
  PaymentResult r = flow_.stored_result(after ? *after : row, {});
  r.queried = true;
  return r;
}

PaymentResult Settler::query(const std::string& order_id) {
  const auto found = ledger_.get(order_id);
  if (!found) throw Error(Errc::PAY_ENOTFOUND, "no payment for order " + order_id + " in the ledger");
  flow_.check_scope(*found);  // another client's payment: nothing is asked, nothing said
  if (found->operation != OperationKind::create) return leave_operation(*found);
  // A notification that came while the payment was being sent settles it
  // first: it is the provider's own word, and costs no request.
  const PaymentRow row = apply_kept_events(*found);
  const int64_t now = clock_.unix_ms();
  if (row.state == PaymentState::succeeded || row.state == PaymentState::failed) {
    if (found->state != row.state)
      stats_.on_settlement(row.state == PaymentState::succeeded ? Outcome::succeeded : Outcome::failed,
                           Stats::SettledBy::webhook);
    return refresh_money(row);
  }
  if (row.state == PaymentState::in_flight && row.lease_until >= now)
    return flow_.stored_result(row, "another worker holds this payment");
  const Lookup& lk = profile_.lookup;
  if (lk.by == LookupBy::none) return unchanged(row, "provider " + profile_.name + " offers no status lookup");
  if (lk.by == LookupBy::replay)
    return unchanged(row, "provider " + profile_.name + "'s only lookup is a same-key re-send: reconcile with the body");
  if (!can_look_up(row))
    return unchanged(row, "no provider payment id is known, and provider " + profile_.name + " looks up by id only" +
                              (resend_always_safe(profile_.replay)
                                   ? std::string(": a same-key re-send settles it (reconcile with the body)")
                                   : std::string()));
  const std::optional<PaymentRow> claimed =
      flow_.claim(row, config_.retry.deadline_ms + config_.lease_margin_ms, false);
  if (!claimed) return flow_.stored_result(row, "another worker holds this payment");
  Answer a;
  try {
    a = look_up(*claimed);
  } catch (...) {
    // The lookup failed in a way that is no answer (out of memory): release
    // the row as it was, the taken-over run's possible send recorded.
    ledger_.settle(order_id, claimed->lease_owner, nullptr, settlement_of(*claimed), clock_.unix_ms());
    throw;
  }
  return settle_from(*claimed, a);
}

// An operation's row (a capture, refund or cancel) is never read through
// its payment's lookup, which would take the payment's status for the
// operation's, nor re-sent with a body from body_for: the owner's settler
// for operations (settle_operations_by) looks it up with the operation's
// own lookup. Without one, a dead run's abandoned row is taken over and left
// UNKNOWN, its possible last send recorded.
PaymentResult Settler::leave_operation(const PaymentRow& row) {
  if (settle_operation_) return settle_operation_(row);
  if (row.state == PaymentState::succeeded || row.state == PaymentState::failed) return flow_.stored_result(row, {});
  if (row.state == PaymentState::in_flight && row.lease_until >= clock_.unix_ms())
    return flow_.stored_result(row, "another worker holds this operation");
  return settle_unknown(row, "an operation is settled by its own lookup or by submitting it again with its ref; "
                             "never by a new ref");
}

// This settler's profile is the operation's (operation_profile): its
// lookup asks about the operation, by the id its answer gave or by its
// payment, and what it finds settles the operation's row alone. One that
// cannot be asked stays UNKNOWN until its ref is submitted again.
PaymentResult Settler::settle_operation(const PaymentRow& row) {
  if (row.operation == OperationKind::create) throw Error(Errc::PAY_EINVALID, row.order_id + " is not an operation");
  if (row.state == PaymentState::succeeded || row.state == PaymentState::failed) return flow_.stored_result(row, {});
  if (row.state == PaymentState::in_flight && row.lease_until >= clock_.unix_ms())
    return flow_.stored_result(row, "another worker holds this operation");
  // Its own notification, kept while it was being sent (Adyen's
  // modifications settle only so), before any lookup.
  if (const PaymentRow landed = apply_kept_events(row);
      landed.state == PaymentState::succeeded || landed.state == PaymentState::failed) {
    stats_.on_settlement(landed.state == PaymentState::succeeded ? Outcome::succeeded : Outcome::failed,
                         Stats::SettledBy::webhook);
    return flow_.stored_result(landed, {});
  }
  const Lookup& lk = profile_.lookup;
  const std::string again = "; submitted again with its ref " + row.operation_ref +
                            " (never a new ref) it is re-sent only where its re-send rule allows, else its "
                            "notification or a person settles it";
  if (lk.by == LookupBy::none || lk.by == LookupBy::replay)
    return settle_unknown(row, "provider " + profile_.name + " offers no lookup of this " +
                                   operation_kind_name(row.operation) + again);
  if (!can_look_up(row))
    return settle_unknown(row, std::string("no answer named this ") + operation_kind_name(row.operation) +
                                   " yet, and its lookup asks by that id" + again);
  const std::optional<PaymentRow> claimed =
      flow_.claim(row, config_.retry.deadline_ms + config_.lease_margin_ms, false);
  if (!claimed) return flow_.stored_result(row, "another worker holds this operation");
  Answer a;
  try {
    a = look_up(*claimed);
  } catch (...) {
    ledger_.settle(row.order_id, claimed->lease_owner, nullptr, settlement_of(*claimed), clock_.unix_ms());
    throw;
  }
  return settle_from(*claimed, a);
}

PaymentResult Settler::reconcile_one(const PaymentRow& first, const ReconcileOptions& o) {
  if (first.operation != OperationKind::create) return leave_operation(first);
  // The provider's notifications first: one kept while the payment was in
  // flight may settle it, and a settled payment is never re-sent.
  PaymentRow row = apply_kept_events(first);
  if (row.state == PaymentState::succeeded || row.state == PaymentState::failed) {
    stats_.on_settlement(row.state == PaymentState::succeeded ? Outcome::succeeded : Outcome::failed,
                         Stats::SettledBy::webhook);
    return flow_.stored_result(row, {});
  }
  if (can_look_up(row)) {
    PaymentResult res = query(row.order_id);
    if (res.outcome != Outcome::unknown) return res;
    // Still unknown. A lookup that proved "no payment" makes a re-send safe;
    // read the row and its history again to see.
    const auto again = ledger_.get(row.order_id);
    if (!again) throw LedgerError("ledger: payment " + row.order_id + " disappeared");
    row = *again;
    if (row.state != PaymentState::unknown) return flow_.stored_result(row, {});
  }
  std::vector<AttemptEntry> history = ledger_.attempts(row.order_id);
  // A dead run's possible last send is recorded when its row is taken over;
  // until then, count it here.
  if (row.state == PaymentState::in_flight) history.push_back(unrecorded_send(row.attempts + 1, row.lease_until));
  const HistoryReading h = read_history(profile_, history);
  if (clock_.unix_ms() >= row.key_expires_at) {
    stats_.on_reconcile_left("key_expired");
    return settle_unknown(row, "idempotency key expired and provider " + profile_.name +
                                   " cannot be asked about this payment: settle it by a webhook or by hand");
  }
  if (!h.resend_safe) {
    stats_.on_reconcile_left("resend_unsafe");
    return settle_unknown(row, h.why + "; " + flow_.settle_hint());
  }
  // A re-send would get the provider's final answer again, pass after pass:
  // only a lookup, a webhook or a person can tell what happened.
  if (h.final_answer) {
    stats_.on_reconcile_left("final_answer");
    return settle_unknown(row, h.final_why + ", and a same-key re-send would get that answer again: " +
                                   flow_.settle_hint());
  }
  std::optional<std::string> body = o.body_for ? o.body_for(row.order_id) : std::nullopt;
  if (!body) {
    stats_.on_reconcile_left("no_body");
    return settle_unknown(row, "settling needs a same-key re-send, and the application gave no body for this order");
  }
  SubmitRequest req;
  req.order_id = row.order_id;
  req.body = *body;
  req.idempotency_key = row.idempotency_key;
  req.headers = submission_headers_of(row);  // part of the fingerprint, and of the scope at the provider
  req.path = row.submission_path;            // likewise: "" is the client's create path
  // Checks the fingerprint, claims the row, re-reads the history under the
  // claim, and resumes with the stored key only if that is still safe.
  PaymentResult r = flow_.submit(req);
  if (!r.from_ledger) stats_.on_settlement(r.outcome, Stats::SettledBy::resend);
  return r;
}

ReconcileReport Settler::reconcile(const ReconcileOptions& o) {
  ReconcileReport report;
  const int64_t now = clock_.unix_ms();
  const int64_t before = o.older_than_ms > 0 ? now - o.older_than_ms : 0;
  // This client's payments only: on a ledger shared by the clients of
  // several merchant accounts, another's payment is theirs to settle (its
  // key is new in this account, and a lookup here would not find it).
  std::vector<std::optional<std::string>> scopes = {flow_.scope()};
  if (config_.adopt_unscoped_rows) scopes.emplace_back(std::string());
  std::vector<PaymentRow> rows;
  for (const auto& scope : scopes) {
    for (PaymentRow& r : ledger_.list(PaymentState::unknown, before, o.limit, scope)) rows.push_back(std::move(r));
    for (PaymentRow& r : ledger_.list(PaymentState::in_flight, before, o.limit, scope))
      if (r.lease_until < now) rows.push_back(std::move(r));  // abandoned by a dead worker
  }
  for (const PaymentRow& row : rows) {
    ++report.examined;
    try {
      report.results.push_back(reconcile_one(row, o));
    } catch (const std::exception& e) {
      report.errors.emplace_back(row.order_id, redact(e.what(), config_.secrets()));
    }
  }
  return report;
}

std::string ReconcileReport::to_json() const {
  JsonPtr root(cJSON_CreateObject());
  if (!root) throw std::bad_alloc();
  json_add(root.get(), "examined", examined);
  int counts[5] = {0, 0, 0, 0, 0};
  for (const PaymentResult& r : results) ++counts[static_cast<int>(r.outcome)];
  for (Outcome o : {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress})
    json_add(root.get(), outcome_name(o), counts[static_cast<int>(o)]);
  json_add(root.get(), "errors", static_cast<int>(errors.size()));
  cJSON* list = cJSON_AddArrayToObject(root.get(), "payments");
  if (!list) throw std::bad_alloc();
  for (const PaymentResult& r : results) {
    cJSON* item = cJSON_Parse(r.to_json().c_str());
    if (!item) throw std::bad_alloc();
    cJSON_AddItemToArray(list, item);
  }
  cJSON* errs = cJSON_AddArrayToObject(root.get(), "failures");
  if (!errs) throw std::bad_alloc();
  for (const auto& [order, why] : errors) {
    cJSON* e = cJSON_CreateObject();
    if (!e) throw std::bad_alloc();
    cJSON_AddItemToArray(errs, e);
    json_add(e, "order_id", order);
    json_add(e, "error", why);
  }
  return json_print(root.get());
}

}  // namespace payretry
