#include "lookup_rules.hpp"

namespace payretry {

NotFoundReading read_not_found(const Profile& profile, const HistoryReading& before, int64_t asked_at,
                               int64_t grace_ms, bool asked_in_scope) {
  NotFoundReading r;
  const bool by_carried_reference =
      profile.lookup.by == LookupBy::order_id &&
      (!profile.lookup.reference_path.empty() || profile.identity.mode == IdentityMode::reference);
  const bool lag_passed = !before.may_have_processed || asked_at - before.last_possible_send >= grace_ms;
  if (!by_carried_reference) r.why = "the lookup does not search by a reference the request carried";
  else if (!asked_in_scope) r.why = "the lookup could not be asked in the scope the payment was made in";
  else if (!lag_passed) r.why = "within the provider's read-lag grace period";
  else {
    r.proves_absence = true;
    r.why = "no payment exists";
  }
  return r;
}

std::optional<PaymentState> lookup_status_settles(const Profile& profile, const std::string& status) {
  const auto m = profile.lookup.status_map.find(status);
  if (m == profile.lookup.status_map.end()) return std::nullopt;
  switch (m->second) {
    case StatusTarget::succeeded: return PaymentState::succeeded;
    case StatusTarget::failed: return PaymentState::failed;
    case StatusTarget::pending: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace payretry
