// The retry decision for one attempt: what came back -> one verdict
// (docs/design.md "Verdicts"). This is the single place where that decision is made.
#pragma once
#include <cJSON.h>

#include <string>

#include "profile.hpp"
#include "transport.hpp"

namespace payretry {

struct Classification {
  Verdict verdict = Verdict::fail;
  // Short, stable token for logs and counters ("http_503", "timeout", ...).
  std::string reason;
  // Whether this attempt can have led the provider to act on the payment.
  // False only with proof: nothing was written, or the provider answered in
  // a way that means "not processed" (408, 425, 429, a definitive decline).
  bool may_have_processed = false;
  // Provider's error code from the body, when it gave one ("card_declined").
  // Read only for verdicts other than success: it explains a decline or an
  // error, and a success has nothing to explain.
  std::string provider_code;
};

Classification classify(const Profile& profile, const TransportResult& attempt);
// The same, with the response body already parsed (`body`: the parse of
// attempt.response.body, null when there was no response or it is not JSON),
// for a caller that reads the body too: one parse per answer.
Classification classify(const Profile& profile, const TransportResult& attempt, const cJSON* body);

// Whether one matcher matches an answer (used by lookups' "not found").
bool rule_matches(const Matcher& m, const TransportResult& t);

}  // namespace payretry
