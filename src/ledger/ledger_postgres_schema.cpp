#include "ledger_postgres_schema.hpp"

#include <libpq-fe.h>

#include <cstdlib>
#include <optional>

#include "fingerprint.hpp"

namespace payretry {
namespace pg {
namespace {

constexpr int kSchemaVersion = 6;
// pg_advisory_xact_lock key ("payretry" in ASCII) that serialises schema
// migrations, so that processes opening a fresh database at once do not race.
constexpr const char* kMigrationLockKey = "8097887137224225401";

// Each step brings the schema from version i to i+1; never edit a shipped
// step, append a new one.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE payments (
  order_id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING','IN_FLIGHT','SUCCEEDED','FAILED','UNKNOWN')),
  delivery TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL DEFAULT '',
  provider_payment_id TEXT NOT NULL DEFAULT '',
  provider_status TEXT NOT NULL DEFAULT '',
  http_status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  key_expires_at BIGINT NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until BIGINT NOT NULL DEFAULT 0,
  updated_at BIGINT NOT NULL);
CREATE INDEX payments_state_updated ON payments (state, updated_at);
CREATE TABLE attempts (
  order_id TEXT NOT NULL REFERENCES payments (order_id),
  number INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms BIGINT NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed BOOLEAN NOT NULL,
  PRIMARY KEY (order_id, number));
)sql",
    // 2: lookups join the history, and each send says whether the provider
    // may have acted on it (NULL for older entries: read as "may have").
    R"sql(
ALTER TABLE attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'send';
ALTER TABLE attempts ADD COLUMN processed BOOLEAN;
)sql",
    // 3: a row names the scope of the client that made it ('' for the rows
    // made before: unscoped) and keeps the payment's own submission headers
    // and path, all set once by the create (a column with a constant default is
    // added without rewriting the table). Reconcile lists the open rows of
    // one scope, oldest first: the index finds them without reading other
    // scopes' rows, in the list's order (order_id in byte order, as the list
    // sorts it), so a page stops at its limit. Building it holds off writes
    // for as long as it takes; IF NOT EXISTS lets an operator of a large
    // ledger build it beforehand with CREATE INDEX CONCURRENTLY under this
    // name and definition.
    R"sql(
ALTER TABLE payments ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_headers TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN submission_path TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS payments_state_scope_updated
  ON payments (state, scope, updated_at, order_id COLLATE "C");
)sql",
    // 4: webhook events, "apply once": one row per (scope, scheme, event
    // id), holding only the id, what it names and its history entry (never
    // a body, a header or a signature). applied_to is the order whose
    // history holds the entry, '' while the event is kept for later. An
    // event may name only the provider's payment id: payments are found by
    // it within a scope. Prune finds the events of the rows it deletes by
    // applied_to, and the old kept ones by ('', received_at). Building
    // payments_scope_provider holds off writes while it runs; IF NOT EXISTS
    // lets an operator of a large ledger build it beforehand CONCURRENTLY.
    R"sql(
CREATE TABLE webhook_events (
  scope TEXT NOT NULL,
  scheme TEXT NOT NULL,
  event_id TEXT NOT NULL,
  order_id TEXT NOT NULL,
  provider_payment_id TEXT NOT NULL,
  received_at BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL,
  http_status INTEGER NOT NULL,
  transport_error TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  delay_ms BIGINT NOT NULL,
  provider_request_id TEXT NOT NULL,
  replayed BOOLEAN NOT NULL,
  kind TEXT NOT NULL,
  processed BOOLEAN,
  applied_to TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (scope, scheme, event_id));
CREATE INDEX webhook_events_applied ON webhook_events (applied_to, received_at);
CREATE INDEX webhook_events_kept_order ON webhook_events (scope, order_id) WHERE applied_to = '';
CREATE INDEX webhook_events_kept_provider ON webhook_events (scope, provider_payment_id) WHERE applied_to = '';
CREATE INDEX IF NOT EXISTS payments_scope_provider ON payments (scope, provider_payment_id);
)sql",
    // 5: where the money is (money_state.hpp): the row's state, moved forward
    // only by settlements and by the events provably its payment's, and
    // what each history entry and each stored event read. 'unknown' for
    // everything before: nothing was read then. A constant default adds
    // the columns without rewriting the tables. No CHECK on the names, as
    // in SQLite: states are only appended; the row codec refuses a name it
    // does not know.
    R"sql(
