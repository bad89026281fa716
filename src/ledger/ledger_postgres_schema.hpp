// The PostgreSQL ledger's schema: its versions, the migration to each, and
// what ledger_meta keeps of the fingerprint secret.
#pragma once
#include <string>

namespace payretry {
namespace pg {

constexpr int kSchemaVersion = 2;
// pg_advisory_xact_lock key ("payretry" in ASCII) that serialises schema
// migrations, so that processes opening a fresh database at once do not race.
constexpr const char* kMigrationLockKey = "8097887137224225401";

// Each entry brings the schema from version i to i+1.
extern const char* const kMigrations[];

// What ledger_meta keeps of the fingerprint secret: an HMAC of a fixed
// label keyed by it (the same in every backend), never the secret itself
// when it was given by the application.
std::string secret_check(const std::string& secret);
// Why a client whose secret differs is refused.
extern const char* const kSecretMismatch;

}  // namespace pg
}  // namespace payretry
