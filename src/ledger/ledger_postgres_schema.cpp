#include "ledger_postgres_schema.hpp"

#include "fingerprint.hpp"

namespace payretry {
namespace pg {

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
};
static_assert(sizeof kMigrations / sizeof kMigrations[0] == kSchemaVersion, "one migration per version");

std::string secret_check(const std::string& secret) {
  return request_fingerprint(secret, "payretry-ledger-secret-check", "v1", "");
}
const char* const kSecretMismatch =
    "ledger: the secret differs from the one this ledger's fingerprints were made with; every client of one ledger "
    "must use the same ledger.secret";

}  // namespace pg
}  // namespace payretry
