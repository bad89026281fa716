// One simulated schedule: the real PaymentFlow, Engine, concurrent engines,
// Settler, Ledger and (for a share of seeds) the built-in WeChat Pay and
// Alipay authenticators, driven by a seeded fault schedule against a
// modelled provider (a built-in profile's, or one drawn at random from the
// profile schema), with process crashes, racing workers and runs of one
// client, a ledger that fails and is pruned, queries, resubmits and
// reconcile between and after runs, and the payment invariants checked
// throughout.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace payretry::dst {

struct Options {
  bool verbose = false;
  std::string sqlite_dir;     // where SQLite ledgers live; empty: memory only
  uint64_t sqlite_every = 50; // every Nth seed runs on SQLite
  // The provider every schedule uses: a built-in profile's name, "random"
  // (a wire drawn from the profile schema and a truthful profile written
  // from it); empty: one per seed.
  std::string profile;
  // "blocking" (pay_submit's threaded path), "concurrent" (the concurrent
  // engines, driven turn by turn through their transport seam); empty: one
  // per seed.
  std::string driver;
  // Concurrent schedules run this many engines over one flow and ledger
  // (0: one to three, drawn per seed).
  int engines = 0;
  // Every Nth seed of a provider that signs (wechatpay_v3, alipay) runs the
  // library's own authenticator, with real RSA signatures checked and made
  // by the provider model (0: never; the others sign through the request
  // hook's stand-in). RSA costs about a millisecond a signature, two a
  // request: a signer schedule costs 40 times another.
  uint64_t signer_every = 50;
  // With the real signers: answers the provider never signed as they
  // arrive (a broken signature, one older than five minutes), drawn now
  // and then; and, with cross_order, a genuinely signed answer of another
  // order of the schedule replayed for this one.
  bool answer_faults = true;
  bool cross_order = true;
  // Where the test keys are (tests/keys).
  std::string keys_dir;
  // Breaks the client on purpose, to prove the invariants can fail:
  // "rekey" sends a run's retries with another key; "forget" restarts a
  // crashed process on an empty ledger.
  std::string sabotage;
  // Lets schedules give keys a retention shorter than a run can last (the
  // provider then forgets a key while a resumed run may still re-send it).
  bool short_retention = false;
  // The provider's notifications (webhooks): -1 drawn per schedule (a
  // share of the schedules of the built-in providers that send them), 0
  // never, 1 in every schedule of such a provider.
  int webhooks = -1;
  // A payment made elsewhere may be notified in the very millisecond its
  // order's row is made (the row then looks as old as the event). On since
  // W1 was fixed (docs/reliability.md).
  bool webhook_tie = true;
  // A payment made elsewhere may be notified while the order's row is open
  // and names another payment (kept; the row may lose its id later). On
  // since W2 was fixed.
  bool webhook_foreign_open = true;
};

// What the schedules exercised, summed over a run of seeds.
struct Tally {
  uint64_t schedules = 0, sqlite = 0, sends = 0, sleeps = 0, retry_after_floors = 0, crashes = 0, races = 0,
           takeovers = 0, same_client_runs = 0, charged = 0, unknown = 0, failed = 0, lookups = 0, reconciles = 0,
           refused_at_the_gate = 0, ledger_faults = 0, flagged_results = 0, stalls = 0, hook_pauses = 0;
  uint64_t random_profiles = 0, signer_schedules = 0, multi_engine_schedules = 0, forged_answers = 0,
           stale_answers = 0, cross_order_answers = 0, prunes = 0, rows_pruned = 0, queries = 0,
           resubmits_after_query = 0, not_found_unproven = 0;
  // Several merchant accounts on one ledger, and OAuth2.
  uint64_t tenant_schedules = 0, other_scope_calls = 0, other_scope_reconciles = 0, orders_with_headers = 0,
           orders_with_paths = 0, oauth2_schedules = 0, token_requests = 0, token_hangs = 0, token_errors = 0,
           queued_fetches = 0, fetches_run_by_a_caller = 0, tokens_revoked = 0, unauthorized_answers = 0,
           reconcile_left_final_answer = 0;
  // Webhooks: schedules with notifications, notifications delivered and
  // how they were answered, the kinds drawn, and what their events did.
  uint64_t webhook_schedules = 0, notes = 0, notes_2xx = 0, notes_4xx = 0, notes_5xx = 0, forged_notes = 0,
           stale_notes = 0, not_ours_notes = 0, misrouted_notes = 0, foreign_notes = 0, replayed_notes = 0,
           duplicate_notes = 0, notes_while_in_flight = 0, notes_before_row = 0, foreign_declines_to_open_rows = 0,
           foreign_other_account = 0,
           webhook_ledger_faults = 0,
           events_settled = 0, events_kept = 0, events_duplicate = 0, events_conflict = 0, events_ignored = 0,
           settled_by_webhook = 0, kept_applied_later = 0, notes_dropped = 0;
  // Money: payments drawn waiting for their customer or held, what their
  // customers and merchants did later, and the money states the rows
  // ended in.
  uint64_t payments_waiting = 0, payments_held = 0, customers_paid = 0, customers_abandoned = 0, holds_captured = 0,
           holds_voided = 0, rows_awaiting = 0, rows_authorized = 0, rows_paid = 0, rows_money_failed = 0,
           settled_queries = 0, money_refreshed = 0, settled_lookups = 0;
  // Refunds (issue 47): asked, answered UNKNOWN (and asked again), succeeded,
  // refused before any byte, refused as a mismatch, and their sends.
  uint64_t operations = 0, operations_unknown = 0, operations_succeeded = 0, operations_refused = 0,
           operations_mismatched = 0, operation_sends = 0;
  // An UNKNOWN operation settled by its own lookup: queries of operation
  // rows, the operations' own lookups sent (by queries and reconcile),
  // FAILED results, and calls that ended once a query or reconcile settled the row.
  uint64_t operation_queries = 0, operation_lookups = 0, operations_failed = 0, operations_settled_by_lookup = 0;
  // UNKNOWNs whose row knew no id of the provider's (the answer was lost or
  // nothing was sent), and those a query or reconcile then settled,
  // learning the id (Checkout.com: from the listed action carrying the key).
  // Of the former, those whose refund the provider had made (its answer was lost).
  uint64_t operations_unknown_without_id = 0, operations_id_learned_by_key = 0, operations_lost_answer = 0;
  // The refunds' own notifications: delivered, never sent (dropped), their
  // events read by an operation block that settled a row or were kept, and
  // refunds the merchant made elsewhere (its dashboard).
  uint64_t operation_notes = 0, op_notes_never_sent = 0, operation_events_settled = 0, operation_events_kept = 0,
           refunds_elsewhere = 0;
  // The latest a concurrent payment was answered after its deadline, in
  // the engine's own time (ms; the invariant's bound is 250).
  int64_t latest_answer_ms = INT64_MIN;
  std::map<std::string, uint64_t> by_profile_driver;  // "stripe/concurrent" -> schedules
};
extern Tally tally;

struct Violation {
  std::string invariant;
  std::string detail;
};

// Runs schedule `seed`; nullopt when every invariant held.
std::optional<Violation> run_schedule(uint64_t seed, const Options& opt);

}  // namespace payretry::dst
