// The PostgreSQL ledger: for fleets of hosts sharing one database. Every
// rule that keeps a payment single (one row per order, one key per order,
// one lease holder) is a unique constraint or a conditional UPDATE inside
// the server, so it holds across any number of processes on any number of
// hosts; nothing relies on a lock inside this process.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "ledger.hpp"

namespace payretry {

// `conninfo_url` is a libpq connection URI ("postgresql://user@host:5432/db?sslmode=verify-full")
// or a key=value conninfo string. `secret_override`, when not empty, keys
// fingerprints instead of the secret stored in the database (and is not
// stored). Throws LedgerError; no message ever holds the password.
std::unique_ptr<Ledger> open_postgres_ledger(const std::string& conninfo_url, const std::string& secret_override,
                                             int64_t timeout_ms = 5000);

// `text` with passwords of connection strings masked: "user:pass@" in URIs,
// "password=..." in conninfo strings and URI queries, and every occurrence
// of `password` itself when it is given.
std::string redact_conninfo(std::string_view text, std::string_view password = {});

}  // namespace payretry
