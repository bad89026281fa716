// The PostgreSQL ledger: for fleets of hosts sharing one database. Every
// rule that keeps a payment single (one row per order, one key per order,
// one lease holder) is a unique constraint or a conditional UPDATE inside
// the server, so it holds across any number of processes on any number of
// hosts; nothing relies on a lock inside this process.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "ledger.hpp"

namespace payretry {

// `conninfo_url` is a libpq connection URI ("postgresql://user@host:5432/db?sslmode=verify-full")
// or a key=value conninfo string; a password holding a raw '@' (or '/')
// is read up to the last '@' before the host. `secret_override`, when not
// empty, keys fingerprints instead of the secret stored in the database
// (and is not stored); every client of one ledger must use the same
// effective secret, or opening fails. `timeout_ms` bounds every wait for
// the server: one call returns or throws within 2 x timeout_ms (see the
// comment above PostgresLedger for what each part gets). Lease ends are
// stored and compared on the server's clock, and given to callers on
// theirs. Throws LedgerError; no message ever holds the password.
std::unique_ptr<Ledger> open_postgres_ledger(const std::string& conninfo_url, const std::string& secret_override,
                                             int64_t timeout_ms = 5000);

// The same, with the client's wall clock (Unix ms) that the server's clock
// is measured against given instead of the system's: for tests of skewed
// clocks. The `now` values a caller passes should come from the same clock.
std::unique_ptr<Ledger> open_postgres_ledger_with_clock(const std::string& conninfo_url,
                                                        const std::string& secret_override, int64_t timeout_ms,
                                                        std::function<int64_t()> client_clock);

// `text` with passwords of connection strings masked: "user:pass@" in URIs,
// "password=..." in conninfo strings and URI queries, and every occurrence
// of `password` itself when it is given.
std::string redact_conninfo(std::string_view text, std::string_view password = {});

}  // namespace payretry
