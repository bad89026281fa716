// What a 401 under a renewable credential means for a payment: the rule
// AttemptRun applies, in one pure function, so that the settlement model
// (tests/model/gen_tables.cpp) prints its tables from this code and a
// change here changes what SPIN checks.
#pragma once

#include "profile.hpp"

namespace payretry {

struct UnauthorizedReading {
  // This send may have been processed: a gateway in front may refuse a token
  // that expired or was revoked on the way after the provider acted, unless
  // the provider documents that a 401 processed nothing.
  bool may_have_processed = true;
  // A same-key re-send cannot run the payment twice: nothing was processed,
  // or the provider answers a known key with what it did.
  bool resend_safe = false;
  enum class Then {
    resend,   // at once, with the fresh credential (the 401 recorded first)
    unknown,  // stop: the payment may stand, settle it by query
    failed,   // stop: the credential was refused and nothing of this payment was processed
  } then = Then::unknown;
};

// `earlier_may_have_processed`: an earlier send of this run may have been
// processed; `attempts_left`: the policy allows another attempt after this one.
UnauthorizedReading read_unauthorized(const Profile& profile, bool earlier_may_have_processed, bool attempts_left);

}  // namespace payretry
