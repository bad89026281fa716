// The PostgreSQL ledger's connection URL: made into what libpq reads as
// meant, and described for messages without its password.
#pragma once
#include <string>
#include <vector>

namespace payretry {
namespace pg {

struct ConnectionUrl {
  std::string url;                     // what libpq is given
  std::string where;                   // host:port/dbname, for messages (redacted)
  std::vector<std::string> passwords;  // every form of the password, for redaction
};

// Throws LedgerError when libpq cannot parse `written`, without echoing a
// password.
ConnectionUrl read_connection_url(const std::string& written);

// `text` with every form of the password in `passwords`, and whatever
// redact_conninfo finds, masked.
std::string redact_passwords(const std::string& text, const std::vector<std::string>& passwords);

}  // namespace pg
}  // namespace payretry
