#include "ledger_postgres_errors.hpp"

namespace payretry {
namespace pg {

ErrorReporter::ErrorReporter(const ConnectionUrl& url) : passwords_(url.passwords), where_(url.where) {}

std::string ErrorReporter::redact(const std::string& text) const { return redact_passwords(text, passwords_); }

std::string ErrorReporter::message(const std::string& op, const std::string& why) const {
  return redact("ledger (postgresql " + where_ + "): " + op + ": " + why);
}

LedgerError ErrorReporter::error(const std::string& op, const std::string& why) const {
  return LedgerError(message(op, why));
}

void ErrorReporter::unavailable(const std::string& op, const std::string& why) const {
  throw Unavailable(message(op, why));
}

std::string ErrorReporter::describe(const PgFailure& f) const {
  if (f.timed_out)
    return f.message + "; the server is stalled, paused or unreachable (the connection was abandoned, never reused)";
  const std::string& s = f.sqlstate;
  std::string why;
  auto starts = [&](const char* prefix) { return s.rfind(prefix, 0) == 0; };
  if (s == "25006") why = "the server refuses writes (read-only transaction: a standby, or default_transaction_read_only)";
  else if (s == "53100") why = "the database server's disk is full";
  else if (starts("53")) why = "the database server is out of resources";
  else if (s == "57P01" || s == "57P02") why = "the server is shutting down or restarting";
  else if (s == "57P03") why = "the server is starting up or shutting down and refuses connections";
  else if (s == "57014") why = "the server cancelled the statement (statement_timeout)";
  else if (s == "55P03") why = "a lock stayed held by another session beyond lock_timeout";
  else if (starts("23")) why = "a constraint of the ledger schema was violated (unexpected)";
  else if (s == "42P01") why = "the ledger tables are missing";
  else if (starts("08") || f.broken) why = "lost the connection to the server";
  std::string msg = why.empty() ? f.message : why + ": " + f.message;
  if (!s.empty()) msg += " [SQLSTATE " + s + "]";
  return msg;
}

void ErrorReporter::raise(const std::string& op, const PgFailure& f) const {
  if (f.broken || f.timed_out) unavailable(op, describe(f));
  throw error(op, describe(f));
}

std::string ErrorReporter::strip(const std::string& m) const {
  const std::string head = "ledger (postgresql " + where_ + "): ";
  std::string s = m.rfind(head, 0) == 0 ? m.substr(head.size()) : m;
  if (const size_t colon = s.find(": "); colon != std::string::npos && colon < 40) s = s.substr(colon + 2);
  return s;
}

}  // namespace pg
}  // namespace payretry
