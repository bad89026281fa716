#include "unauthorized_rule.hpp"

namespace payretry {

UnauthorizedReading read_unauthorized(const Profile& profile, bool earlier_may_have_processed, bool attempts_left) {
  UnauthorizedReading r;
  r.may_have_processed = !profile.auth.unauthorized_not_processed;
  r.resend_safe = !r.may_have_processed || resend_always_safe(profile.replay);
  if (r.resend_safe && attempts_left) r.then = UnauthorizedReading::Then::resend;
  // No attempt left to try a fresh credential: a final answer only when
  // nothing of this payment may have been processed, by this send or before.
  else if (!attempts_left && !r.may_have_processed && !earlier_may_have_processed) r.then = UnauthorizedReading::Then::failed;
  else r.then = UnauthorizedReading::Then::unknown;
  return r;
}

}  // namespace payretry
