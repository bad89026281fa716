// One simulated schedule: the real PaymentFlow, Engine, concurrent engine,
// Settler and Ledger driven by a seeded fault schedule against the modelled
// provider of one built-in profile, with process crashes, racing workers and
// runs of one client, a ledger that fails, reconcile and query between and
// after runs, and the payment invariants checked throughout.
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
  // The built-in profile every schedule uses; empty: one per seed.
  std::string profile;
  // "blocking" (pay_submit's threaded path), "concurrent" (the concurrent
  // engine, driven turn by turn through its transport seam); empty: one
  // per seed.
  std::string driver;
  // Breaks the client on purpose, to prove the invariants can fail:
  // "rekey" sends a run's retries with another key; "forget" restarts a
  // crashed process on an empty ledger.
  std::string sabotage;
  // Lets schedules give keys a retention shorter than a run can last (the
  // provider then forgets a key while a resumed run may still re-send it).
  bool short_retention = false;
};

// What the schedules exercised, summed over a run of seeds.
struct Tally {
  uint64_t schedules = 0, sqlite = 0, sends = 0, sleeps = 0, retry_after_floors = 0, crashes = 0, races = 0,
           takeovers = 0, same_client_runs = 0, charged = 0, unknown = 0, failed = 0, lookups = 0, reconciles = 0,
           refused_at_the_gate = 0, ledger_faults = 0, flagged_results = 0, stalls = 0, hook_pauses = 0;
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
