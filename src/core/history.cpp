#include "history.hpp"

namespace payretry {
namespace {

// The verdicts after which the profile itself sends the payment again with
// the same key: the profile's own word that such a re-send is safe.
bool profile_resends_after(const std::string& verdict) {
  return verdict == "retry" || verdict == "retry_after_backoff" || verdict == "in_progress";
}

std::string describe(const AttemptEntry& e) {
  if (e.verdict == kUnrecordedSend) return "a run ended holding the payment, and its last send was never recorded";
  std::string what = e.http_status ? "HTTP " + std::to_string(e.http_status) : e.transport_error;
  if (!e.reason.empty() && e.reason != what) what += what.empty() ? e.reason : " (" + e.reason + ")";
  return "attempt " + std::to_string(e.number) + " (" + what + ") may have been processed";
}

}  // namespace

HistoryReading read_history(const Profile& profile, const std::vector<AttemptEntry>& history) {
  HistoryReading h;
  bool forbidding = false;
  for (const AttemptEntry& e : history) {
    if (e.kind == "lookup") {
      // A lookup that proved no payment exists clears every send before it:
      // none of them was processed.
      if (e.verdict == kLookupAbsent) {
        h.may_have_processed = false;
        forbidding = false;
        h.why.clear();
      }
      continue;
    }
    if (!e.processed.value_or(true)) continue;
    h.may_have_processed = true;
    h.last_possible_send = std::max(h.last_possible_send, e.ended_at);
    if (!profile_resends_after(e.verdict)) {
      forbidding = true;
      h.why = describe(e);
    }
  }
  h.resend_safe = !forbidding || resend_always_safe(profile.replay);
  if (h.resend_safe) h.why.clear();
  else
    h.why += ", and provider " + profile.name + " may run a same-key re-send again (replay " +
             replay_kind_name(profile.replay) + ")";
  return h;
}

AttemptEntry unrecorded_send(int number, int64_t lease_until) {
  AttemptEntry e;
  e.number = number;
  e.kind = "send";
  e.started_at = lease_until;
  e.ended_at = lease_until;
  e.verdict = kUnrecordedSend;
  e.reason = "run_abandoned";
  e.processed = true;
  return e;
}

}  // namespace payretry
