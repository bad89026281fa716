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

void HistoryFold::add(const AttemptEntry& e) {
  HistoryReading& h = h_;
  // A webhook event is evidence the caller verified, not yet a rule here:
  // like a lookup it acts on nothing (no send, nothing processed), and it
  // neither forbids nor permits a re-send. (What an event settles goes
  // through claim and settle, not through this reading.)
  if (e.kind == "webhook") return;
  if (e.kind == "lookup") {
    // A lookup that proved no payment exists clears every send before it:
    // none of them was processed.
    if (e.verdict == kLookupAbsent) {
      const bool cleared = h.may_have_processed || h.cleared_by_lookup;
      h = HistoryReading{};
      h.cleared_by_lookup = cleared;
      forbidding_ = false;
    }
    return;
  }
  // A final answer the provider gave under this key after an earlier send
  // may have been processed (the engine then reported UNKNOWN): a same-key
  // re-send is answered the same, and settles nothing.
  // (A 401 is about the credential, not the payment: a re-send with a
  // fresh one may settle it.)
  if (h.may_have_processed && e.verdict == "fail" && e.http_status != 0 && e.http_status != 401) {
    h.final_answer = true;
    h.final_why = "attempt " + std::to_string(e.number) + " got the provider's final answer (HTTP " +
                  std::to_string(e.http_status) + (e.reason.empty() ? "" : ", " + e.reason) +
                  ") after an earlier send may have been processed";
  }
  if (!e.processed.value_or(true)) return;
  h.may_have_processed = true;
  h.last_possible_send = std::max(h.last_possible_send, e.ended_at);
  if (!profile_resends_after(e.verdict)) {
    forbidding_ = true;
    h.why = describe(e);
  }
}

HistoryReading HistoryFold::reading() const {
  HistoryReading h = h_;
  h.resend_safe = !forbidding_ || resend_always_safe(profile_.replay);
  if (h.resend_safe) h.why.clear();
  else
    h.why += ", and provider " + profile_.name + " may run a same-key re-send again (replay " +
             replay_kind_name(profile_.replay) + ")";
  return h;
}

HistoryReading read_history(const Profile& profile, const std::vector<AttemptEntry>& history) {
  HistoryFold fold(profile);
  for (const AttemptEntry& e : history) fold.add(e);
  return fold.reading();
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
