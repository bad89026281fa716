// The PostgreSQL ledger's schema: its versions, the migration to each, and
// what ledger_meta keeps of the fingerprint secret.
#pragma once
#include <string>

#include "ledger_postgres_errors.hpp"
#include "ledger_postgres_session.hpp"

namespace payretry {
namespace pg {

// Brings the schema to the version this code knows, one step per
// transaction under an advisory lock; refuses a schema newer than that.
void migrate(Session& s, const ErrorReporter& errors);

// The effective fingerprint secret: the override, else the stored one
// (created once, by whichever process gets there first). ledger_meta also
// keeps a check value of the effective secret, written by the first open
// (or the first after this check existed): a client whose secret differs
// would compute other fingerprints for the same requests, and is refused.
std::string load_secret(Session& s, const std::string& secret_override, const ErrorReporter& errors);

}  // namespace pg
}  // namespace payretry
