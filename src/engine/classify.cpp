#include "classify.hpp"

#include <cJSON.h>
#include <strings.h>

#include <optional>

#include "json_path.hpp"
#include "json_util.hpp"

namespace payretry {
namespace {

// The transport classes a rule can name, for one failed attempt. A failure
// after the request may have been written is a timeout or, whatever libcurl
// called it (a reset, an HTTP/2 stream closed uncleanly, a weird reply, an
// answer too large to read, a blocked replay), connection_lost: so a
// profile's rule for those two classes catches every such failure, and none
// falls through to a more permissive rule behind it.
bool transport_matches(const std::string& want, const TransportResult& t, bool malformed_2xx) {
  if (want == "malformed_2xx") return malformed_2xx;
  if (t.failure == TransportFailure::none) return false;
  if (want == "any_failure") return true;
  const bool timed_out = t.failure == TransportFailure::timeout || t.failure == TransportFailure::connect_timeout;
  if (want == "not_sent") return !t.request_written && t.failure != TransportFailure::tls_verify;
  if (want == "tls_verify") return t.failure == TransportFailure::tls_verify;
  if (want == "timeout") return timed_out;
  if (want == "connection_lost") return t.request_written && !timed_out && t.failure != TransportFailure::tls_verify;
  return false;
}

bool equals_nocase(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool matches(const Matcher& m, const TransportResult& t, const cJSON* body, bool malformed_2xx) {
  if (!m.transport.empty()) {
    if (!transport_matches(m.transport, t, malformed_2xx)) return false;
  } else if (t.failure != TransportFailure::none || malformed_2xx) {
    return false;  // response rules never match a failed or unreadable attempt
  }
  if (!m.status.empty()) {
    if (t.failure != TransportFailure::none) return false;
    bool in = false;
    for (const auto& [lo, hi] : m.status) in = in || (t.response.status >= lo && t.response.status <= hi);
    if (!in) return false;
  }
  for (const auto& [name, value] : m.headers) {
    const std::string* got = t.response.header(name);
    if (!got || (value != "*" && !equals_nocase(*got, value))) return false;
  }
  if (!m.code_path.empty()) {
    if (!body) return false;
    bool hit = false;
    for (const std::string& v : json_path_strings(body, m.code_path))
      for (const std::string& c : m.codes) hit = hit || v == c;
    if (!hit) return false;
  }
  return true;
}

std::string default_reason(const TransportResult& t, bool malformed_2xx) {
  if (malformed_2xx) return "malformed_2xx";
  if (t.failure != TransportFailure::none) return transport_failure_name(t.failure);
  return "http_" + std::to_string(t.response.status);
}

// The provider's own error code, for the outcome's explanation.
std::string provider_code(const cJSON* body) {
  if (!body) return {};
  for (const char* path : {"$.error.code", "$.code", "$.errors[0].code", "$.errorCode", "$.*_response.sub_code"}) {
    if (std::optional<std::string> v = json_path_first_string(body, path)) return std::move(*v);
  }
  return {};
}

}  // namespace

bool rule_matches(const Matcher& m, const TransportResult& t) {
  JsonPtr body;
  bool malformed_2xx = false;
  if (t.failure == TransportFailure::none) {
    body.reset(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
    malformed_2xx = t.response.status >= 200 && t.response.status < 300 && (!body || !cJSON_IsObject(body.get()));
  }
  return matches(m, t, body.get(), malformed_2xx);
}

Classification classify(const Profile& profile, const TransportResult& t) {
  JsonPtr body;
  if (t.failure == TransportFailure::none)
    body.reset(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
  return classify(profile, t, body.get());
}

Classification classify(const Profile& profile, const TransportResult& t, const cJSON* body) {
  // A 2xx we cannot read may hide a charge; only a same-key retry (whose
  // replay tells us what happened) or a query can find out.
  const bool malformed_2xx = t.failure == TransportFailure::none && t.response.status >= 200 &&
                             t.response.status < 300 && (!body || !cJSON_IsObject(body));
  for (const Rule& rule : profile.classify) {
    if (!matches(rule.when, t, body, malformed_2xx)) continue;
    Classification c;
    c.verdict = rule.verdict;
    c.reason = rule.reason.empty() ? default_reason(t, malformed_2xx) : rule.reason;
    if (c.verdict != Verdict::success) c.provider_code = provider_code(body);
    // Unless the rule says otherwise, an answer means the request arrived
    // and may have been acted on; a transport failure knows for itself.
    c.may_have_processed = rule.processed.value_or(t.failure == TransportFailure::none ? true : t.request_written);
    return c;
  }
  // No rule knows this answer: never guess, settle it by query.
  Classification c;
  c.verdict = Verdict::query;
  c.reason = default_reason(t, malformed_2xx) + "_unclassified";
  c.may_have_processed = t.failure == TransportFailure::none || t.request_written;
  c.provider_code = provider_code(body);
  return c;
}

}  // namespace payretry
