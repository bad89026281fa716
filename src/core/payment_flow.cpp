#include "payment_flow.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "error.hpp"
#include "fingerprint.hpp"
#include "amount_reading.hpp"
#include "history.hpp"
#include "redact.hpp"
#include "scope.hpp"

namespace payretry {
namespace {

// What the fingerprint covers besides the method and the body: the path and,
// when the submission carries its own headers, those too. A Stripe-Account
// scopes the key and the charge to another account, so the same key sent
// without it (by reconcile, which does not know it, or by a re-submission
// that forgot it) would be a new charge there: such a send must mismatch and
// send nothing. Names case-folded and sorted, so their order does not count;
// the traceparent is not part of what is charged. No headers: the path
// alone, as for every row written before submission headers existed.
std::string fingerprinted_target(const std::string& path, const Headers& headers) {
  if (headers.empty()) return path;
  std::vector<std::string> lines;
  lines.reserve(headers.size());
  for (const auto& [name, value] : headers) {
    std::string line;
    line.reserve(name.size() + 1 + value.size());
    for (unsigned char c : name) line.push_back(static_cast<char>(std::tolower(c)));
    line.append(":").append(value);
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  std::string target = path;  // a checked path holds no line feed: the parts cannot run together
  for (const std::string& l : lines) target.append("\n").append(l);
  return target;
}

AttemptEntry entry_of(const AttemptRecord& a) {
  AttemptEntry e;
  e.number = static_cast<int>(a.number);
  e.kind = "send";
  e.processed = a.may_have_processed;
  e.started_at = a.started_unix_ms;
  e.ended_at = a.started_unix_ms + a.elapsed_ms;
  e.http_status = a.http_status;
  e.transport_error = a.transport_error;
  e.verdict = a.verdict;
  e.reason = a.reason;
  e.delay_ms = a.delay_ms;
  e.provider_request_id = a.provider_request_id;
  e.replayed = a.replayed;
  return e;
}

PaymentState state_of(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return PaymentState::succeeded;
    case Outcome::failed: return PaymentState::failed;
    default: return PaymentState::unknown;
  }
}

Settlement settlement_of(const PaymentResult& r) {
  Settlement s;
  s.state = state_of(r.outcome);
  s.delivery = delivery_name(r.delivery);
  s.detail = r.error;
  s.provider_payment_id = r.provider_payment_id;
  s.provider_status = r.provider_status;
  s.http_status = r.http_status;
  s.money_state = r.money_state;
  return s;
}

constexpr int64_t kPollMs = 50;
// Marks the tokens of claims that never send (lookups, settling back).
constexpr std::string_view kNoSendSuffix = "/lookup";

bool claim_may_send(std::string_view token) {
  return !(token.size() >= kNoSendSuffix.size() && token.substr(token.size() - kNoSendSuffix.size()) == kNoSendSuffix);
}
// A merchant reference (WeChat Pay, Alipay) never expires.
constexpr int64_t kForever = int64_t(1) << 62;

}  // namespace

PaymentFlow::PaymentFlow(Engine& engine, Ledger& ledger, const Config& config, Clock& clock, Sleeper& sleeper,
                         KeySource& keys, Stats& stats, AttemptLog& log, std::string owner, std::string scope)
    : engine_(engine), ledger_(ledger), config_(config), clock_(clock), sleeper_(sleeper), keys_(keys),
      stats_(stats), log_(log), owner_(std::move(owner)), scope_(std::move(scope)), fingerprint_(ledger.secret()) {}

void PaymentFlow::check_scope(const PaymentRow& row) const {
  if (std::string why = scope_refusal(row.scope, scope_, config_, row.order_id); !why.empty())
    throw Error(Errc::PAY_EMISMATCH, why);
}

PaymentResult PaymentFlow::from_ledger(const PaymentRow& row, const std::string& why) {
  PaymentResult r;
  r.from_ledger = true;
  r.order_id = row.order_id;
  r.idempotency_key = row.idempotency_key;
  r.http_status = row.http_status;
  r.provider_payment_id = row.provider_payment_id;
  r.provider_status = row.provider_status;
  r.money_state = row.money_state;
  switch (row.state) {
    case PaymentState::succeeded: r.outcome = Outcome::succeeded; break;
    case PaymentState::failed: r.outcome = Outcome::failed; break;
    case PaymentState::in_flight: r.outcome = Outcome::in_progress; break;
    default: r.outcome = Outcome::unknown; break;
  }
  r.delivery = row.delivery == "delivered"   ? Delivery::delivered
               : row.delivery == "not_sent"  ? Delivery::not_sent
                                             : Delivery::maybe_processed;
  r.error = why.empty() ? row.detail : why;
  log_.outcome(r);
  return r;
}

// A worker died holding a payment whose key has since expired: the key can no
// longer be re-sent, so the claimed row becomes UNKNOWN (maybe processed, it
// was in flight) for a query to settle, and leaves the IN_FLIGHT state that
// would otherwise report IN_PROGRESS forever.
PaymentResult PaymentFlow::expire(const PaymentRow& row) {
  return release(row, Delivery::maybe_processed, "idempotency key expired: settle this payment by query");
}

// Settles a claimed row back to UNKNOWN without sending, saying why.
PaymentResult PaymentFlow::release(const PaymentRow& row, Delivery delivery, const std::string& why) {
  Settlement s = settlement_of(row);
  s.state = PaymentState::unknown;
  s.delivery = delivery_name(delivery);
  s.detail = redact(why, config_.secrets());
  ledger_.settle(row.order_id, row.lease_owner, nullptr, s, clock_.unix_ms());
  PaymentRow after = with_settlement(row, s);
  after.lease_owner.clear();
  after.lease_until = 0;
  return from_ledger(after, s.detail);
}

std::string PaymentFlow::new_fence(bool sends) {
  return owner_ + "#" + std::to_string(++claims_) + (sends ? "" : std::string(kNoSendSuffix));
}

std::optional<PaymentRow> PaymentFlow::claim(const PaymentRow& row, int64_t lease_ms, bool sends) {
  const int64_t now = clock_.unix_ms();
  // Taking over a sending run's lease marks this claim as one that may have
  // sent too, even when it only looks up: should the entry below fail to be
  // written (or this process die first), the next taker still records the
  // dead run's possible send.
  const bool dead_run_sent = row.state == PaymentState::in_flight && claim_may_send(row.lease_owner);
  const std::string fence = new_fence(sends || dead_run_sent);
  if (!ledger_.claim(row.order_id, fence, now, now + lease_ms)) return std::nullopt;
  // The row as claimed, read again: a webhook event may have landed between
  // the caller's read and the claim (Ledger::record_event), adding an entry
  // (the run numbers its own after it) or a provider id. None lands on it
  // while it is claimed.
  PaymentRow claimed = row;
  if (std::optional<PaymentRow> now_row = ledger_.get(row.order_id); now_row && now_row->lease_owner == fence)
    claimed = std::move(*now_row);
  claimed.state = PaymentState::in_flight;
  claimed.lease_owner = fence;
  claimed.lease_until = now + lease_ms;
  // A run died holding the payment (its lease ran out). Its last send, if it
  // made one, was never recorded: write it down as possibly processed with
  // an unknown answer before anything else, so that the history (and every
  // later decision) knows it.
  if (dead_run_sent) {
    const AttemptEntry lost = unrecorded_send(claimed.attempts + 1, row.lease_until);
    if (!ledger_.record_attempt(row.order_id, fence, lost)) return std::nullopt;  // taken again meanwhile
    claimed.attempts = lost.number;
    log_.note(kLogWarn, "run_abandoned",
              "payment " + row.order_id + ": a run ended holding it; its last send may have been processed");
  }
  return claimed;
}

PaymentFlow::Admission PaymentFlow::admit(const SubmitRequest& req) {
  JsonPtr parsed_body;
  engine_.validate(req, &parsed_body);
  const std::string path = engine_.path_for(req);
  const RetryPolicy& policy = config_.retry;
  const int64_t deadline_ms = req.deadline_ms > 0 ? std::min(req.deadline_ms, policy.deadline_ms) : policy.deadline_ms;
  Admission a;
  a.parsed_body = std::move(parsed_body);
  a.lease_ms = deadline_ms + config_.lease_margin_ms;
  a.fence = new_fence(true);
  const int64_t now = clock_.unix_ms();
  PaymentRow& proposed = a.proposed;
  proposed.order_id = req.order_id;
  // The key is made when the payment task is created and committed with it,
  // before anything is sent; every later attempt and process reuses it.
  a.own_key = engine_.identity_key(req, a.parsed_body.get());
  proposed.idempotency_key = a.own_key.empty() ? keys_.new_key() : a.own_key;
  // A generated key must fit the profile too, before it is committed (the
  // rest of the request passed validate() above).
  if (a.own_key.empty()) engine_.check_key(proposed.idempotency_key);
  proposed.fingerprint = fingerprint_("POST", fingerprinted_target(path, req.headers), req.body);
  // Whose payment it is, and the headers every lookup and re-send of it
  // must carry (they may scope the provider's store).
  proposed.scope = scope_;
  proposed.submission_headers = headers_to_json(req.headers);
  proposed.submission_path = req.path;
  // What the payment asks, where the profile reads it: the amount its
  // captures and refunds are held to (operation_rules.hpp). Not read (a
  // body of hand-written form fields, a profile with no reader): -1, and
  // only one whole capture or refund is allowed.
  if (!engine_.profile().amount.path.empty()) {
    JsonPtr own;
    const cJSON* doc = a.parsed_body.get();
    if (!doc) {
      own.reset(cJSON_ParseWithLength(req.body.data(), req.body.size()));
      doc = own.get();
    }
    std::string unread;
    if (doc) proposed.amount = read_amount(engine_.profile().amount, doc, unread).value_or(-1);
  }
  // Never re-send a key the provider may have forgotten: stop a margin short.
  const int64_t retention = config_.key_retention_ms.value_or(kForever);
  proposed.key_expires_at = retention >= kForever ? kForever : now + retention - std::min<int64_t>(3600000, retention / 10);
  return a;
}

PaymentFlow::Decision PaymentFlow::decide(const Admission& adm, PaymentRow row, bool created, int64_t wait_until) {
  Decision d;
  if (created) {
    d.kind = Decision::run;
    d.row = std::move(row);
    return d;
  }
  // Another client's payment (another merchant account on a shared
  // ledger): its key means nothing in this client's account, and this
  // client's lookups would search the wrong store. Nothing sent.
  check_scope(row);
  if (row.fingerprint != adm.proposed.fingerprint)
    throw Error(Errc::PAY_EMISMATCH, "order " + row.order_id +
                                         " was first submitted with other parameters (body, path or submission "
                                         "headers); nothing sent");
  if (!adm.own_key.empty() && adm.own_key != row.idempotency_key)
    throw Error(Errc::PAY_EMISMATCH, "order " + row.order_id + " already has its own idempotency key; nothing sent");

  const int64_t now = clock_.unix_ms();
  auto answer = [&](PaymentResult r) {
    stats_.on_ledger_answer(r.outcome);
    d.kind = Decision::answer;
    d.result = std::move(r);
    return d;
  };
  // Claims the row, then reads its whole history under the claim (no other
  // run can add to it now): resume only when that is safe.
  auto claim_and_run = [&] {
    std::optional<PaymentRow> claimed = claim(row, adm.lease_ms, true);
    if (!claimed) return d;  // someone else took it: re-read
    // A resumed run must end before the provider may forget its key, with
    // room for at least one attempt; otherwise only a query may settle it.
    if (claimed->key_expires_at - clock_.unix_ms() < config_.retry.min_attempt_ms) return answer(expire(*claimed));
    const HistoryReading h = read_history(engine_.profile(), ledger_.attempts(row.order_id));
    if (!h.resend_safe) return answer(release(*claimed, Delivery::maybe_processed, h.why + "; " + settle_hint()));
    d.kind = Decision::run;
    d.row = std::move(*claimed);
    d.resumed = true;
    d.prior_may_have_processed = h.may_have_processed;
    d.prior_cleared_by_lookup = h.cleared_by_lookup;
    return d;
  };
  d.kind = Decision::reread;
  switch (row.state) {
    case PaymentState::succeeded:
    case PaymentState::failed:
      return answer(from_ledger(row, {}));
    case PaymentState::unknown:
      // Past the provider's retention a same-key retry could create a
      // second payment: only a query may settle it now.
      if (now >= row.key_expires_at) return answer(from_ledger(row, "idempotency key expired: settle this payment by query"));
      return claim_and_run();
    case PaymentState::pending:
      return claim_and_run();
    case PaymentState::in_flight:
      if (row.lease_until < now) return claim_and_run();
      if (clock_.now_ms() >= wait_until) return answer(from_ledger(row, "another worker holds this payment"));
      d.kind = Decision::wait;
      d.wait_ms = std::min<int64_t>(kPollMs, wait_until - clock_.now_ms());
      return d;
  }
  return d;
}

namespace {
// The blocking driver's ledger writes, each timed for the commit-latency
// histogram (the concurrent engine times its group commits).
template <class Write>
auto timed_write(Stats& stats, Write&& write) {
  struct Observe {
    Stats& stats;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    ~Observe() {
      stats.on_ledger_commit(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count());
    }
  } observe{stats};
  return write();
}
}  // namespace

PaymentResult PaymentFlow::submit(const SubmitRequest& req) {
  // In flight from here to the answer, whatever the way out.
  struct InFlight {
    Stats& stats;
    explicit InFlight(Stats& s) : stats(s) { stats.payment_started(); }
    ~InFlight() { stats.payment_ended(); }
  } in_flight(stats_);
  const Admission adm = admit(req);
  const int64_t now = clock_.unix_ms();
  Ledger::CreateOutcome created = timed_write(
      stats_, [&] { return ledger_.create_and_claim(adm.proposed, adm.fence, now, now + adm.lease_ms); });
  if (created.key_taken)
    throw Error(Errc::PAY_EMISMATCH, "idempotency key " + adm.proposed.idempotency_key + " already belongs to another order");

  return go_on(req, adm, std::move(created.row), created.created);
}

PaymentResult PaymentFlow::go_on(const SubmitRequest& req, const Admission& adm, PaymentRow row, bool fresh) {
  const int64_t wait_until = clock_.now_ms() + config_.in_progress_wait_ms;
  for (;;) {
    Decision d = decide(adm, std::move(row), fresh, wait_until);
    switch (d.kind) {
      case Decision::run: return run(req, d, adm.parsed_body.get());
      case Decision::answer: return std::move(d.result);
      case Decision::wait: sleeper_.sleep_ms(d.wait_ms); break;
      case Decision::reread: break;
    }
    const std::string& order_id = adm.proposed.order_id;
    auto again = ledger_.get(order_id);
    if (!again) throw LedgerError("ledger: payment " + order_id + " disappeared");
    row = std::move(*again);
    fresh = false;
  }
}

SubmitRequest PaymentFlow::resume_request(const SubmitRequest& req, const Decision& d) const {
  const PaymentRow& row = d.row;
  SubmitRequest r = req;
  r.idempotency_key = row.idempotency_key;
  r.first_attempt = static_cast<unsigned>(row.attempts) + 1;
  // Read from the history: a final 4xx after an earlier send that may have
  // been processed is no proof that nothing was charged.
  r.prior_may_have_processed = d.resumed && d.prior_may_have_processed;
  r.prior_cleared_by_lookup = d.resumed && d.prior_cleared_by_lookup;
  r.before_retry = nullptr;
  // The run ends in time to settle within its lease (a payment may wait in
  // the concurrent engine's queue after its claim) and before the provider
  // may forget its key: an attempt after that could charge a second time.
  const int64_t now = clock_.unix_ms();
  int64_t left = req.deadline_ms > 0 ? std::min(req.deadline_ms, config_.retry.deadline_ms) : config_.retry.deadline_ms;
  if (row.lease_until > 0) left = std::min(left, row.lease_until - config_.lease_margin_ms - now);
  if (row.key_expires_at < kForever) left = std::min(left, row.key_expires_at - now);
  r.deadline_ms = std::max<int64_t>(left, 1);  // 1: no time for an attempt; 0 would mean the config's
  // Too little time left is an UNKNOWN result, not a failed call (an earlier
  // run may have charged); and admit() validated req, whose body, path and
  // headers r keeps: the run checks only the row's key.
  r.from_ledger_flow = true;
  r.lease_until_unix = row.lease_until;
  r.claim = row.lease_owner;
  return r;
}

Settlement PaymentFlow::failed_call(const PaymentRow& row, bool prior_may_have_processed, const Error& e) const {
  // The call failed (a hook, a mismatch): leave the row resumable, and
  // honest about whether anything may have reached the provider. Only a
  // mismatch comes from the provider's answer; the others stop before a send.
  Settlement s = payretry::settlement_of(row);
  s.state = PaymentState::unknown;
  s.delivery = (e.code() == Errc::PAY_EMISMATCH || prior_may_have_processed) ? "maybe_processed" : "not_sent";
  s.detail = redact(e.what(), config_.secrets());
  return s;
}

Settlement PaymentFlow::settlement_of_result(const PaymentResult& r) { return settlement_of(r); }
AttemptEntry PaymentFlow::entry_of_attempt(const AttemptRecord& a) { return entry_of(a); }

PaymentResult PaymentFlow::run(const SubmitRequest& req, const Decision& d, const cJSON* parsed_body) {
  const PaymentRow& row = d.row;
  const std::string& fence = row.lease_owner;
  SubmitRequest r = resume_request(req, d);
  r.parsed_body = parsed_body;
  r.before_retry = [this, &row, &fence](const AttemptRecord& a) -> Recorded {
    try {
      return timed_write(stats_, [&] { return ledger_.record_attempt(row.order_id, fence, entry_of(a)); })
                 ? Recorded{}
                 : Recorded{Recorded::lease_lost, {}};
    } catch (const LedgerError& e) {
      return Recorded{Recorded::store_failed, e.what()};
    }
  };

  PaymentResult result;
  try {
    result = engine_.submit(r);
  } catch (const Error& e) {
    ledger_.settle(row.order_id, fence, nullptr, failed_call(row, r.prior_may_have_processed, e), clock_.unix_ms());
    throw;
  }
  if (result.outcome == Outcome::in_progress) return result;  // lease lost: the new owner settles
  // The row's money state moves forward only (the ledger applies the same
  // rule in the settle): what this run read cannot take back what a lookup
  // or an event had already established.
  result.money_state = money_after(row.money_state, result.money_state);
  // The last attempt goes with the settlement unless the record step before
  // a backoff already wrote it (the run then ended without sending again).
  const bool last_unwritten = !result.attempts.empty() && !result.attempts.back().recorded;
  const AttemptEntry last = last_unwritten ? entry_of(result.attempts.back()) : AttemptEntry{};
  try {
    if (!timed_write(stats_, [&] {
          return ledger_.settle(row.order_id, fence, last_unwritten ? &last : nullptr, settlement_of(result),
                                clock_.unix_ms());
        }))
      lost_at_settle(result);
  } catch (const LedgerError& e) {
    // The request went out: the caller gets what the provider said, marked
    // as not durably recorded, never an error that reads as "not sent".
    mark_unrecorded(result, e.what());
  }
  return result;
}

void PaymentFlow::lost_at_settle(PaymentResult& r) const {
  log_.note(kLogWarn, "lease_lost", "payment " + r.order_id + " was taken over before it could be settled");
  // Another run holds the payment now and may have sent it since: this run's
  // "no charge" speaks for its own request only, so it is not the answer.
  // (A success stays one: the provider charged under this key.)
  if (r.outcome == Outcome::failed) {
    r.outcome = Outcome::in_progress;
    r.delivery = Delivery::maybe_processed;
    r.money_state = MoneyState::unknown;
    r.error = "another worker took this payment over before its decline could be recorded; ask the ledger";
  }
}

void PaymentFlow::mark_unrecorded(PaymentResult& r, const std::string& why) const {
  if (r.ledger_error.empty()) r.ledger_error = redact(why, config_.secrets());
  // A decline the ledger does not hold is not final: the row stays IN_FLIGHT
  // and a later run may send the payment again, after the caller, told
  // FAILED, made a new order. Reported UNKNOWN, with the provider's words.
  if (r.outcome == Outcome::failed) {
    r.outcome = Outcome::unknown;
    r.delivery = Delivery::maybe_processed;
    r.money_state = MoneyState::unknown;
    r.error = redact("declined (" + r.error + "), but the decline is not durably recorded", config_.secrets());
  }
  log_.note(kLogError, "ledger_failed",
            "payment " + r.order_id + ": " + r.ledger_error + "; the result (" + outcome_name(r.outcome) +
                ") is not durably recorded");
}

std::string PaymentFlow::settle_hint() const {
  const LookupBy by = engine_.profile().lookup.by;
  return by == LookupBy::order_id || by == LookupBy::provider_id ? "never re-sent: settle it by a lookup (query), a webhook or by hand"
                                                 : "never re-sent: settle it by a webhook or by hand";
}

}  // namespace payretry
