#include "ledger_postgres_url.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <regex>
#include <string_view>

#include "ledger.hpp"
#include "ledger_postgres.hpp"
#include "ledger_postgres_session.hpp"

namespace payretry {
namespace pg {
namespace {

bool is_uri(const std::string& u) { return u.rfind("postgresql://", 0) == 0 || u.rfind("postgres://", 0) == 0; }

// host[:port][,host[:port]]... with numeric ports, as libpq reads an authority.
bool plain_hostlist(const std::string& a) {
  if (a.find('@') != std::string::npos) return false;
  if (a.find('[') != std::string::npos) return true;  // IPv6 literals: left to libpq
  size_t at = 0;
  while (at <= a.size()) {
    size_t end = a.find(',', at);
    if (end == std::string::npos) end = a.size();
    const std::string piece = a.substr(at, end - at);
    if (const size_t colon = piece.find(':'); colon != std::string::npos)
      if (piece.find_first_not_of("0123456789", colon + 1) != std::string::npos) return false;
    at = end + 1;
  }
  return true;
}

std::string pct_encode(const std::string& s) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c == '@' || c == '/' || c == '?' || c == '#') {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 0xF]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// A URI whose password (or user name) holds a raw '@' or '/', as people
// write them, made into what libpq reads as meant. libpq ends the user info
// at the FIRST '@' (and sees none when a '/' comes first), so
// "postgresql://app:p@ss@db/pay" would connect to host "ss@db" and put
// "ss" in its messages. When libpq's reading cannot be right (its host
// holds an '@' or a non-numeric port, or its database name a '/'), the user
// info ends instead at the LAST '@' (before any '?') that a plain host list
// follows, and is percent-encoded. `raw_password` gets the password as
// written, for redaction.
std::string normalize_url(const std::string& url, std::string& raw_password) {
  if (!is_uri(url)) return url;
  const size_t scheme_end = url.find("://") + 3;
  const std::string rest = url.substr(scheme_end);
  auto host_part = [&](size_t from) {
    const size_t end = rest.find_first_of("/?", from);
    return rest.substr(from, end == std::string::npos ? std::string::npos : end - from);
  };
  const size_t first_at = rest.find('@'), first_slash = rest.find('/');
  const bool has_info = first_at != std::string::npos && first_at < first_slash;
  const size_t host_from = has_info ? first_at + 1 : 0;
  const size_t host_end = rest.find_first_of("/?", host_from);
  bool broken = !plain_hostlist(host_part(host_from));
  if (host_end != std::string::npos && rest[host_end] == '/') {
    const size_t q = rest.find('?', host_end);
    const std::string path = rest.substr(host_end + 1, q == std::string::npos ? std::string::npos : q - host_end - 1);
    if (path.find('/') != std::string::npos) broken = true;
  }
  size_t at = has_info ? first_at : std::string::npos;
  if (broken) {
    const size_t q = rest.find('?');
    at = std::string::npos;
    for (size_t i = q == std::string::npos ? rest.size() : q; i-- > 0;)
      if (rest[i] == '@' && plain_hostlist(host_part(i + 1))) {
        at = i;
        break;
      }
  }
  if (at == std::string::npos) return url;
  const std::string info = rest.substr(0, at);
  const size_t colon = info.find(':');
  if (colon != std::string::npos) raw_password = info.substr(colon + 1);
  if (!broken) return url;
  const std::string user = info.substr(0, colon);
  std::string fixed = url.substr(0, scheme_end) + pct_encode(user);
  if (colon != std::string::npos) fixed += ":" + pct_encode(raw_password);
  return fixed + rest.substr(at);
}

// Where the ledger lives, for messages: host:port/dbname, never the password.
struct Target {
  std::string where;
  std::string password;
};

Target describe_target(const std::string& url) {
  Target t;
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (!opts) {
    PQfreemem(err);
    t.where = "?";
    return t;
  }
  std::string host, hostaddr, port, db;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    const std::string k = o->keyword;
    if (k == "host") host = o->val;
    else if (k == "hostaddr") hostaddr = o->val;
    else if (k == "port") port = o->val;
    else if (k == "dbname") db = o->val;
    else if (k == "password") t.password = o->val;
  }
  PQconninfoFree(opts);
  t.where = !host.empty() ? host : !hostaddr.empty() ? hostaddr : "local socket";
  if (!port.empty()) t.where += ":" + port;
  if (!db.empty()) t.where += "/" + db;
  return t;
}

// libpq's own check of the URL; its complaint, when it has one, without
// a password.
void check_url(const std::string& original, const ConnectionUrl& c) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(c.url.c_str(), &err);
  if (opts) {
    PQconninfoFree(opts);
    return;
  }
  std::string why = err ? one_line(err) : "out of memory";
  PQfreemem(err);
  // libpq quotes fragments of the URL it could not parse; a password may
  // be among them, so they are only shown when the URL holds none.
  if (!c.passwords.empty() || redact_conninfo(original) != original)
    why = "details withheld because the URL holds a password";
  throw LedgerError("ledger (postgresql): the connection URL cannot be parsed: " + redact_passwords(why, c.passwords));
}

}  // namespace

ConnectionUrl read_connection_url(const std::string& written) {
  ConnectionUrl c;
  std::string raw_password;
  c.url = normalize_url(written, raw_password);
  const Target t = describe_target(c.url);
  for (const std::string& p : {t.password, raw_password, pct_encode(raw_password)})
    if (!p.empty() && std::find(c.passwords.begin(), c.passwords.end(), p) == c.passwords.end())
      c.passwords.push_back(p);
  c.where = redact_passwords(t.where, c.passwords);
  check_url(written, c);
  return c;
}

std::string redact_passwords(const std::string& text, const std::vector<std::string>& passwords) {
  std::string s = text;
  for (const std::string& p : passwords) s = redact_conninfo(s, p);
  return redact_conninfo(s);
}

}  // namespace pg

std::string redact_conninfo(std::string_view text, std::string_view password) {
  std::string s(text);
  if (!password.empty()) {
    for (size_t at = s.find(password); at != std::string::npos; at = s.find(password, at + 3))
      s.replace(at, password.size(), "***");
  }
  // URI userinfo: scheme://user:secret@host, up to the LAST '@' of the
  // token (a password may hold a raw '@' or '/').
  static const std::regex userinfo(R"(([A-Za-z][A-Za-z0-9+.\-]*://[^:/?#@\s]*):[^\s]*@)");
  s = std::regex_replace(s, userinfo, "$1:***@");
  // password=... in conninfo strings ('quoted' or bare) and URI queries.
  static const std::regex keyval(R"((password\s*=\s*)((?:'(?:[^'\\]|\\.)*')+|[^\s&'"]*))", std::regex::icase);
  s = std::regex_replace(s, keyval, "$1***");
  return s;
}

}  // namespace payretry