ALTER TABLE payments ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE attempts ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE webhook_events ADD COLUMN money_state TEXT NOT NULL DEFAULT 'unknown';
)sql",
    // 6: operations (operation_rules.hpp): a capture, refund or cancel is a
    // row of its own, naming its payment's order and the caller's ref; ''
    // for the payment's create, which every row before was. amount is the
    // create's asked amount or the operation's decided one, -1 not known
    // (every row before). Constant defaults: no rewrite of the table. The
    // guard reads a payment's operations, and prune a payment's family, by
    // (parent_order_id, operation); building the index holds off writes
    // while it runs, and IF NOT EXISTS lets an operator of a large ledger
    // build it beforehand CONCURRENTLY under this name and definition.
    R"sql(
ALTER TABLE payments ADD COLUMN operation TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN parent_order_id TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN operation_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE payments ADD COLUMN amount BIGINT NOT NULL DEFAULT -1;
CREATE INDEX IF NOT EXISTS payments_parent_operation ON payments (parent_order_id, operation);
)sql",
};
static_assert(sizeof kMigrations / sizeof kMigrations[0] == kSchemaVersion, "one migration per version");

// What ledger_meta keeps of the fingerprint secret: an HMAC of a fixed
// label keyed by it (the same in every backend), never the secret itself
// when it was given by the application.
std::string secret_check(const std::string& secret) {
  return request_fingerprint(secret, "payretry-ledger-secret-check", "v1", "");
}
const char* const kSecretMismatch =
    "ledger: the secret differs from the one this ledger's fingerprints were made with; every client of one ledger "
    "must use the same ledger.secret";

std::optional<int> read_version(Session& s) {
  // pg_class itself, not to_regclass(): a name lookup may answer from this
  // session's catalog cache, which does not yet know the table another
  // process created while this one waited for the migration lock.
  ResultPtr t = exec(s,
                     "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                     "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = 'ledger_meta')");
  if (as_text(t.get(), 0, 0) != "t") return std::nullopt;
  ResultPtr r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'schema_version'");
  if (PQntuples(r.get()) == 0) return std::nullopt;
  const std::string v = as_text(r.get(), 0, 0);
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1000000)
    throw bad_data("ledger_meta holds a malformed schema_version '" + v + "'");
  return static_cast<int>(n);
}

LedgerError too_new(int version, const ErrorReporter& errors) {
  return errors.error("open", "the ledger's schema version " + std::to_string(version) +
                                  " is newer than this payretry knows (" + std::to_string(kSchemaVersion) +
                                  "); upgrade payretry");
}

}  // namespace

void migrate(Session& s, const ErrorReporter& errors) {
  // The common case reads only, so a ledger can be opened (and read)
  // where writes are refused.
  std::optional<int> version = read_version(s);
  if (version && *version > kSchemaVersion) throw too_new(*version, errors);
  while (!version || *version < kSchemaVersion) {
    Tx tx(s);
    exec(s, "SELECT pg_advisory_xact_lock($1::bigint)", Params().add(kMigrationLockKey));
    version = read_version(s);  // another process may have migrated meanwhile
    const int from = version.value_or(0);
    if (from > kSchemaVersion) throw too_new(from, errors);
    if (from == kSchemaVersion) {
      tx.commit();
      break;
    }
    exec_script(s, kMigrations[from]);
    exec(s,
         "INSERT INTO ledger_meta (key, value) VALUES ('schema_version', $1) "
         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
         Params().add(std::to_string(from + 1)));
    tx.commit();
    version = from + 1;
  }
}

std::string load_secret(Session& s, const std::string& secret_override, const ErrorReporter& errors) {
  ResultPtr r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret'");
  if (PQntuples(r.get()) == 0) {
    exec(s, "INSERT INTO ledger_meta (key, value) VALUES ('secret', $1) ON CONFLICT (key) DO NOTHING",
         Params().add(new_ledger_secret()));
    r = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret'");
  }
  const std::string stored = PQntuples(r.get()) == 1 ? as_text(r.get(), 0, 0) : "";
  if (stored.size() != 64 || stored.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw errors.error("open", "the ledger's stored secret is missing or malformed");
  const std::string effective = secret_override.empty() ? stored : secret_override;
  const std::string check = secret_check(effective);
  ResultPtr c = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret_check'");
  if (PQntuples(c.get()) == 0) {
    try {
      exec(s, "INSERT INTO ledger_meta (key, value) VALUES ('secret_check', $1) ON CONFLICT (key) DO NOTHING",
           Params().add(check));
    } catch (const PgFailure& f) {
      if (f.sqlstate == "25006") return effective;  // read-only: the first writable open records it
      throw;
    }
    c = exec(s, "SELECT value FROM ledger_meta WHERE key = 'secret_check'");
  }
  if (PQntuples(c.get()) == 1 && as_text(c.get(), 0, 0) != check) throw LedgerError(kSecretMismatch);
  return effective;
}

}  // namespace pg
}  // namespace payretry
