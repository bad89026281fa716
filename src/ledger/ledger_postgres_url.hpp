// The PostgreSQL ledger's connection URL: made into what libpq reads as
// meant, and described for messages without its password.
#pragma once
#include <string>

namespace payretry {
namespace pg {

// `s` with the characters that end a URI's user info percent-encoded.
std::string pct_encode(const std::string& s);

// A URI whose password (or user name) holds a raw '@' or '/', as people
// write them, made into what libpq reads as meant. libpq ends the user info
// at the FIRST '@' (and sees none when a '/' comes first), so
// "postgresql://app:p@ss@db/pay" would connect to host "ss@db" and put
// "ss" in its messages. When libpq's reading cannot be right (its host
// holds an '@' or a non-numeric port, or its database name a '/'), the user
// info ends instead at the LAST '@' (before any '?') that a plain host list
// follows, and is percent-encoded. `raw_password` gets the password as
// written, for redaction.
std::string normalize_url(const std::string& url, std::string& raw_password);

// Where the ledger lives, for messages: host:port/dbname, never the password.
struct Target {
  std::string where;
  std::string password;
};

Target describe_target(const std::string& url);

}  // namespace pg
}  // namespace payretry
