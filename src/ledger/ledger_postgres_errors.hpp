// What the PostgreSQL ledger's failures say. Every message names the
// server (host:port/db, never the password) and the call; a failed
// statement's SQLSTATE is put in words an operator can act on; and a
// failure of the store as a whole is told apart from one statement's.
#pragma once
#include <string>
#include <vector>

#include "ledger.hpp"
#include "ledger_postgres_session.hpp"
#include "ledger_postgres_url.hpp"

namespace payretry {
namespace pg {

// A failure of the store as a whole (unreachable, stalled, connection
// lost), as opposed to one statement's: retrying other work at once is
// pointless.
class Unavailable : public LedgerError {
 public:
  using LedgerError::LedgerError;
};

// The messages of one ledger: they all name its server, and no form of its
// password ever shows in one.
class ErrorReporter {
 public:
  explicit ErrorReporter(const ConnectionUrl& url);

  std::string redact(const std::string& text) const;
  std::string message(const std::string& op, const std::string& why) const;
  LedgerError error(const std::string& op, const std::string& why) const;
  [[noreturn]] void unavailable(const std::string& op, const std::string& why) const;
  // A failed statement in words: what it means for the ledger, then the
  // server's own message and its SQLSTATE.
  std::string describe(const PgFailure& f) const;
  // Throws `f` as Unavailable when the connection broke or timed out, else
  // as a LedgerError.
  [[noreturn]] void raise(const std::string& op, const PgFailure& f) const;
  // A nested message without its "ledger (postgresql ...): op: " prefix.
  std::string strip(const std::string& m) const;

 private:
  std::vector<std::string> passwords_;  // every form of the password, for redaction
  std::string where_;
};

}  // namespace pg
}  // namespace payretry
