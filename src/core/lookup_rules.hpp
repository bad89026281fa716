// What a lookup's answer settles, as pure functions of the profile, the
// payment's history and the moment the lookup asked: the decisions of
// Settler (settle.cpp) without its I/O, so that tests/model can print them as
// the SPIN model's tables (docs/design.md "Query and reconcile").
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "history.hpp"
#include "ledger.hpp"
#include "profile.hpp"

namespace payretry {

// Whether a lookup's "not found" proves that no payment exists (the entry
// is then kLookupAbsent), decided from what the lookup searched by and
// when it asked (docs/design.md "Query and reconcile"):
//  - the profile looks up by order id, and every request carried that
//    reference (a reference_path submit writes or checks, or the reference
//    identity itself);
//  - the lookup was asked in the scope the payment was made in (its own
//    submission headers carried, its client's account and base URL);
//  - the provider's read lag has passed since the last moment a possibly
//    processed send may have left.
// A pure function of its inputs, so that the SPIN model is generated from it.
struct NotFoundReading {
  bool proves_absence = false;
  const char* why = "";  // in words, for the history entry
};
NotFoundReading read_not_found(const Profile& profile, const HistoryReading& before, int64_t asked_at,
                               int64_t grace_ms, bool asked_in_scope);

// The state a status word read by a found lookup settles the payment in:
// SUCCEEDED or FAILED where the profile's status_map says so; nullopt for a
// PENDING or unlisted status (the payment stays UNKNOWN).
std::optional<PaymentState> lookup_status_settles(const Profile& profile, const std::string& status);

}  // namespace payretry
