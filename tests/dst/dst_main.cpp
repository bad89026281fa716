// Deterministic simulation of payment fault schedules. Each seed is one
// schedule; a failure prints the single line that replays it.
//
//   payretry_dst --seed 0 --count 100000          (CI runs this in slices)
//   payretry_dst --seed 0 --count 5000000         (the long form)
//   payretry_dst --seed N --count 1 --verbose     (replay one schedule)
//   payretry_dst --profile random --count 10000   (providers drawn from the profile schema)
//   payretry_dst --profile alipay --signer-every 1  (every schedule with the real signer;
//                                                  --no-cross-order: no answer of another order)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

#include "world.hpp"

int main(int argc, char** argv) {
  uint64_t start = 0, count = 1000;
  payretry::dst::Options opt;
#ifdef PAYRETRY_TEST_KEYS
  opt.keys_dir = PAYRETRY_TEST_KEYS;
#endif
  bool sqlite = true;
  uint64_t max_failures = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") start = std::strtoull(value(), nullptr, 10);
    else if (a == "--count") count = std::strtoull(value(), nullptr, 10);
    else if (a == "--verbose") opt.verbose = true;
    else if (a == "--sqlite-every") opt.sqlite_every = std::strtoull(value(), nullptr, 10);
    else if (a == "--no-sqlite") sqlite = false;
    else if (a == "--sabotage") opt.sabotage = value();
    else if (a == "--short-retention") opt.short_retention = true;
    else if (a == "--profile") opt.profile = value();
    else if (a == "--driver") opt.driver = value();
    else if (a == "--engines") opt.engines = std::atoi(value());
    else if (a == "--signer-every") opt.signer_every = std::strtoull(value(), nullptr, 10);
    else if (a == "--no-answer-faults") opt.answer_faults = false;
    else if (a == "--cross-order") opt.cross_order = true;
    else if (a == "--no-cross-order") opt.cross_order = false;
    else if (a == "--keys-dir") opt.keys_dir = value();
    else if (a == "--max-failures") max_failures = std::strtoull(value(), nullptr, 10);
    else if (a == "--webhook-tie") opt.webhook_tie = true;
    else if (a == "--webhook-foreign-open") opt.webhook_foreign_open = true;
    else if (a == "--webhooks") {
      const std::string v = value();
      opt.webhooks = v == "always" ? 1 : v == "never" ? 0 : -1;
    }
    else {
      std::fprintf(stderr,
                   "usage: %s [--seed N] [--count N] [--verbose] [--sqlite-every N] [--no-sqlite] [--sabotage "
                   "rekey|forget] [--short-retention] [--profile NAME|random] [--driver blocking|concurrent] "
                   "[--engines N] [--signer-every N] [--no-answer-faults] [--no-cross-order] [--keys-dir DIR] "
                   "[--webhooks drawn|always|never] [--webhook-tie] [--webhook-foreign-open] [--max-failures N]\n",
                   argv[0]);
      return 2;
    }
  }

  namespace fs = std::filesystem;
  fs::path dir;
  if (sqlite) {
    // SQLite ledgers on tmpfs when there is one: the schedules test the
    // ledger's logic, and an fsync per commit on a disk would make them the
    // whole run time. (The crash tests exercise durability on a real disk.)
    std::error_code shm_ec;
    const fs::path base = fs::is_directory("/dev/shm", shm_ec) && access("/dev/shm", W_OK) == 0
                              ? fs::path("/dev/shm")
                              : fs::temp_directory_path();
    std::string tmpl = (base / "payretry-dst.XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      return 2;
    }
    dir = tmpl;
    opt.sqlite_dir = dir.string();
  }

  // What the replay line must repeat for the schedule to be the same one.
  std::string pinned;
  if (!opt.profile.empty()) pinned += " --profile " + opt.profile;
  if (!opt.driver.empty()) pinned += " --driver " + opt.driver;
  if (!sqlite) pinned += " --no-sqlite";
  if (opt.short_retention) pinned += " --short-retention";
  if (!opt.sabotage.empty()) pinned += " --sabotage " + opt.sabotage;
  if (opt.engines > 0) pinned += " --engines " + std::to_string(opt.engines);
  if (opt.signer_every != payretry::dst::Options{}.signer_every)
    pinned += " --signer-every " + std::to_string(opt.signer_every);
  if (!opt.answer_faults) pinned += " --no-answer-faults";
  if (!opt.cross_order) pinned += " --no-cross-order";
  if (opt.webhook_tie) pinned += " --webhook-tie";
  if (opt.webhook_foreign_open) pinned += " --webhook-foreign-open";
  if (opt.webhooks >= 0) pinned += opt.webhooks ? " --webhooks always" : " --webhooks never";
  if (opt.sqlite_every != payretry::dst::Options{}.sqlite_every)
    pinned += " --sqlite-every " + std::to_string(opt.sqlite_every);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t failures = 0;
  for (uint64_t seed = start; seed < start + count; ++seed) {
    if (auto v = payretry::dst::run_schedule(seed, opt)) {
      ++failures;
      std::printf("DST FAIL seed=%llu invariant=%s (%s) reproduce: %s --seed %llu --count 1 --verbose%s\n",
                  static_cast<unsigned long long>(seed), v->invariant.c_str(), v->detail.c_str(), argv[0],
                  static_cast<unsigned long long>(seed), pinned.c_str());
      std::fflush(stdout);
      if (failures >= max_failures) break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("DST %s: seeds [%llu, %llu), %llu failing, %.1f s\n", failures ? "FAILED" : "passed",
              static_cast<unsigned long long>(start), static_cast<unsigned long long>(start + count),
              static_cast<unsigned long long>(failures), secs);
  const auto& t = payretry::dst::tally;
  std::printf("DST exercised: %llu schedules (%llu on SQLite), %llu sends, %llu backoff sleeps (%llu under a "
              "Retry-After floor), %llu crashes, %llu racing workers (%llu lease takeovers), %llu orders charged, "
              "%llu UNKNOWN and %llu FAILED results\n"
              "DST exercised: %llu lookups, %llu reconcile passes, %llu sends refused at the gate, %llu ledger faults, "
              "%llu results flagged not recorded, %llu stalls, %llu second runs of one client, %llu pauses in the "
              "request hook\n",
              (unsigned long long)t.schedules, (unsigned long long)t.sqlite, (unsigned long long)t.sends,
              (unsigned long long)t.sleeps, (unsigned long long)t.retry_after_floors, (unsigned long long)t.crashes,
              (unsigned long long)t.races, (unsigned long long)t.takeovers, (unsigned long long)t.charged,
              (unsigned long long)t.unknown, (unsigned long long)t.failed, (unsigned long long)t.lookups,
              (unsigned long long)t.reconciles, (unsigned long long)t.refused_at_the_gate,
              (unsigned long long)t.ledger_faults, (unsigned long long)t.flagged_results, (unsigned long long)t.stalls,
              (unsigned long long)t.same_client_runs, (unsigned long long)t.hook_pauses);
  std::printf("DST exercised: %llu random profiles, %llu schedules with the built-in signers (%llu forged, %llu stale "
              "and %llu cross-order answers), %llu with several engines, %llu prunes (%llu rows), %llu queries "
              "(%llu followed by a resubmit, %llu \"not found\" that proved nothing)\n",
              (unsigned long long)t.random_profiles, (unsigned long long)t.signer_schedules,
              (unsigned long long)t.forged_answers, (unsigned long long)t.stale_answers,
              (unsigned long long)t.cross_order_answers, (unsigned long long)t.multi_engine_schedules,
              (unsigned long long)t.prunes, (unsigned long long)t.rows_pruned, (unsigned long long)t.queries,
              (unsigned long long)t.resubmits_after_query, (unsigned long long)t.not_found_unproven);
  std::printf("DST exercised: %llu schedules with several merchant accounts on one ledger (%llu calls and %llu "
              "reconciles by another account's client), %llu orders with their own store header, %llu with their "
              "own path; %llu OAuth2 schedules, %llu token requests (%llu hung, %llu failed; %llu handed to the "
              "runner, %llu run by a blocking caller), %llu tokens revoked, %llu 401 answers; %llu payments reconcile "
              "left to a lookup after the provider's final answer; latest concurrent answer %lld ms after its "
              "deadline\n",
              (unsigned long long)t.tenant_schedules, (unsigned long long)t.other_scope_calls,
              (unsigned long long)t.other_scope_reconciles, (unsigned long long)t.orders_with_headers,
              (unsigned long long)t.orders_with_paths, (unsigned long long)t.oauth2_schedules,
              (unsigned long long)t.token_requests, (unsigned long long)t.token_hangs,
              (unsigned long long)t.token_errors, (unsigned long long)t.queued_fetches,
              (unsigned long long)t.fetches_run_by_a_caller, (unsigned long long)t.tokens_revoked,
              (unsigned long long)t.unauthorized_answers, (unsigned long long)t.reconcile_left_final_answer,
              t.latest_answer_ms == INT64_MIN ? 0LL : (long long)t.latest_answer_ms);
  std::printf("DST exercised: %llu schedules with webhooks, %llu notifications delivered (%llu answered 2xx, %llu 4xx, "
              "%llu 5xx; %llu while the payment was in flight, %llu before its row existed, %llu dropped), %llu "
              "duplicates, %llu replays, %llu forged, %llu stale, %llu of another merchant, %llu to another account, "
              "%llu of payments made elsewhere (%llu declines to an open row without an id, %llu in another connected account), %llu ledger faults under them; events: %llu settled, %llu kept (%llu "
              "landed later), %llu duplicate, %llu conflicts, %llu ignored; %llu payments settled by webhook\n",
              (unsigned long long)t.webhook_schedules, (unsigned long long)t.notes, (unsigned long long)t.notes_2xx,
              (unsigned long long)t.notes_4xx, (unsigned long long)t.notes_5xx,
              (unsigned long long)t.notes_while_in_flight, (unsigned long long)t.notes_before_row,
              (unsigned long long)t.notes_dropped, (unsigned long long)t.duplicate_notes,
              (unsigned long long)t.replayed_notes, (unsigned long long)t.forged_notes,
              (unsigned long long)t.stale_notes, (unsigned long long)t.not_ours_notes,
              (unsigned long long)t.misrouted_notes, (unsigned long long)t.foreign_notes,
              (unsigned long long)t.foreign_declines_to_open_rows, (unsigned long long)t.foreign_other_account,
              (unsigned long long)t.webhook_ledger_faults, (unsigned long long)t.events_settled,
              (unsigned long long)t.events_kept, (unsigned long long)t.kept_applied_later,
              (unsigned long long)t.events_duplicate, (unsigned long long)t.events_conflict,
              (unsigned long long)t.events_ignored, (unsigned long long)t.settled_by_webhook);
  std::printf("DST exercised: money: %llu payments waited for their customer (%llu paid later, %llu abandoned), %llu "
              "were held (%llu captured later, %llu voided); rows ended %llu awaiting_customer, %llu authorized, %llu "
              "paid, %llu failed; %llu queries of settled payments (%llu lookups, holding nothing), %llu of which moved the money\n",
              (unsigned long long)t.payments_waiting, (unsigned long long)t.customers_paid,
              (unsigned long long)t.customers_abandoned, (unsigned long long)t.payments_held,
              (unsigned long long)t.holds_captured, (unsigned long long)t.holds_voided,
              (unsigned long long)t.rows_awaiting, (unsigned long long)t.rows_authorized,
              (unsigned long long)t.rows_paid, (unsigned long long)t.rows_money_failed,
              (unsigned long long)t.settled_queries, (unsigned long long)t.settled_lookups,
              (unsigned long long)t.money_refreshed);
  std::printf("DST exercised: operations: %llu refund calls (%llu sends), %llu UNKNOWN, %llu succeeded, %llu failed, "
              "%llu refused before any byte, %llu refused as a mismatch; %llu queries of operation rows, %llu "
              "operation lookups sent, %llu UNKNOWNs settled by a query or reconcile; %llu UNKNOWNs knew no id (%llu "
              "after the provider made the refund: its answer lost), %llu of them settled, learning it (by their "
              "key where the lookup lists actions)\n",
              (unsigned long long)t.operations, (unsigned long long)t.operation_sends,
              (unsigned long long)t.operations_unknown, (unsigned long long)t.operations_succeeded,
              (unsigned long long)t.operations_failed, (unsigned long long)t.operations_refused,
              (unsigned long long)t.operations_mismatched, (unsigned long long)t.operation_queries,
              (unsigned long long)t.operation_lookups, (unsigned long long)t.operations_settled_by_lookup,
              (unsigned long long)t.operations_unknown_without_id, (unsigned long long)t.operations_lost_answer,
              (unsigned long long)t.operations_id_learned_by_key);
  std::printf("DST exercised: operation notifications: %llu delivered, %llu never sent; their events settled %llu "
              "operation rows and were kept %llu times; %llu refunds made elsewhere\n",
              (unsigned long long)t.operation_notes, (unsigned long long)t.op_notes_never_sent,
              (unsigned long long)t.operation_events_settled, (unsigned long long)t.operation_events_kept,
              (unsigned long long)t.refunds_elsewhere);
  for (const auto& [which, n] : t.by_profile_driver)
    std::printf("DST schedules %s: %llu\n", which.c_str(), (unsigned long long)n);
  if (!dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return failures ? 1 : 0;
}
